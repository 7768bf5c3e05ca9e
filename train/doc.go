// Package train holds the pieces of a custom training loop that every loop
// needs and nobody wants to write twice: checkpoints, progress output,
// early stopping and metrics logs.
//
// The loop itself stays the user's: package train never owns the model,
// the optimizer or the data, it only saves, reports on and decides about
// them. A checkpoint is one call:
//
//	ckpt := &train.Checkpoint{
//		Model:      model,
//		Optimizers: map[string]train.Stateful{"adamw": opt},
//		Schedulers: map[string]train.Stateful{"lr": sched},
//		Loaders:    map[string]train.Stateful{"train": loader},
//		Generators: map[string]*tensor.Generator{"augment": augment},
//		Step:       step,
//		Epoch:      epoch,
//		Metadata:   &runInfo, // any JSON-marshalable Go value
//	}
//	err := train.SaveCheckpoint("run/last.safetensors", ckpt)
//
// and resuming is the same value, built by the same code, passed to
// LoadCheckpoint. ExampleSaveCheckpoint, ExampleProgress,
// ExampleEarlyStopping and ExampleMetricsLog are runnable examples.
package train
