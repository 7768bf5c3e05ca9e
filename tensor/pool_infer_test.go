package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestMaxPool2dValues checks the index-free pooling against MaxPool2d's
// values (themselves checked against PyTorch) on batched, unbatched,
// transposed and float64 inputs, with a NaN that must win its window.
func TestMaxPool2dValues(t *testing.T) {
	gen := tensor.NewGenerator(7)
	x := gen.Randn([]int{2, 3, 9, 11})
	data := x.Float32s()
	data[4] = float32(math.NaN())
	x = tensor.FromSlice(data, 2, 3, 9, 11)
	cases := []struct {
		name string
		x    *tensor.Tensor
		opt  tensor.Pool2dOptions
	}{
		{"stem 3x3 s2 p1", x, tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}},
		{"2x2 ceil", x, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, CeilMode: true}},
		{"dilated", x, tensor.Pool2dOptions{Kernel: [2]int{2, 3}, Stride: [2]int{1, 2}, Dilation: [2]int{2, 2}, Padding: [2]int{1, 1}}},
		{"unbatched", x.Select(0, 1), tensor.Pool2dOptions{Kernel: [2]int{3, 2}}},
		{"transposed", x.Transpose(2, 3), tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}},
		{"float64", x.To(tensor.Float64), tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, _ := tensor.MaxPool2d(c.x, c.opt)
			got := tensor.MaxPool2dValues(c.x, c.opt)
			require.Equal(t, want.Shape(), got.Shape())
			require.Equal(t, want.DType(), got.DType())
			w, g := want.Float64s(), got.Float64s()
			nan := 0
			for i := range w {
				if math.IsNaN(w[i]) {
					nan++
					require.True(t, math.IsNaN(g[i]), "output %d: got %v, want NaN", i, g[i])
					continue
				}
				require.Equal(t, w[i], g[i], "output %d", i)
			}
			if c.name == "stem 3x3 s2 p1" {
				require.Positive(t, nan, "the NaN must reach the output")
			}
		})
	}
}
