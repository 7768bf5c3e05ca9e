package onnx

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenNodeAttrs encodes a golden case's attributes for an ONNX node:
// strings as strings, lists as ints, names in floats as floats, other
// numbers as ints ("opset" picks the model's opset and is no attribute).
func goldenNodeAttrs(c golden.Case, floats ...string) [][]byte {
	names := make([]string, 0, len(c.Attrs))
	for name := range c.Attrs {
		if name != "opset" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var attrs [][]byte
	for _, name := range names {
		switch v := c.Attrs[name].(type) {
		case string:
			attrs = append(attrs, mkAttrString(name, v))
		case []any:
			var ints []int64
			for _, d := range c.Ints(name) {
				ints = append(ints, int64(d))
			}
			attrs = append(attrs, mkAttrInts(name, ints...))
		default:
			isFloat := false
			for _, f := range floats {
				isFloat = isFloat || f == name
			}
			if isFloat {
				attrs = append(attrs, mkAttrFloat(name, float32(c.Float(name))))
			} else {
				attrs = append(attrs, mkAttrInt(name, int64(c.Int(name))))
			}
		}
	}
	return attrs
}

// TestRecentOpsGolden runs the operators of opsets 18-21 as one-node
// models against internal/golden/gen/gen_onnx_opset18.py and
// gen_onnx_deform.py (DeformConv, from torchvision).
func TestRecentOpsGolden(t *testing.T) {
	for _, file := range []struct {
		path string
		tol  float64 // rtol and atol
	}{{"testdata/golden_opset18.json", 1e-5}, {"testdata/golden_deform.json", 1e-4}} {
		runNodeGoldens(t, file.path, file.tol)
	}
}

// runNodeGoldens runs each case of a golden file as a one-node model: its
// inputs in order, its attributes, its first output compared.
func runNodeGoldens(t *testing.T, path string, tol float64) {
	onnxType := map[tensor.DType]int64{tensor.Float32: dtFloat, tensor.Int64: dtInt64, tensor.Int32: dtInt32, tensor.Float64: dtDouble}
	for _, c := range golden.Load(t, path) {
		t.Run(c.Name, func(t *testing.T) {
			feeds := map[string]*tensor.Tensor{}
			var names []string
			var inputs [][]byte
			for i, g := range c.Inputs {
				x := goldtensor.ToTensor(g)
				name := fmt.Sprintf("in%d", i)
				names = append(names, name)
				feeds[name] = x
				inputs = append(inputs, mkValueInfoAnyShape(name, onnxType[x.DType()]))
			}
			want := goldtensor.ToTensor(c.Outputs[0])
			s := newSession(t, mkModel(int64(c.Int("opset")), graphParts{
				nodes:   [][]byte{mkNode(c.Op, names, []string{"y"}, goldenNodeAttrs(c, "epsilon")...)},
				inputs:  inputs,
				outputs: [][]byte{mkValueInfoAnyShape("y", onnxType[want.DType()])},
			}))
			out, err := s.Run(context.Background(), feeds)
			require.NoError(t, err)
			y := out["y"]
			require.Equal(t, want.DType(), y.DType())
			golden.AllClose(t, "y", c.Outputs[0], y.Shape(), y.Float64s(), tol, tol)
		})
	}
}

func TestBitwiseKeepsNarrowTypes(t *testing.T) {
	s := newSession(t, mkModel(18, graphParts{
		nodes: [][]byte{
			mkNode("BitwiseXor", []string{"a", "b"}, []string{"x"}),
			mkNode("BitwiseNot", []string{"a"}, []string{"n"}),
		},
		inputs:  [][]byte{mkValueInfoAnyShape("a", dtInt8), mkValueInfoAnyShape("b", dtInt8)},
		outputs: [][]byte{mkValueInfoAnyShape("x", dtInt8), mkValueInfoAnyShape("n", dtInt8)},
	}))
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{
		"a": tensor.FromSlice([]int8{-128, 127, 0, -1}), "b": tensor.FromSlice([]int8{-1, -1, 5, 1}),
	})
	require.NoError(t, err)
	assert.Equal(t, []int8{127, -128, 5, -2}, out["x"].Int8s())
	assert.Equal(t, []int8{127, -128, -1, 0}, out["n"].Int8s())
}

func TestDeformConvRejectsBadShapes(t *testing.T) {
	s := newSession(t, mkModel(19, graphParts{
		nodes:   [][]byte{mkNode("DeformConv", []string{"x", "w", "off"}, []string{"y"})},
		inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat), mkValueInfoAnyShape("w", dtFloat), mkValueInfoAnyShape("off", dtFloat)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
	x, w := tensor.Zeros([]int{1, 2, 4, 4}), tensor.Zeros([]int{3, 2, 3, 3})
	for _, tc := range []struct {
		name string
		w    *tensor.Tensor
		off  *tensor.Tensor
		msg  string
	}{
		{"offset", w, tensor.Zeros([]int{1, 18, 3, 3}), "offset [1 18 3 3], want [1, 18, 2, 2]"},
		{"weight", tensor.Zeros([]int{3, 3, 3, 3}), tensor.Zeros([]int{1, 18, 2, 2}), "do not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "w": tc.w, "off": tc.off})
			require.ErrorContains(t, err, tc.msg)
		})
	}
}
