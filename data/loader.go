package data

import (
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/emberml/ember/tensor"
)

// LoaderOptions configures a Loader. The zero value loads one sample per
// batch in order, in the iterating goroutine.
type LoaderOptions struct {
	// BatchSize is the number of samples per batch (0 means 1).
	BatchSize int
	// Shuffle visits the samples in a new random order every epoch. The
	// order of epoch e depends only on the seed and e, so runs reproduce.
	Shuffle bool
	// Seed seeds the shuffling and the generators handed to the samples of
	// a SampleSource (augmentation) when Generator is nil.
	Seed uint64
	// Generator, if set, supplies the seed instead of Seed: one value is
	// drawn from it when the loader is made.
	Generator *tensor.Generator
	// DropLast drops the last batch of an epoch when it is smaller than
	// BatchSize; otherwise that partial batch is yielded.
	DropLast bool
	// Workers is the number of goroutines that load batches ahead of the
	// loop consuming them. With 0, each batch is loaded in the iterating
	// goroutine when it is asked for. The batches are the same whatever
	// the number of workers.
	Workers int
	// Prefetch is how many batches may be loaded or in loading ahead of
	// the consumer when Workers > 0: 0 means 2 per worker, and fewer than
	// Workers counts as Workers.
	Prefetch int
}

// SampleSource is a Dataset whose samples may fail to load (files) or draw
// random numbers (augmentation). A Loader reads such a dataset through
// Sample, handing sample i of epoch e a generator seeded from the loader's
// seed, e and i only, so batches are the same whatever the number of
// workers and whatever order the samples are loaded in; a failure stops
// the iteration and is reported by the loader's Err.
type SampleSource interface {
	Dataset
	// Sample returns the fields of sample i, drawing any random numbers
	// from gen. It returns an error, not a panic, for a sample that cannot
	// be loaded; an index out of range may still panic.
	Sample(i int, gen *tensor.Generator) ([]*tensor.Tensor, error)
}

// Loader batches a dataset: it visits the samples in order, or in a seeded
// random order per epoch, and stacks each field of BatchSize samples into
// one tensor with a new first axis. Datasets that implement Batcher (such as
// TensorDataset and Subset) are gathered without per-sample tensors;
// datasets that implement SampleSource (such as Transformed and
// ImageFolder) are read sample by sample with a generator per sample.
// With Workers, batches are loaded by goroutines ahead of the consumer and
// yielded in order.
//
// The loader keeps its place: All runs one epoch after another, and
// StateDict records the epoch and the number of its batches already
// yielded, so that a run resumed with LoadStateDict continues with the
// batches the interrupted run would have seen next.
//
// A Loader may be shared between goroutines; each iteration yields batches
// that the caller owns. Its position (StateDict, Epoch) follows the most
// recent iteration of All.
type Loader struct {
	ds        Dataset
	batchSize int
	shuffle   bool
	dropLast  bool
	workers   int
	prefetch  int

	mu       sync.Mutex
	seed     uint64
	epoch    int  // epoch of the current or last iteration of All, or the next one when pending
	position int  // batches of epoch already yielded by All
	pending  bool // the next All continues epoch at position (else it starts epoch+1)
	err      error
}

// NewLoader returns a loader over ds. It panics if opts.BatchSize,
// opts.Workers or opts.Prefetch is negative.
func NewLoader(ds Dataset, opts LoaderOptions) *Loader {
	if opts.BatchSize < 0 {
		panic(fmt.Sprintf("data.NewLoader: negative batch size %d", opts.BatchSize))
	}
	if opts.Workers < 0 || opts.Prefetch < 0 {
		panic(fmt.Sprintf("data.NewLoader: negative workers %d or prefetch %d", opts.Workers, opts.Prefetch))
	}
	l := &Loader{ds: ds, batchSize: max(opts.BatchSize, 1), shuffle: opts.Shuffle, dropLast: opts.DropLast,
		seed: opts.Seed, workers: opts.Workers, prefetch: opts.Prefetch, pending: true}
	if l.prefetch == 0 {
		l.prefetch = 2 * l.workers
	}
	l.prefetch = max(l.prefetch, l.workers)
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

func (l *Loader) currentSeed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seed
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
	perm := tensor.NewGenerator(epochSeed(l.currentSeed(), epoch)).Perm(n)
	for i, p := range perm {
		order[i] = int(p)
	}
	return order
}

// splitMix64 is SplitMix64's output function: it maps neighbouring inputs
// to unrelated outputs.
func splitMix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// epochSeed mixes the loader seed with the epoch number, so neighbouring
// epochs and seeds get unrelated permutations.
func epochSeed(seed uint64, epoch int) uint64 {
	return splitMix64(seed + uint64(epoch+1)*0x9e3779b97f4a7c15)
}

// SampleSeed returns the seed of the generator that a loader with seed
// hands sample index of epoch: it depends on these three numbers only.
// Use it to reproduce one sample's augmentation outside a loader.
func SampleSeed(seed uint64, epoch, index int) uint64 {
	s := splitMix64(epochSeed(seed, epoch) ^ 0x5851f42d4c957f2d)
	return splitMix64(s + uint64(index+1)*0x9e3779b97f4a7c15)
}

// IndexBatches yields the dataset indices of each batch of epoch, in order;
// with DropLast the short final batch is left out.
func (l *Loader) IndexBatches(epoch int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		for _, idx := range l.indexBatches(epoch) {
			if !yield(idx) {
				return
			}
		}
	}
}

func (l *Loader) indexBatches(epoch int) [][]int {
	order := l.Order(epoch)
	var out [][]int
	for at := 0; at < len(order); at += l.batchSize {
		end := min(at+l.batchSize, len(order))
		if end-at < l.batchSize && l.dropLast {
			break
		}
		out = append(out, order[at:end:end])
	}
	return out
}

// Batches yields the batches of epoch: for each batch, one tensor per field
// of the dataset's samples, stacked along a new first axis of the batch's
// size. Iterating the same epoch again yields the same batches. Batches
// does not move the loader's position (see All). If a sample fails to
// load, the iteration stops and Err returns the error.
func (l *Loader) Batches(epoch int) iter.Seq[[]*tensor.Tensor] {
	return func(yield func([]*tensor.Tensor) bool) {
		l.setErr(l.run(epoch, l.indexBatches(epoch), yield, nil))
	}
}

// All yields the batches of the next epoch and moves the loader's
// position: the first iteration of any sequence returned by All runs epoch
// 0, the next epoch 1, and so on, so that a training loop reshuffles every
// time it ranges over All, like iterating a PyTorch DataLoader. After
// LoadStateDict (or SetEpoch), the next iteration runs the recorded epoch
// from the recorded position. If a sample fails to load, the iteration
// stops and Err returns the error.
//
//	for epoch := range 10 {
//		for batch := range loader.All() {
//			x, y := batch[0], batch[1]
//			...
//		}
//		if err := loader.Err(); err != nil {
//			return err
//		}
//	}
func (l *Loader) All() iter.Seq[[]*tensor.Tensor] {
	return func(yield func([]*tensor.Tensor) bool) {
		l.mu.Lock()
		if !l.pending {
			l.epoch++
			l.position = 0
		}
		l.pending = false
		epoch, start := l.epoch, l.position
		l.mu.Unlock()
		batches := l.indexBatches(epoch)
		start = min(start, len(batches))
		advance := func(k int) {
			l.mu.Lock()
			if l.epoch == epoch && !l.pending {
				l.position = start + k + 1
			}
			l.mu.Unlock()
		}
		err := l.run(epoch, batches[start:], yield, advance)
		l.setErr(err)
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.epoch == epoch && !l.pending && l.position >= len(batches) {
			l.epoch, l.position, l.pending = epoch+1, 0, true
		}
		l.mu.Unlock()
	}
}

// Err returns the error that stopped the most recent iteration of Batches
// or All, or nil if it ran to the end or was stopped by its consumer.
func (l *Loader) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Loader) setErr(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

// Epoch returns the number of epochs that All has started (counting a
// resumed epoch as not yet started until All runs it).
func (l *Loader) Epoch() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending {
		return l.epoch
	}
	return l.epoch + 1
}

// SetEpoch sets the epoch that the next iteration of All runs, from its
// first batch.
func (l *Loader) SetEpoch(epoch int) {
	l.mu.Lock()
	l.epoch, l.position, l.pending = epoch, 0, true
	l.mu.Unlock()
}

// state returns the epoch and position the next iteration of All would
// continue from if the current one was abandoned now.
func (l *Loader) state() (epoch, position int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending && l.position >= l.Len() {
		return l.epoch + 1, 0
	}
	return l.epoch, l.position
}

// StateDict returns the loader's position for a checkpoint, in the
// optimizers' convention: "epoch" (the epoch in progress, or the next one
// between epochs) and "position" (how many of its batches All has already
// yielded), and, to check and restore the run, "seed", "samples" and
// "batch_size", all Int64 scalars (the seed's 64 bits as an int64).
func (l *Loader) StateDict() map[string]*tensor.Tensor {
	epoch, position := l.state()
	scalar := func(v int64) *tensor.Tensor { return tensor.FromSlice([]int64{v}, []int{}...) }
	return map[string]*tensor.Tensor{
		"epoch":      scalar(int64(epoch)),
		"position":   scalar(int64(position)),
		"seed":       scalar(int64(l.currentSeed())),
		"samples":    scalar(int64(l.ds.Len())),
		"batch_size": scalar(int64(l.batchSize)),
	}
}

// LoadStateDict restores a position saved by StateDict: the next iteration
// of All continues the saved epoch after its saved position, with the saved
// seed. It returns an error, changing nothing, if a key is missing or not a
// one-element integer tensor, or if the dataset's size or the batch size
// differ from the saved loader's (the batches would not be the same).
func (l *Loader) LoadStateDict(sd map[string]*tensor.Tensor) error {
	get := func(key string) (int64, error) {
		t, ok := sd[key]
		if !ok || t == nil {
			return 0, fmt.Errorf("data.Loader.LoadStateDict: missing %q", key)
		}
		if t.Numel() != 1 || t.DType() != tensor.Int64 {
			return 0, fmt.Errorf("data.Loader.LoadStateDict: %q is a %v tensor of shape %v, want one Int64", key, t.DType(), t.Shape())
		}
		return t.Int64s()[0], nil
	}
	var v [5]int64
	for i, key := range []string{"epoch", "position", "seed", "samples", "batch_size"} {
		var err error
		if v[i], err = get(key); err != nil {
			return err
		}
	}
	epoch, position, seed, samples, batchSize := v[0], v[1], v[2], v[3], v[4]
	if samples != int64(l.ds.Len()) || batchSize != int64(l.batchSize) {
		return fmt.Errorf("data.Loader.LoadStateDict: saved for %d samples in batches of %d, this loader has %d in batches of %d",
			samples, batchSize, l.ds.Len(), l.batchSize)
	}
	if epoch < 0 || position < 0 || position > int64(l.Len()) {
		return fmt.Errorf("data.Loader.LoadStateDict: epoch %d, position %d: want epoch >= 0 and position in [0, %d]", epoch, position, l.Len())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seed = uint64(seed)
	l.epoch, l.position, l.pending = int(epoch), int(position), true
	if l.position == l.Len() {
		l.epoch, l.position = l.epoch+1, 0
	}
	return nil
}

// load returns the batch of samples idx of epoch.
func (l *Loader) load(epoch int, idx []int) ([]*tensor.Tensor, error) {
	src, ok := l.ds.(SampleSource)
	if !ok {
		return Gather(l.ds, idx), nil
	}
	seed := l.currentSeed()
	var fields [][]*tensor.Tensor
	for k, i := range idx {
		s, err := src.Sample(i, tensor.NewGenerator(SampleSeed(seed, epoch, i)))
		if err != nil {
			return nil, err
		}
		if k == 0 {
			fields = make([][]*tensor.Tensor, len(s))
		} else if len(s) != len(fields) {
			return nil, fmt.Errorf("data.Loader: sample %d has %d fields, sample %d has %d; every sample needs the same fields", i, len(s), idx[0], len(fields))
		}
		for f, t := range s {
			if k > 0 && (t.DType() != fields[f][0].DType() || !slices.Equal(t.Shape(), fields[f][0].Shape())) {
				return nil, fmt.Errorf("data.Loader: field %d of sample %d is %v %v, of sample %d %v %v; samples of a batch need the same shapes (resize or crop images to one size)",
					f, i, t.DType(), t.Shape(), idx[0], fields[f][0].DType(), fields[f][0].Shape())
			}
			fields[f] = append(fields[f], t)
		}
	}
	out := make([]*tensor.Tensor, len(fields))
	for f, ts := range fields {
		out[f] = tensor.Stack(ts, 0)
	}
	return out, nil
}

// loaded is one batch from a worker: its tensors, or the error or panic
// that loading it raised.
type loaded struct {
	batch  []*tensor.Tensor
	err    error
	panicV any
}

// run loads the batches of epoch and yields them in order, calling
// advance(k) (if not nil) before yielding the k-th. It returns the first
// loading error. A panic while loading is raised again in the caller's
// goroutine, whatever the number of workers.
func (l *Loader) run(epoch int, batches [][]int, yield func([]*tensor.Tensor) bool, advance func(int)) error {
	emit := func(k int, b []*tensor.Tensor) bool {
		if advance != nil {
			advance(k)
		}
		return yield(b)
	}
	if l.workers == 0 {
		for k, idx := range batches {
			b, err := l.load(epoch, idx)
			if err != nil {
				return err
			}
			if !emit(k, b) {
				return nil
			}
		}
		return nil
	}
	results := make([]chan loaded, len(batches))
	for k := range results {
		results[k] = make(chan loaded, 1)
	}
	jobs := make(chan int)
	done := make(chan struct{})
	slots := make(chan struct{}, l.prefetch)
	var wg sync.WaitGroup
	defer func() {
		close(done)
		wg.Wait()
	}()
	wg.Go(func() { // feeder: hands out batch numbers, at most prefetch ahead
		defer close(jobs)
		for k := range batches {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			select {
			case jobs <- k:
			case <-done:
				return
			}
		}
	})
	for range l.workers {
		wg.Go(func() {
			for k := range jobs {
				results[k] <- l.loadRecovering(epoch, batches[k])
			}
		})
	}
	for k := range batches {
		r := <-results[k]
		<-slots
		if r.panicV != nil {
			panic(r.panicV)
		}
		if r.err != nil {
			return r.err
		}
		if !emit(k, r.batch) {
			return nil
		}
	}
	return nil
}

// loadRecovering loads a batch in a worker, catching a panic so that the
// consumer can raise it again.
func (l *Loader) loadRecovering(epoch int, idx []int) (r loaded) {
	defer func() {
		if p := recover(); p != nil {
			r = loaded{panicV: p}
		}
	}()
	b, err := l.load(epoch, idx)
	return loaded{batch: b, err: err}
}
