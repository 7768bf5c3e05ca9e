package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// Sums over leading axes (bias gradients) take a row-accumulating path for
// dense float32 tensors; they agree with the float64 sum rounded once.
func TestSumLeadingAxes(t *testing.T) {
	g := tensor.NewGenerator(2)
	cases := []struct {
		shape []int
		axes  []int
		keep  bool
	}{
		{[]int{7, 3}, []int{0}, false},
		{[]int{130, 1030}, []int{0}, true},
		{[]int{4, 5, 6}, []int{0, 1}, false},
		{[]int{4, 5, 6}, []int{0}, true},
		{[]int{3, 2, 600}, []int{-3, -2}, true},
	}
	for _, c := range cases {
		x := g.Randn(c.shape)
		got := x.Sum(c.axes, c.keep)
		want := x.To(tensor.Float64).Sum(c.axes, c.keep).To(tensor.Float32)
		require.Equal(t, want.Shape(), got.Shape(), "%v over %v", c.shape, c.axes)
		assert.Equal(t, want.Float32s(), got.Float32s(), "%v over %v", c.shape, c.axes)
	}
	// A view at an offset and a non-contiguous view.
	x := g.Randn([]int{9, 8, 5})
	v := x.Narrow(0, 2, 4)
	assert.InDeltaSlice(t, v.To(tensor.Float64).Sum([]int{0}, false).Float32s(), v.Sum([]int{0}, false).Float32s(), 1e-6)
	tr := x.Transpose(1, 2)
	assert.InDeltaSlice(t, tr.To(tensor.Float64).Sum([]int{0}, false).Float32s(), tr.Sum([]int{0}, false).Float32s(), 1e-6)
	assert.Equal(t, []float32{5, 7, 9}, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3).Sum([]int{0}, false).Float32s())
}
