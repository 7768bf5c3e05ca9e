package data_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// labels collects the y field (sample ids) of every batch of an epoch.
func labels(t *testing.T, l *data.Loader, epoch int) [][]int64 {
	t.Helper()
	var out [][]int64
	for b := range l.Batches(epoch) {
		require.Len(t, b, 2)
		require.Equal(t, b[0].Size(0), b[1].Size(0))
		ids := b[1].Int64s()
		// x rows must match their labels.
		x := b[0].Float32s()
		for k, id := range ids {
			assert.Equal(t, []float32{float32(10 * id), float32(10*id + 1), float32(10*id + 2)}, x[3*k:3*k+3])
		}
		out = append(out, ids)
	}
	return out
}

func TestLoaderSequential(t *testing.T) {
	tests := []struct {
		name     string
		n, batch int
		dropLast bool
		want     [][]int64
	}{
		{"partial last batch", 7, 3, false, [][]int64{{0, 1, 2}, {3, 4, 5}, {6}}},
		{"drop last", 7, 3, true, [][]int64{{0, 1, 2}, {3, 4, 5}}},
		{"exact", 6, 3, true, [][]int64{{0, 1, 2}, {3, 4, 5}}},
		{"batch larger than data", 2, 5, false, [][]int64{{0, 1}}},
		{"batch larger than data, drop last", 2, 5, true, nil},
		{"default batch size 1", 3, 0, false, [][]int64{{0}, {1}, {2}}},
		{"empty dataset", 0, 4, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ds data.Dataset = toyDataset(tt.n)
			if tt.n == 0 {
				ds = data.NewTensorDataset(tensor.Zeros([]int{0, 3}), tensor.Zeros([]int{0}, tensor.Int64))
			}
			l := data.NewLoader(ds, data.LoaderOptions{BatchSize: tt.batch, DropLast: tt.dropLast})
			got := labels(t, l, 0)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(tt.want), l.Len())
			assert.Equal(t, got, labels(t, l, 5), "no shuffling: every epoch is the same")
		})
	}
}

func TestLoaderShapes(t *testing.T) {
	l := data.NewLoader(toyDataset(5), data.LoaderOptions{BatchSize: 2})
	var shapes [][]int
	for b := range l.Batches(0) {
		shapes = append(shapes, b[0].Shape(), b[1].Shape())
		assert.Equal(t, tensor.Float32, b[0].DType())
		assert.Equal(t, tensor.Int64, b[1].DType())
	}
	assert.Equal(t, [][]int{{2, 3}, {2}, {2, 3}, {2}, {1, 3}, {1}}, shapes)
}

func TestLoaderShuffle(t *testing.T) {
	const n = 50
	opts := data.LoaderOptions{BatchSize: 8, Shuffle: true, Seed: 42}
	l := data.NewLoader(toyDataset(n), opts)
	identity := make([]int, n)
	for i := range identity {
		identity[i] = i
	}

	e0, e1 := l.Order(0), l.Order(1)
	for _, o := range [][]int{e0, e1} {
		assert.NotEqual(t, identity, o, "shuffled")
		assert.ElementsMatch(t, identity, o, "a permutation")
	}
	assert.NotEqual(t, e0, e1, "each epoch has its own order")

	// Reproducible: a second loader with the same seed, in any epoch order.
	l2 := data.NewLoader(toyDataset(n), opts)
	assert.Equal(t, e1, l2.Order(1))
	assert.Equal(t, e0, l2.Order(0))
	assert.NotEqual(t, e0, data.NewLoader(toyDataset(n), data.LoaderOptions{Shuffle: true, Seed: 43}).Order(0))

	// The batches follow the order, with a partial last batch.
	got := labels(t, l, 1)
	require.Len(t, got, 7)
	assert.Len(t, got[6], 2)
	var flat []int
	for _, b := range got {
		for _, id := range b {
			flat = append(flat, int(id))
		}
	}
	assert.Equal(t, e1, flat)

	// The fast path and the Get+Stack path give the same batches.
	lp := data.NewLoader(plain(toyDataset(n)), opts)
	var flatPlain []int
	for b := range lp.Batches(1) {
		for _, id := range b[1].Int64s() {
			flatPlain = append(flatPlain, int(id))
		}
	}
	assert.Equal(t, flat, flatPlain)
}

func TestLoaderGenerator(t *testing.T) {
	mk := func(seed uint64) *data.Loader {
		return data.NewLoader(toyDataset(20), data.LoaderOptions{Shuffle: true, Generator: tensor.NewGenerator(seed)})
	}
	assert.Equal(t, mk(1).Order(0), mk(1).Order(0))
	assert.NotEqual(t, mk(1).Order(0), mk(2).Order(0))
}

func TestLoaderAllAdvancesEpochs(t *testing.T) {
	l := data.NewLoader(toyDataset(10), data.LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 3})
	collect := func() []int {
		var ids []int
		for b := range l.All() {
			for _, id := range b[1].Int64s() {
				ids = append(ids, int(id))
			}
		}
		return ids
	}
	assert.Equal(t, 0, l.Epoch())
	assert.Equal(t, l.Order(0), collect())
	assert.Equal(t, l.Order(1), collect())
	assert.Equal(t, 2, l.Epoch())

	// Breaking out early still uses up the epoch.
	for range l.All() {
		break
	}
	assert.Equal(t, 3, l.Epoch())

	l.SetEpoch(1)
	assert.Equal(t, l.Order(1), collect())

	// Concurrent iterations get distinct epochs.
	l.SetEpoch(0)
	var wg sync.WaitGroup
	orders := make([][]int, 4)
	for g := range orders {
		wg.Go(func() { orders[g] = collect() })
	}
	wg.Wait()
	var got [][]int
	for e := range 4 {
		got = append(got, l.Order(e))
	}
	assert.ElementsMatch(t, got, orders, "each iteration ran its own epoch")
	assert.Equal(t, 4, l.Epoch())
}

func TestLoaderIndexBatches(t *testing.T) {
	l := data.NewLoader(toyDataset(5), data.LoaderOptions{BatchSize: 2})
	var got [][]int
	for idx := range l.IndexBatches(0) {
		got = append(got, idx)
	}
	assert.Equal(t, [][]int{{0, 1}, {2, 3}, {4}}, got)
	assert.Equal(t, 2, l.BatchSize())
	assert.Panics(t, func() { data.NewLoader(toyDataset(1), data.LoaderOptions{BatchSize: -1}) })
}
