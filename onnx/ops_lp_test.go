package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// TestLpOpsGolden runs LpPool, GlobalLpPool and LpNormalization as
// one-node models against internal/golden/gen/gen_onnx_lp.py.
func TestLpOpsGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_lp.json") {
		t.Run(c.Name, func(t *testing.T) {
			var attrs [][]byte
			for _, name := range []string{"p", "axis", "ceil_mode"} {
				if c.Has(name) {
					attrs = append(attrs, mkAttrInt(name, int64(c.Int(name))))
				}
			}
			for _, name := range []string{"kernel_shape", "strides", "pads", "dilations"} {
				if c.Has(name) {
					var v []int64
					for _, d := range c.Ints(name) {
						v = append(v, int64(d))
					}
					attrs = append(attrs, mkAttrInts(name, v...))
				}
			}
			opset := int64(18) // ceil_mode and dilations of LpPool
			if c.Op == "LpNormalization" {
				opset = 13
			}
			s := newSession(t, mkModel(opset, graphParts{
				nodes:   [][]byte{mkNode(c.Op, []string{"x"}, []string{"y"}, attrs...)},
				inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat)},
				outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
			}))
			out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": goldtensor.ToTensor(c.Inputs[0])})
			require.NoError(t, err)
			y := out["y"]
			golden.AllClose(t, "y", c.Outputs[0], y.Shape(), y.Float64s(), 1e-5, 1e-6)
		})
	}
}

func TestLpOpsRejectBadAttributes(t *testing.T) {
	for _, tc := range []struct {
		op    string
		attrs [][]byte
		msg   string
	}{
		{"LpPool", [][]byte{mkAttrInts("kernel_shape", 2, 2), mkAttrInt("p", 0)}, "p = 0 must be positive"},
		{"LpPool", [][]byte{mkAttrInts("kernel_shape", 2)}, "kernel_shape [2] must have 2 entries"},
		{"LpNormalization", [][]byte{mkAttrInt("p", 3)}, "p = 3, want 1 or 2"},
		{"LpNormalization", [][]byte{mkAttrInt("axis", 4)}, "axis"},
	} {
		t.Run(tc.op+"/"+tc.msg, func(t *testing.T) {
			s := newSession(t, mkModel(18, graphParts{
				nodes:   [][]byte{mkNode(tc.op, []string{"x"}, []string{"y"}, tc.attrs...)},
				inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat)},
				outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
			}))
			_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Ones([]int{1, 2, 4, 4})})
			require.ErrorContains(t, err, tc.msg)
		})
	}
}
