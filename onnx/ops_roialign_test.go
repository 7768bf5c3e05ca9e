package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func roiAlignSession(t *testing.T, opset int64, attrs ...[]byte) *Session {
	t.Helper()
	return newSession(t, mkModel(opset, graphParts{
		nodes: [][]byte{mkNode("RoiAlign", []string{"x", "rois", "b"}, []string{"y"}, attrs...)},
		inputs: [][]byte{
			mkValueInfoAnyShape("x", dtFloat), mkValueInfoAnyShape("rois", dtFloat), mkValueInfoAnyShape("b", dtInt64),
		},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
}

// The expected values come from the sampling rule written out in NumPy
// (plane = arange(16) as 4×4, so a bilinear sample at (y, x) is 4y + x).
func TestRoiAlignModes(t *testing.T) {
	x := tensor.Arange(0, 16, 1).To(tensor.Float32).Reshape(1, 1, 4, 4)
	b := tensor.FromSlice([]int64{0})
	for _, tc := range []struct {
		name  string
		opset int64
		attrs [][]byte
		roi   []float32
		shape []int
		want  []float32
	}{
		{
			// half_pixel, 2×2 samples per bin; each sample keeps its
			// largest weighted corner (ONNX Runtime's max).
			name: "max", opset: 16, roi: []float32{0, 0, 3, 3}, shape: []int{1, 1, 2, 2},
			attrs: [][]byte{mkAttrString("mode", "max"), mkAttrInt("output_height", 2), mkAttrInt("output_width", 2), mkAttrInt("sampling_ratio", 2)},
			want:  []float32{2.5, 3.28125, 7, 7.65625},
		},
		{
			// opset 10: output_half_pixel, the 0.5-wide roi grown to 1×1,
			// adaptive grid of one sample per bin at (1.5, 1.25), (1.5, 1.75).
			name: "opset10", opset: 10, roi: []float32{1, 1, 1.5, 1.5}, shape: []int{1, 1, 1, 2},
			attrs: [][]byte{mkAttrInt("output_height", 1), mkAttrInt("output_width", 2)},
			want:  []float32{7.25, 7.75},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := roiAlignSession(t, tc.opset, tc.attrs...)
			out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "rois": tensor.FromSlice(tc.roi, 1, 4), "b": b})
			require.NoError(t, err)
			require.Equal(t, tc.shape, out["y"].Shape())
			assert.InDeltaSlice(t, tc.want, out["y"].Float32s(), 1e-6)
		})
	}
}

func TestRoiAlignRejectsBadInputs(t *testing.T) {
	s := roiAlignSession(t, 16)
	x := tensor.Zeros([]int{1, 1, 4, 4})
	for _, tc := range []struct {
		name string
		rois *tensor.Tensor
		b    *tensor.Tensor
		msg  string
	}{
		{"batch index", tensor.Zeros([]int{1, 4}), tensor.FromSlice([]int64{1}), "batch index 1 of roi 0 outside [0, 1)"},
		{"roi shape", tensor.Zeros([]int{1, 3}), tensor.FromSlice([]int64{0}), "must be [num_rois, 4]"},
		{"count", tensor.Zeros([]int{2, 4}), tensor.FromSlice([]int64{0}), "must be [num_rois, 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "rois": tc.rois, "b": tc.b})
			require.ErrorContains(t, err, tc.msg)
		})
	}
}
