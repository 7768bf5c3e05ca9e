package tensor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConv2dRelu checks the fused path against Conv2d followed by Relu for
// dense, grouped, depthwise, strided/padded and float64 convolutions, with
// and without bias and on a transposed (non-contiguous) input.
func TestConv2dRelu(t *testing.T) {
	g := NewGenerator(7)
	cases := []struct {
		name          string
		dt            DType
		n, c, h, w, o int
		k             int
		opt           Conv2dOptions
		bias, transp  bool
	}{
		{"dense", Float32, 2, 3, 7, 6, 5, 3, Conv2dOptions{}, true, false},
		{"strided-padded", Float32, 1, 4, 9, 9, 8, 3, Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, true, false},
		{"pointwise-nobias", Float32, 1, 6, 5, 5, 4, 1, Conv2dOptions{}, false, false},
		{"grouped", Float32, 1, 4, 6, 6, 6, 3, Conv2dOptions{Groups: 2, Padding: [2]int{1, 1}}, true, false},
		{"depthwise", Float32, 1, 5, 6, 6, 5, 3, Conv2dOptions{Groups: 5, Padding: [2]int{1, 1}}, true, false},
		{"depthwise-f64", Float64, 1, 3, 5, 5, 3, 3, Conv2dOptions{Groups: 3}, true, false},
		{"dense-f64", Float64, 1, 2, 5, 5, 3, 3, Conv2dOptions{}, true, false},
		{"transposed-input", Float32, 1, 3, 6, 6, 4, 3, Conv2dOptions{}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			groups := tc.opt.Groups
			if groups == 0 {
				groups = 1
			}
			x := g.Randn([]int{tc.n, tc.c, tc.h, tc.w}).To(tc.dt)
			if tc.transp {
				x = g.Randn([]int{tc.n, tc.c, tc.w, tc.h}).To(tc.dt).Transpose(2, 3)
			}
			w := g.Randn([]int{tc.o, tc.c / groups, tc.k, tc.k}).To(tc.dt)
			var b *Tensor
			if tc.bias {
				b = g.Randn([]int{tc.o}).To(tc.dt)
			}
			want := Conv2d(x, w, b, tc.opt).Relu().Float64s()
			got := Conv2dRelu(x, w, b, tc.opt)
			require.Equal(t, Conv2d(x, w, b, tc.opt).Shape(), got.Shape())
			gv := got.Float64s()
			neg := 0
			for i := range want {
				require.InDelta(t, want[i], gv[i], 1e-5, "element %d", i)
				require.GreaterOrEqual(t, gv[i], 0.0)
				if want[i] == 0 {
					neg++
				}
			}
			require.Positive(t, neg, "the case should clamp some outputs")
		})
	}
}
