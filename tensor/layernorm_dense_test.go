package tensor_test

import (
	"math"
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

// LayerNormBackward's float32 row kernel agrees with the float64 kernel on
// the same values, for row widths 1…67 and a row count that does not fill
// its last block, with and without weight.
func TestLayerNormBackward32MatchesFloat64(t *testing.T) {
	g := tensor.NewGenerator(6)
	for cols := 1; cols <= 67; cols++ {
		shape := []int{37, cols}
		x := g.Randn(shape).MulScalar(3).AddScalar(0.7)
		grad := g.Randn(shape)
		for _, w := range []*tensor.Tensor{nil, g.Randn([]int{cols})} {
			var w64 *tensor.Tensor
			if w != nil {
				w64 = w.To(tensor.Float64)
			}
			_, mean, variance := tensor.LayerNormWithStats(x, []int{cols}, w, nil, 1e-5)
			dx, dw, db := tensor.LayerNormBackward(grad, x, mean, variance, []int{cols}, w, 1e-5)
			dx64, dw64, db64 := tensor.LayerNormBackward(grad.To(tensor.Float64), x.To(tensor.Float64),
				mean.To(tensor.Float64), variance.To(tensor.Float64), []int{cols}, w64, 1e-5)
			for _, c := range []struct {
				name      string
				got, want *tensor.Tensor
			}{{"dx", dx, dx64}, {"dweight", dw, dw64}, {"dbias", db, db64}} {
				require.Equal(t, tensor.Float32, c.got.DType())
				got, want := c.got.Float64s(), c.want.Float64s()
				for i := range want {
					require.InDelta(t, want[i], got[i], 2e-5*(1+math.Abs(want[i])), "cols %d weight %t %s element %d", cols, w != nil, c.name, i)
				}
			}
		}
	}
}
