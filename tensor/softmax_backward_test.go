package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// SoftmaxBackward's float32 row kernel (last axis, contiguous) agrees with
// the float64 formula y·(g - sum(g·y)) at row widths 1…67, and the general
// path (another axis, float64, a non-contiguous gradient) gives the same
// formula.
func TestSoftmaxBackward(t *testing.T) {
	g := tensor.NewGenerator(3)
	for n := 1; n <= 67; n++ {
		y := g.Randn([]int{5, n}).Softmax(1)
		grad := g.Randn([]int{5, n})
		y64, g64 := y.To(tensor.Float64), grad.To(tensor.Float64)
		want := y64.Mul(g64.Sub(g64.Mul(y64).Sum([]int{1}, true))).Float64s()
		got := tensor.SoftmaxBackward(grad, y, -1)
		require.Equal(t, tensor.Float32, got.DType())
		for i, v := range got.Float64s() {
			require.InDelta(t, want[i], v, 1e-6*(1+math.Abs(want[i])), "n %d element %d", n, i)
		}
		require.InDeltaSlice(t, want, tensor.SoftmaxBackward(g64, y64, 1).Float64s(), 1e-15, "n %d float64", n)
	}
	y := g.Randn([]int{4, 6}).Softmax(0)
	grad := g.Randn([]int{6, 4}).T()
	y64, g64 := y.To(tensor.Float64), grad.To(tensor.Float64)
	want := y64.Mul(g64.Sub(g64.Mul(y64).Sum([]int{0}, true))).Float64s()
	require.InDeltaSlice(t, want, tensor.SoftmaxBackward(grad, y, 0).Float64s(), 1e-6)
	require.Panics(t, func() { tensor.SoftmaxBackward(grad, y.Reshape(6, 4), 0) })
}
