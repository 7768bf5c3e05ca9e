package tensor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestConvFloat32MatchesFloat64 checks the float32 CPU convolution kernels
// (per-image GEMM, pointwise and depthwise paths) against the float64
// computation, on contiguous and transposed (non-contiguous) operands and at
// one and two threads.
func TestConvFloat32MatchesFloat64(t *testing.T) {
	cases := []struct {
		n, c, o, h, w, k int
		opt              tensor.Conv2dOptions
	}{
		{3, 4, 6, 7, 9, 3, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
		{2, 6, 4, 8, 8, 3, tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{0, 2}, Dilation: [2]int{1, 2}, Groups: 2}},
		{4, 5, 7, 6, 6, 1, tensor.Conv2dOptions{}},
		{3, 6, 12, 7, 7, 3, tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 6}},
		{1, 1, 3, 5, 6, 2, tensor.Conv2dOptions{}},
		// One input channel: float32 lowers it into the matrix product,
		// float64 keeps the depthwise loop.
		{3, 1, 16, 28, 28, 3, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
	}
	gen := tensor.NewGenerator(7)
	for _, c := range cases {
		for _, transposed := range []bool{false, true} {
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("%+v/transposed=%v/threads=%d", c, transposed, threads), func(t *testing.T) {
					tensor.SetNumThreads(threads)
					defer tensor.SetNumThreads(0)
					groups := max(c.opt.Groups, 1)
					x64 := gen.Randn([]int{c.n, c.c, c.h, c.w}, tensor.Float64)
					if transposed {
						x64 = gen.Randn([]int{c.n, c.c, c.w, c.h}, tensor.Float64).Transpose(2, 3)
					}
					w64 := gen.Randn([]int{c.o, c.c / groups, c.k, c.k}, tensor.Float64)
					b64 := gen.Randn([]int{c.o}, tensor.Float64)
					x32, w32, b32 := x64.To(tensor.Float32), w64.To(tensor.Float32), b64.To(tensor.Float32)
					y64 := tensor.Conv2d(x64, w64, b64, c.opt)
					y32 := tensor.Conv2d(x32, w32, b32, c.opt)
					requireClose32(t, y64, y32, "forward")
					g := tensor.Conv2dGeometry(x64.Shape(), w64.Shape(), c.opt)
					gy64 := gen.Randn(y64.Shape(), tensor.Float64)
					if transposed {
						s := y64.Shape()
						gy64 = gen.Randn([]int{s[0], s[1], s[3], s[2]}, tensor.Float64).Transpose(2, 3)
					}
					gy32 := gy64.To(tensor.Float32)
					requireClose32(t, tensor.ConvBackwardInput(gy64, w64, g, groups), tensor.ConvBackwardInput(gy32, w32, g, groups), "input grad")
					requireClose32(t, tensor.ConvBackwardWeight(x64, gy64, g, groups), tensor.ConvBackwardWeight(x32, gy32, g, groups), "weight grad")
				})
			}
		}
	}
}

// TestConvTransposeFloat32MatchesFloat64 checks the float32 transposed
// convolution (the input-gradient kernels) against float64, output padding
// included.
func TestConvTransposeFloat32MatchesFloat64(t *testing.T) {
	cases := []tensor.ConvTranspose2dOptions{
		{Padding: [2]int{1, 1}},
		{Stride: [2]int{2, 2}, Padding: [2]int{1, 0}, OutputPadding: [2]int{1, 1}},
		{Dilation: [2]int{2, 2}, OutputPadding: [2]int{1, 0}, Groups: 2},
		{Dilation: [2]int{2, 1}, Padding: [2]int{2, 0}},
	}
	gen := tensor.NewGenerator(11)
	for _, opt := range cases {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			groups := max(opt.Groups, 1)
			x64 := gen.Randn([]int{3, 4, 5, 6}, tensor.Float64)
			w64 := gen.Randn([]int{4, 6 / groups, 3, 3}, tensor.Float64)
			b64 := gen.Randn([]int{6}, tensor.Float64)
			y64 := tensor.ConvTranspose2d(x64, w64, b64, opt)
			y32 := tensor.ConvTranspose2d(x64.To(tensor.Float32), w64.To(tensor.Float32), b64.To(tensor.Float32), opt)
			requireClose32(t, y64, y32, "conv_transpose2d")
		})
	}
}

func requireClose32(t *testing.T, want, got *tensor.Tensor, what string) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape(), what)
	w, g := want.Float64s(), got.To(tensor.Float64).Float64s()
	for i := range w {
		require.InDelta(t, w[i], g[i], 1e-4*(1+abs64(w[i])), "%s[%d]", what, i)
	}
}

func abs64(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
