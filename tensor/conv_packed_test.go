package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestConv2dPacked requires the pre-packed convolution to give exactly
// Conv2d's (and, with relu, Conv2dRelu's) result, Conv2d being checked
// against PyTorch, on the packed float32 path and on the fallbacks
// (depthwise, float64), for batched, unbatched and transposed inputs.
func TestConv2dPacked(t *testing.T) {
	gen := tensor.NewGenerator(3)
	x := gen.Randn([]int{2, 6, 11, 9})
	cases := []struct {
		name string
		x, w *tensor.Tensor
		bias bool
		opt  tensor.Conv2dOptions
	}{
		{"3x3 pad", x, gen.Randn([]int{7, 6, 3, 3}), true, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
		{"strided grouped no bias", x, gen.Randn([]int{4, 3, 3, 2}), false, tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, Groups: 2}},
		{"pointwise", x, gen.Randn([]int{5, 6, 1, 1}), true, tensor.Conv2dOptions{}},
		{"dilated", x, gen.Randn([]int{3, 6, 2, 3}), true, tensor.Conv2dOptions{Dilation: [2]int{2, 2}, Padding: [2]int{1, 2}}},
		{"unbatched", x.Select(0, 1), gen.Randn([]int{7, 6, 3, 3}), true, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
		{"transposed input", x.Transpose(2, 3), gen.Randn([]int{7, 6, 3, 3}), true, tensor.Conv2dOptions{Stride: [2]int{2, 2}}},
		{"depthwise", x, gen.Randn([]int{6, 1, 3, 3}), true, tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 6}},
		{"float64", x.To(tensor.Float64), gen.Randn([]int{7, 6, 3, 3}).To(tensor.Float64), true, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b *tensor.Tensor
			if c.bias {
				b = gen.Randn([]int{c.w.Shape()[0]}).To(c.w.DType())
			}
			pw := tensor.PackConv2dWeight(c.w, max(c.opt.Groups, 1))
			require.Same(t, c.w, pw.Weight())
			want := tensor.Conv2d(c.x, c.w, b, c.opt)
			got := tensor.Conv2dPacked(c.x, pw, b, c.opt, nil, false)
			require.Equal(t, want.Shape(), got.Shape())
			require.Equal(t, want.Float64s(), got.Float64s())
			relu := tensor.Conv2dRelu(c.x, c.w, b, c.opt)
			got = tensor.Conv2dPacked(c.x, pw, b, c.opt, nil, true)
			require.Equal(t, relu.Float64s(), got.Float64s())
			// The residual epilogue: relu(conv + b + residual), to float
			// rounding, with a transposed (non-contiguous) residual.
			res := gen.Randn(want.Shape()).To(c.x.DType())
			resT := res.Transpose(0, 1).Contiguous().Transpose(0, 1)
			wantRes := want.Add(res).Relu().Float64s()
			gotRes := tensor.Conv2dPacked(c.x, pw, b, c.opt, resT, true)
			require.Equal(t, want.Shape(), gotRes.Shape())
			for i, v := range gotRes.Float64s() {
				require.InDelta(t, wantRes[i], v, 1e-5, "residual+relu[%d]", i)
			}
			gotRes = tensor.Conv2dPacked(c.x, pw, b, c.opt, res, false)
			for i, v := range want.Add(res).Float64s() {
				require.InDelta(t, v, gotRes.Float64s()[i], 1e-5, "residual[%d]", i)
			}
		})
	}
}

func TestConv2dPackedPanics(t *testing.T) {
	w := tensor.Zeros([]int{4, 2, 3, 3})
	require.PanicsWithValue(t, "tensor.PackConv2dWeight: weight [4 2 3 3] must be [O, C/groups, KH, KW] with O divisible by groups = 3 >= 1",
		func() { tensor.PackConv2dWeight(w, 3) })
	pw := tensor.PackConv2dWeight(w, 2)
	require.PanicsWithValue(t, "tensor.Conv2dPacked: options ask for 0 groups, the weight [4 2 3 3] was packed for 2",
		func() {
			tensor.Conv2dPacked(tensor.Zeros([]int{1, 4, 5, 5}), pw, nil, tensor.Conv2dOptions{}, nil, false)
		})
	require.PanicsWithValue(t, "tensor.Conv2dPacked: residual [1 4 3 1] must have the output's shape [1 4 3 3]",
		func() {
			tensor.Conv2dPacked(tensor.Zeros([]int{1, 4, 5, 5}), pw, nil, tensor.Conv2dOptions{Groups: 2}, tensor.Zeros([]int{1, 4, 3, 1}), false)
		})
}
