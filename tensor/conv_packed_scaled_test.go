package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestPackScaledConv2dWeight requires a weight packed with a per output
// channel scale to give Conv2d with the weight scaled beforehand, to float
// rounding, on the direct, Winograd (3×3, 64 channels, both paths of one
// pack) and fallback (depthwise, float64) paths.
func TestPackScaledConv2dWeight(t *testing.T) {
	gen := tensor.NewGenerator(5)
	small := gen.Randn([]int{2, 6, 11, 9})
	wide := gen.Randn([]int{1, 64, 16, 16})
	wino := gen.Randn([]int{64, 64, 3, 3})
	cases := []struct {
		name string
		x, w *tensor.Tensor
		opt  tensor.Conv2dOptions
	}{
		{"pointwise", small, gen.Randn([]int{5, 6, 1, 1}), tensor.Conv2dOptions{}},
		{"grouped strided", small, gen.Randn([]int{4, 3, 3, 2}), tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, Groups: 2}},
		{"winograd", wide, wino, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
		{"winograd weight strided", wide, wino, tensor.Conv2dOptions{Padding: [2]int{1, 1}, Stride: [2]int{2, 2}}},
		{"depthwise", small, gen.Randn([]int{6, 1, 3, 3}), tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 6}},
		{"float64", small.To(tensor.Float64), gen.Randn([]int{7, 6, 3, 3}).To(tensor.Float64), tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.w.Shape()[0]
			scale := gen.Randn([]int{o}).To(c.w.DType())
			b := gen.Randn([]int{o}).To(c.w.DType())
			pw := tensor.PackScaledConv2dWeight(c.w, scale, max(c.opt.Groups, 1))
			require.Same(t, c.w, pw.Weight())
			ws := c.w.Mul(scale.Reshape(o, 1, 1, 1))
			want := tensor.Conv2d(c.x, ws, b, c.opt)
			res := gen.Randn(want.Shape()).To(c.x.DType())
			for _, tc := range []struct {
				residual *tensor.Tensor
				relu     bool
				want     *tensor.Tensor
			}{
				{nil, false, want},
				{nil, true, want.Relu()},
				{res, true, want.Add(res).Relu()},
			} {
				got := tensor.Conv2dPacked(c.x, pw, b, c.opt, tc.residual, tc.relu)
				require.Equal(t, want.Shape(), got.Shape())
				wv := tc.want.Float64s()
				for i, v := range got.Float64s() {
					require.InDelta(t, wv[i], v, 1e-4*math.Max(1, math.Abs(wv[i])), "[%d]", i)
				}
			}
		})
	}
	require.PanicsWithValue(t, "tensor.PackScaledConv2dWeight: scale [3] must be [4], one factor per output channel of weight [4 2 3 3]",
		func() { tensor.PackScaledConv2dWeight(tensor.Zeros([]int{4, 2, 3, 3}), tensor.Zeros([]int{3}), 1) })
}
