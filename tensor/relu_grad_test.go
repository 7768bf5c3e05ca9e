package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// TestReluGradGolden checks ReluGrad against torch's threshold_backward,
// on dense and transposed gradients and with non-finite gradients where the
// output is zero.
func TestReluGradGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_relu_grad.json") {
		t.Run(c.Name, func(t *testing.T) {
			g := goldtensor.ToTensor(c.Inputs[0])
			if c.Has("transpose_grad") && c.Bool("transpose_grad") {
				g = g.T()
				require.False(t, g.IsContiguous())
			}
			out := goldtensor.ToTensor(c.Inputs[1])
			got := tensor.ReluGrad(g, out)
			assert.Equal(t, g.DType(), got.DType())
			check(t, c.Name, c.Outputs[0], got)
		})
	}
}

// The fused kernels decide positivity from the bit pattern; check the edge
// values: -0, +Inf, NaN, -Inf and the smallest subnormal.
func TestReluGradSpecialOutputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	out := []float64{math.Copysign(0, -1), inf, nan, -inf, math.SmallestNonzeroFloat64, 0}
	g := []float64{1, 2, 3, 4, 5, 6}
	assert.Equal(t, []float64{0, 2, 0, 0, 5, 0}, tensor.ReluGrad(tensor.FromSlice(g, 6), tensor.FromSlice(out, 6)).Float64s())
	out32 := []float32{float32(math.Copysign(0, -1)), float32(inf), float32(nan), float32(-inf), math.SmallestNonzeroFloat32, 0}
	g32 := []float32{1, 2, 3, 4, 5, 6}
	assert.Equal(t, []float32{0, 2, 0, 0, 5, 0}, tensor.ReluGrad(tensor.FromSlice(g32, 6), tensor.FromSlice(out32, 6)).Float32s())
}

func TestReluGradMixedAndMisuse(t *testing.T) {
	g := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	out := tensor.FromSlice([]float64{0, 0.5, -1, 2}, 2, 2)
	got := tensor.ReluGrad(g, out)
	assert.Equal(t, tensor.Float32, got.DType())
	assert.Equal(t, []float32{0, 2, 0, 4}, got.Float32s())
	// A broadcast (stride-0) output takes the general path.
	row := tensor.FromSlice([]float32{1, 0}, 1, 2).Expand(2, 2)
	assert.Equal(t, []float32{1, 0, 3, 0}, tensor.ReluGrad(g, row).Float32s())

	assert.PanicsWithValue(t, "tensor.ReluGrad: gradient shape [2 2] must equal the output shape [4]", func() {
		tensor.ReluGrad(g, tensor.Zeros([]int{4}))
	})
	assert.Panics(t, func() {
		tensor.ReluGrad(tensor.FromSlice([]int64{1, 2}, 2), tensor.FromSlice([]int64{1, 0}, 2))
	})
}
