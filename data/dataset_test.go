package data_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// toyDataset returns n samples: x row i is [10i, 10i+1, 10i+2] (Float32) and
// y is i (Int64).
func toyDataset(n int) *data.TensorDataset {
	x := make([]float32, 3*n)
	y := make([]int64, n)
	for i := range n {
		for j := range 3 {
			x[3*i+j] = float32(10*i + j)
		}
		y[i] = int64(i)
	}
	return data.NewTensorDataset(tensor.FromSlice(x, n, 3), tensor.FromSlice(y, n))
}

// funcDataset is a Dataset without GetBatch, to exercise the Get+Stack path.
type funcDataset struct {
	n   int
	get func(i int) []*tensor.Tensor
}

func (d funcDataset) Len() int                   { return d.n }
func (d funcDataset) Get(i int) []*tensor.Tensor { return d.get(i) }

// plain hides the Batcher method of a dataset.
func plain(ds data.Dataset) data.Dataset { return funcDataset{n: ds.Len(), get: ds.Get} }

func TestTensorDataset(t *testing.T) {
	ds := toyDataset(5)
	require.Equal(t, 5, ds.Len())
	s := ds.Get(3)
	require.Len(t, s, 2)
	assert.Equal(t, []int{3}, s[0].Shape())
	assert.Equal(t, []float32{30, 31, 32}, s[0].Float32s())
	assert.Equal(t, 0, s[1].Dim())
	assert.Equal(t, 3.0, s[1].Item())
	assert.True(t, s[0].SharesStorage(ds.Tensors()[0]), "Get returns views")

	b := ds.GetBatch([]int{4, 0, 4})
	assert.Equal(t, []int{3, 3}, b[0].Shape())
	assert.Equal(t, []float32{40, 41, 42, 0, 1, 2, 40, 41, 42}, b[0].Float32s())
	assert.Equal(t, []int64{4, 0, 4}, b[1].Int64s())
	assert.False(t, b[0].SharesStorage(ds.Tensors()[0]), "GetBatch copies")

	// A non-contiguous tensor works too.
	tt := tensor.Arange(0, 6, 1).Reshape(2, 3).T() // [3, 2]
	d2 := data.NewTensorDataset(tt)
	assert.Equal(t, []int64{2, 5, 0, 3}, d2.GetBatch([]int{2, 0})[0].Int64s())
}

func TestTensorDatasetPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"no tensors", func() { data.NewTensorDataset() }, "data.NewTensorDataset: no tensors"},
		{"first dims differ", func() { data.NewTensorDataset(tensor.Zeros([]int{3, 2}), tensor.Zeros([]int{4})) },
			"data.NewTensorDataset: tensor 1 has shape [4], tensor 0 has [3 2]: first dimensions (sample counts) differ"},
		{"scalar", func() { data.NewTensorDataset(tensor.Scalar(1)) },
			"data.NewTensorDataset: tensor 0 is 0-d; every tensor needs a first (sample) axis"},
		{"get out of range", func() { toyDataset(2).Get(2) },
			"data.TensorDataset.Get: index 2 out of range for a dataset of 2 samples"},
		{"batch out of range", func() { toyDataset(2).GetBatch([]int{0, -1}) },
			"data.TensorDataset.GetBatch: index -1 out of range for a dataset of 2 samples"},
		{"gather nothing", func() { data.Gather(toyDataset(2), nil) }, "data.Gather: no indices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.msg, tt.f) })
	}
}

func TestGatherFallbackMatchesFastPath(t *testing.T) {
	ds := toyDataset(6)
	idx := []int{5, 1, 3}
	fast := data.Gather(ds, idx)
	slow := data.Gather(plain(ds), idx)
	require.Len(t, slow, 2)
	for f := range fast {
		assert.Equal(t, fast[f].Shape(), slow[f].Shape())
		assert.Equal(t, fast[f].DType(), slow[f].DType())
		assert.Equal(t, fast[f].Float64s(), slow[f].Float64s())
	}

	ragged := funcDataset{n: 2, get: func(i int) []*tensor.Tensor {
		return make([]*tensor.Tensor, i+1)
	}}
	assert.Panics(t, func() { data.Gather(ragged, []int{0, 1}) })
}

func TestSubset(t *testing.T) {
	ds := toyDataset(6)
	s := data.NewSubset(ds, []int{4, 2, 0})
	assert.Equal(t, 3, s.Len())
	assert.Equal(t, []int{4, 2, 0}, s.Indices())
	assert.Same(t, ds, s.Parent().(*data.TensorDataset))
	assert.Equal(t, 2.0, s.Get(1)[1].Item())
	b := s.GetBatch([]int{2, 0})
	assert.Equal(t, []int64{0, 4}, b[1].Int64s())
	assert.Equal(t, []float32{0, 1, 2, 40, 41, 42}, b[0].Float32s())
	// Subsets of plain datasets gather with Get and Stack.
	assert.Equal(t, []int64{0, 4}, data.NewSubset(plain(ds), []int{4, 2, 0}).GetBatch([]int{2, 0})[1].Int64s())

	assert.Panics(t, func() { data.NewSubset(ds, []int{6}) })
	assert.Panics(t, func() { s.Get(3) })
}

func TestSplitSizes(t *testing.T) {
	// Expected sizes are torch.utils.data.random_split's (PyTorch 1.13).
	tests := []struct {
		n         int
		fractions []float64
		want      []int
	}{
		{10, []float64{0.3, 0.3, 0.4}, []int{3, 3, 4}},
		{11, []float64{0.5, 0.5}, []int{6, 5}},
		{7, []float64{0.1, 0.2, 0.7}, []int{1, 2, 4}},
		{100, []float64{0.29, 0.71}, []int{29, 71}},
		{5, []float64{0.25, 0.25, 0.25, 0.25}, []int{2, 1, 1, 1}},
		{0, []float64{0.5, 0.5}, []int{0, 0}},
		{60000, []float64{5.0 / 6, 1.0 / 6}, []int{50000, 10000}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, data.SplitSizes(tt.n, tt.fractions), "n=%d fractions=%v", tt.n, tt.fractions)
	}
	assert.PanicsWithValue(t, "data.SplitSizes: fractions [0.5 0.6] sum to 1.1, want 1", func() { data.SplitSizes(3, []float64{0.5, 0.6}) })
	assert.Panics(t, func() { data.SplitSizes(3, []float64{1.5, -0.5}) })
	assert.Panics(t, func() { data.SplitSizes(3, nil) })
}

func TestRandomSplit(t *testing.T) {
	ds := toyDataset(23)
	parts := data.RandomSplit(ds, []float64{0.6, 0.2, 0.2}, tensor.NewGenerator(7))
	require.Len(t, parts, 3)
	assert.Equal(t, []int{14, 5, 4}, []int{parts[0].Len(), parts[1].Len(), parts[2].Len()})
	var all []int
	for _, p := range parts {
		all = append(all, p.Indices()...)
	}
	slices.Sort(all)
	want := make([]int, 23)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, all, "the parts partition the dataset")
	assert.NotEqual(t, want[:14], parts[0].Indices(), "the split is shuffled")

	again := data.RandomSplit(ds, []float64{0.6, 0.2, 0.2}, tensor.NewGenerator(7))
	for k := range parts {
		assert.Equal(t, parts[k].Indices(), again[k].Indices(), "same seed, same split")
	}
	other := data.RandomSplit(ds, []float64{0.6, 0.2, 0.2}, tensor.NewGenerator(8))
	assert.NotEqual(t, parts[0].Indices(), other[0].Indices())

	assert.Panics(t, func() { data.RandomSplit(ds, []float64{1}, nil) })
}
