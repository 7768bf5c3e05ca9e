// Package data feeds training loops: wrap your data as a Dataset
// (NewTensorDataset, OpenImageFolder, LoadMNIST, ReadCSVFile), split it
// (RandomSplit), augment it (Compose, NewTransformed) and iterate over
// batches with a Loader (NewLoader, then Batches or All). ExampleLoader,
// ExampleTransformed, ExampleOpenImageFolder and ExampleLoader_StateDict
// are runnable examples; ExampleDistributedSampler shards a dataset across
// the ranks of a distributed job.
//
// It provides datasets, samplers, a batching loader and readers for real
// data formats (idx, CSV; .npy files are read by package tensor).
//
// A data pipeline for training is built from three pieces: a dataset (a
// TensorDataset over tensors in memory, an ImageFolder of PNG and JPEG
// files, or one of the readers), seeded transforms for augmentation
// (RandomCrop, RandomHorizontalFlip, RandomResizedCrop, ColorJitter,
// Normalize, combined with Compose and applied with NewTransformed), and a
// Loader that batches it, with worker goroutines loading batches ahead if
// asked. A Loader hands every sample a generator seeded from the loader's
// seed, the epoch and the sample's index, so the batches of a seed are the
// same whatever the number of workers, and its StateDict keeps its place so
// that a resumed run sees the batches the interrupted one would have.
package data
