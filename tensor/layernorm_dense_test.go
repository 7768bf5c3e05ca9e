package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// LayerNorm's float32 row kernel (contiguous operands) gives the bits of
// the general path (reached through a non-contiguous input with the same
// values) and agrees with a float64 reference, for row widths 1…67 (vector
// remainders), with and without weight and bias.
func TestLayerNormForwardDenseMatchesGeneral(t *testing.T) {
	g := tensor.NewGenerator(5)
	for cols := 1; cols <= 67; cols++ {
		shape := []int{2, 3, cols}
		xT := g.Randn([]int{2, 3, cols + 1}).MulScalar(3).AddScalar(0.7).Narrow(-1, 0, cols) // not contiguous
		x := xT.Contiguous()
		require.False(t, xT.IsContiguous())
		w, b := g.Randn([]int{cols}), g.Randn([]int{cols})
		for _, c := range []struct {
			name string
			w, b *tensor.Tensor
		}{{"plain", nil, nil}, {"weight", w, nil}, {"bias", nil, b}, {"both", w, b}} {
			out, mean, variance := tensor.LayerNormWithStats(x, []int{cols}, c.w, c.b, 1e-5)
			out2, mean2, variance2 := tensor.LayerNormWithStats(xT, []int{cols}, c.w, c.b, 1e-5)
			var w64, b64 *tensor.Tensor
			if c.w != nil {
				w64 = c.w.To(tensor.Float64)
			}
			if c.b != nil {
				b64 = c.b.To(tensor.Float64)
			}
			ref := tensor.LayerNorm(x.To(tensor.Float64), []int{cols}, w64, b64, 1e-5)
			require.Equal(t, mean2.Float32s(), mean.Float32s(), "cols %d %s mean", cols, c.name)
			require.Equal(t, variance2.Float32s(), variance.Float32s(), "cols %d %s variance", cols, c.name)
			require.Equal(t, shape, out.Shape())
			require.Equal(t, out2.Float32s(), out.Float32s(), "cols %d %s vs general", cols, c.name)
			got, want := out.Float64s(), ref.Float64s()
			for i := range want {
				require.InDelta(t, want[i], got[i], 3e-6, "cols %d %s element %d vs float64", cols, c.name, i)
			}
		}
	}
}
