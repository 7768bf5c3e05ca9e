package data

import (
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/emberml/ember/tensor"
)

// LoaderOptions configures a Loader. The zero value loads one sample per
// batch in order.
type LoaderOptions struct {
	// BatchSize is the number of samples per batch (0 means 1).
	BatchSize int
	// Shuffle visits the samples in a new random order every epoch. The
	// order of epoch e depends only on the seed and e, so runs reproduce.
	Shuffle bool
	// Seed seeds the shuffling when Generator is nil.
	Seed uint64
	// Generator, if set, supplies the shuffling seed instead of Seed: one
	// value is drawn from it when the loader is made.
	Generator *tensor.Generator
	// DropLast drops the last batch of an epoch when it is smaller than
	// BatchSize; otherwise that partial batch is yielded.
	DropLast bool
}

// Loader batches a dataset: it visits the samples in order, or in a seeded
// random order per epoch, and stacks each field of BatchSize samples into
// one tensor with a new first axis. Datasets that implement Batcher (such as
// TensorDataset and Subset) are gathered without per-sample tensors.
//
// A Loader may be shared between goroutines; each iteration yields batches
// that the caller owns.
type Loader struct {
	ds        Dataset
	batchSize int
	shuffle   bool
	dropLast  bool
	seed      uint64
	epoch     atomic.Int64
}

// NewLoader returns a loader over ds. It panics if opts.BatchSize is
// negative.
func NewLoader(ds Dataset, opts LoaderOptions) *Loader {
	if opts.BatchSize < 0 {
		panic(fmt.Sprintf("data.NewLoader: negative batch size %d", opts.BatchSize))
	}
	l := &Loader{ds: ds, batchSize: max(opts.BatchSize, 1), shuffle: opts.Shuffle, dropLast: opts.DropLast, seed: opts.Seed}
	if opts.Generator != nil {
		l.seed = opts.Generator.Uint64()
	}
	return l
}

// Dataset returns the dataset the loader reads.
func (l *Loader) Dataset() Dataset { return l.ds }

// BatchSize returns the number of samples per full batch.
func (l *Loader) BatchSize() int { return l.batchSize }

// Len returns the number of batches per epoch.
func (l *Loader) Len() int {
	n := l.ds.Len()
	if l.dropLast {
		return n / l.batchSize
	}
	return (n + l.batchSize - 1) / l.batchSize
}

// Order returns the sequence in which epoch visits the dataset's indices:
// 0, 1, 2, ... without shuffling, else a permutation that depends only on
// the loader's seed and epoch.
func (l *Loader) Order(epoch int) []int {
	n := l.ds.Len()
	order := make([]int, n)
	if !l.shuffle {
		for i := range order {
			order[i] = i
		}
		return order
	}
	perm := tensor.NewGenerator(epochSeed(l.seed, epoch)).Perm(n)
	for i, p := range perm {
		order[i] = int(p)
	}
	return order
}

// epochSeed mixes the loader seed with the epoch number (SplitMix64), so
// neighbouring epochs and seeds get unrelated permutations.
func epochSeed(seed uint64, epoch int) uint64 {
	z := seed + uint64(epoch+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// IndexBatches yields the dataset indices of each batch of epoch, in order;
// with DropLast the short final batch is left out.
func (l *Loader) IndexBatches(epoch int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		order := l.Order(epoch)
		for at := 0; at < len(order); at += l.batchSize {
			end := min(at+l.batchSize, len(order))
			if end-at < l.batchSize && l.dropLast {
				return
			}
			if !yield(order[at:end:end]) {
				return
			}
		}
	}
}

// Batches yields the batches of epoch: for each batch, one tensor per field
// of the dataset's samples, stacked along a new first axis of the batch's
// size. Iterating the same epoch again yields the same batches.
func (l *Loader) Batches(epoch int) iter.Seq[[]*tensor.Tensor] {
	return func(yield func([]*tensor.Tensor) bool) {
		for idx := range l.IndexBatches(epoch) {
			if !yield(Gather(l.ds, idx)) {
				return
			}
		}
	}
}

// All yields the batches of the next epoch: the first iteration of any
// sequence returned by All runs epoch 0, the next epoch 1, and so on, so
// that a training loop reshuffles every time it ranges over All, like
// iterating a PyTorch DataLoader.
//
//	for epoch := range 10 {
//		for batch := range loader.All() {
//			x, y := batch[0], batch[1]
//			...
//		}
//	}
func (l *Loader) All() iter.Seq[[]*tensor.Tensor] {
	return func(yield func([]*tensor.Tensor) bool) {
		epoch := int(l.epoch.Add(1) - 1)
		for b := range l.Batches(epoch) {
			if !yield(b) {
				return
			}
		}
	}
}

// Epoch returns the number of epochs that All has started.
func (l *Loader) Epoch() int { return int(l.epoch.Load()) }

// SetEpoch sets the epoch that the next iteration of All runs, for example
// to resume training from a checkpoint.
func (l *Loader) SetEpoch(epoch int) { l.epoch.Store(int64(epoch)) }
