package data_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// augmented is 37 random 1×4×4 images with labels 0..36, cropped and
// flipped at random.
func augmented() data.Dataset {
	x := tensor.NewGenerator(3).Rand([]int{37, 1, 4, 4})
	y := make([]int64, 37)
	for i := range y {
		y[i] = int64(i)
	}
	base := data.NewTensorDataset(x, tensor.FromSlice(y))
	return data.NewTransformed(base, 0, data.Compose{
		data.RandomCrop{Height: 4, Width: 4, Padding: 1},
		data.RandomHorizontalFlip{P: 0.5},
	})
}

// collect returns the flattened fields of every batch an iteration yields.
func collect(t *testing.T, seq func(func([]*tensor.Tensor) bool)) [][2][]float32 {
	t.Helper()
	var out [][2][]float32
	for b := range seq {
		out = append(out, [2][]float32{b[0].Float32s(), b[1].Float32s()})
	}
	return out
}

func TestLoaderWorkersGiveIdenticalBatches(t *testing.T) {
	ds := augmented()
	var runs [][][2][]float32
	for _, workers := range []int{0, 1, 4} {
		l := data.NewLoader(ds, data.LoaderOptions{BatchSize: 5, Shuffle: true, Seed: 8, Workers: workers, Prefetch: 3})
		var epochs [][2][]float32
		for range 2 {
			epochs = append(epochs, collect(t, l.All())...)
			require.NoError(t, l.Err())
		}
		runs = append(runs, epochs)
	}
	require.Len(t, runs[0], 16, "2 epochs of 8 batches")
	assert.Equal(t, runs[0], runs[1], "1 worker")
	assert.Equal(t, runs[0], runs[2], "4 workers")
	assert.NotEqual(t, runs[0][:8], runs[0][8:], "epochs differ")

	// A sample's augmentation depends on seed, epoch and index only: sample
	// i of epoch 1 is the dataset's Sample with the generator SampleSeed
	// names, wherever the shuffle puts it.
	l := data.NewLoader(ds, data.LoaderOptions{BatchSize: 5, Shuffle: true, Seed: 8})
	first := l.Order(1)[0]
	s, err := ds.(data.SampleSource).Sample(first, tensor.NewGenerator(data.SampleSeed(8, 1, first)))
	require.NoError(t, err)
	assert.Equal(t, s[0].Float32s(), runs[0][8][0][:16])
	assert.Equal(t, float32(first), runs[0][8][1][0])
}

func TestLoaderResumeMidEpoch(t *testing.T) {
	ds := augmented()
	opts := data.LoaderOptions{BatchSize: 5, Shuffle: true, Seed: 21, Workers: 2}
	whole := data.NewLoader(ds, opts)
	var want [][2][]float32
	for range 3 {
		want = append(want, collect(t, whole.All())...)
	}

	// Stop after 11 batches (epoch 1, batch 3), save, resume in a new loader
	// made with another seed (the state's seed wins).
	first := data.NewLoader(ds, opts)
	var got [][2][]float32
	var sd map[string]*tensor.Tensor
	for len(got) < 11 {
		for b := range first.All() {
			got = append(got, [2][]float32{b[0].Float32s(), b[1].Float32s()})
			if len(got) == 11 {
				sd = first.StateDict()
				break
			}
		}
	}
	assert.Equal(t, int64(1), sd["epoch"].Int64s()[0])
	assert.Equal(t, int64(3), sd["position"].Int64s()[0])

	opts.Seed = 999
	resumed := data.NewLoader(ds, opts)
	require.NoError(t, resumed.LoadStateDict(sd))
	assert.Equal(t, 1, resumed.Epoch(), "the resumed epoch has not started yet")
	for resumed.Epoch() < 3 {
		got = append(got, collect(t, resumed.All())...)
	}
	assert.Equal(t, want, got, "the resumed run sees the batches the whole run saw")

	// A state saved between epochs names the next epoch from its start.
	between := resumed.StateDict()
	assert.Equal(t, []int64{3, 0}, []int64{between["epoch"].Int64s()[0], between["position"].Int64s()[0]})
}

func TestLoaderBreakStartsNextEpoch(t *testing.T) {
	l := data.NewLoader(toyDataset(10), data.LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 1})
	for range l.All() {
		break
	}
	sd := l.StateDict()
	assert.Equal(t, []int64{0, 1}, []int64{sd["epoch"].Int64s()[0], sd["position"].Int64s()[0]})
	var ids []int64
	for b := range l.All() {
		ids = append(ids, b[1].Int64s()...)
	}
	var want []int64
	for idx := range l.IndexBatches(1) {
		for _, i := range idx {
			want = append(want, int64(i))
		}
	}
	assert.Equal(t, want, ids, "ranging over All again starts the next epoch, as a PyTorch DataLoader does")
}

func TestLoaderLoadStateDictErrors(t *testing.T) {
	l := data.NewLoader(toyDataset(10), data.LoaderOptions{BatchSize: 2})
	good := l.StateDict()
	with := func(key string, v *tensor.Tensor) map[string]*tensor.Tensor {
		sd := map[string]*tensor.Tensor{}
		for k, t := range good {
			sd[k] = t
		}
		if v == nil {
			delete(sd, key)
		} else {
			sd[key] = v
		}
		return sd
	}
	scalar := func(v int64) *tensor.Tensor { return tensor.FromSlice([]int64{v}, []int{}...) }
	for name, tc := range map[string]struct {
		sd   map[string]*tensor.Tensor
		want string
	}{
		"missing epoch":         {with("epoch", nil), `missing "epoch"`},
		"float position":        {with("position", tensor.Scalar(1)), `"position" is a float32`},
		"position past the end": {with("position", scalar(6)), "position 6"},
		"other batch size":      {with("batch_size", scalar(3)), "batches of 3"},
		"other dataset":         {with("samples", scalar(11)), "saved for 11 samples"},
	} {
		err := l.LoadStateDict(tc.sd)
		assert.ErrorContains(t, err, tc.want, name)
	}
	require.NoError(t, l.LoadStateDict(good))
}

// failing is a SampleSource whose sample bad cannot be loaded.
type failing struct{ n, bad int }

func (f failing) Len() int                   { return f.n }
func (f failing) Get(i int) []*tensor.Tensor { s, _ := f.Sample(i, nil); return s }
func (f failing) Sample(i int, _ *tensor.Generator) ([]*tensor.Tensor, error) {
	if i == f.bad {
		return nil, fmt.Errorf("sample %d: %w", i, errBadSample)
	}
	return []*tensor.Tensor{tensor.Scalar(float64(i))}, nil
}

var errBadSample = errors.New("bad file")

func TestLoaderReportsSampleErrors(t *testing.T) {
	for _, workers := range []int{0, 3} {
		l := data.NewLoader(failing{n: 20, bad: 13}, data.LoaderOptions{BatchSize: 4, Workers: workers})
		n := 0
		for range l.All() {
			n++
		}
		assert.Equal(t, 3, n, "workers %d: the batches before the bad one", workers)
		assert.ErrorIs(t, l.Err(), errBadSample)
		sd := l.StateDict()
		assert.Equal(t, int64(3), sd["position"].Int64s()[0])

		ok := data.NewLoader(failing{n: 20, bad: -1}, data.LoaderOptions{BatchSize: 4, Workers: workers})
		for range ok.All() {
		}
		assert.NoError(t, ok.Err())
	}
}

func TestLoaderWorkerPanicReachesConsumer(t *testing.T) {
	ds := funcDataset{n: 9, get: func(i int) []*tensor.Tensor {
		if i == 5 {
			panic("sample five is broken")
		}
		return []*tensor.Tensor{tensor.Scalar(float64(i))}
	}}
	l := data.NewLoader(ds, data.LoaderOptions{BatchSize: 2, Workers: 2})
	assert.PanicsWithValue(t, "sample five is broken", func() {
		for range l.All() {
		}
	})
}

// growing is a SampleSource whose sample i is a vector of i+1 zeros.
type growing struct{}

func (growing) Len() int                     { return 4 }
func (g growing) Get(i int) []*tensor.Tensor { s, _ := g.Sample(i, nil); return s }
func (growing) Sample(i int, _ *tensor.Generator) ([]*tensor.Tensor, error) {
	return []*tensor.Tensor{tensor.Zeros([]int{i + 1})}, nil
}

func TestLoaderMismatchedShapesAreAnError(t *testing.T) {
	l := data.NewLoader(growing{}, data.LoaderOptions{BatchSize: 4})
	for range l.All() {
		t.Fatal("no batch can be stacked")
	}
	assert.ErrorContains(t, l.Err(), "need the same shapes")
}

// BenchmarkLoaderAugmented loads one epoch of 6,000 Fashion-MNIST-sized
// images with crop, flip and normalization, with 0, 2 and 4 workers.
func BenchmarkLoaderAugmented(b *testing.B) {
	x := tensor.NewGenerator(1).Rand([]int{6000, 1, 28, 28})
	y := tensor.Zeros([]int{6000}, tensor.Int64)
	ds := data.NewTransformed(data.NewTensorDataset(x, y), 0, data.Compose{
		data.RandomCrop{Padding: 2},
		data.RandomHorizontalFlip{P: 0.5},
		data.Normalize{Mean: []float32{0.286}, Std: []float32{0.353}},
	})
	for _, workers := range []int{0, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			l := data.NewLoader(ds, data.LoaderOptions{BatchSize: 128, Shuffle: true, Workers: workers})
			for b.Loop() {
				for range l.All() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N*6000)*1e6, "µs/sample")
		})
	}
}

func TestLoaderBreakStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	l := data.NewLoader(augmented(), data.LoaderOptions{BatchSize: 2, Workers: 4, Prefetch: 8})
	n := 0
	for range l.All() {
		if n++; n == 2 {
			break
		}
	}
	require.NoError(t, l.Err())
	assert.Equal(t, before, runtime.NumGoroutine(), "the workers have finished when the loop is left")
}
