package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mkAttrFloat(name string, v float32) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrFloat)
	b = protowireFixed32(b, 2, v)
	return b
}

// runOne builds a one-node model at opset, feeds x (input "x") and returns
// output "y".
func runOne(t *testing.T, opset int64, node []byte, inits [][]byte, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	model := mkModel(opset, graphParts{
		nodes:   [][]byte{node},
		inits:   inits,
		inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	return out["y"]
}

// TestOpsetSemantics checks operators whose inputs or meaning changed
// between opsets: the attribute form before, the input form after.
func TestOpsetSemantics(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 1, 2, 3)
	for _, tc := range []struct {
		name  string
		opset int64
		node  []byte
		inits [][]byte
		shape []int
		want  []float32
	}{
		{"Squeeze axes attribute (opset 11)", 11, mkNode("Squeeze", []string{"x"}, []string{"y"}, mkAttrInts("axes", 0)), nil,
			[]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		{"Squeeze axes input (opset 13)", 13, mkNode("Squeeze", []string{"x", "axes"}, []string{"y"}),
			[][]byte{mkInt64Tensor("axes", []int64{1}, 0)}, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		{"Unsqueeze negative axis input (opset 13)", 13, mkNode("Unsqueeze", []string{"x", "axes"}, []string{"y"}),
			[][]byte{mkInt64Tensor("axes", []int64{1}, -1)}, []int{1, 2, 3, 1}, []float32{1, 2, 3, 4, 5, 6}},
		{"ReduceSum axes attribute (opset 11)", 11, mkNode("ReduceSum", []string{"x"}, []string{"y"}, mkAttrInts("axes", 2), mkAttrInt("keepdims", 0)), nil,
			[]int{1, 2}, []float32{6, 15}},
		{"ReduceSum axes input (opset 13)", 13, mkNode("ReduceSum", []string{"x", "axes"}, []string{"y"}, mkAttrInt("keepdims", 1)),
			[][]byte{mkInt64Tensor("axes", []int64{1}, 1)}, []int{1, 1, 3}, []float32{5, 7, 9}},
		{"ReduceSum no axes reduces all", 13, mkNode("ReduceSum", []string{"x"}, []string{"y"}, mkAttrInt("keepdims", 0)), nil,
			nil, []float32{21}},
		{"ReduceSum noop_with_empty_axes", 13, mkNode("ReduceSum", []string{"x"}, []string{"y"}, mkAttrInt("noop_with_empty_axes", 1)), nil,
			[]int{1, 2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		{"ReduceMax axes attribute (opset 13)", 13, mkNode("ReduceMax", []string{"x"}, []string{"y"}, mkAttrInts("axes", -1)), nil,
			[]int{1, 2, 1}, []float32{3, 6}},
		{"ReduceMax axes input (opset 18)", 18, mkNode("ReduceMax", []string{"x", "axes"}, []string{"y"}),
			[][]byte{mkInt64Tensor("axes", []int64{1}, 1)}, []int{1, 1, 3}, []float32{4, 5, 6}},
		{"Clip attributes (opset 6)", 6, mkNode("Clip", []string{"x"}, []string{"y"}, mkAttrFloat("min", 2), mkAttrFloat("max", 4.5)), nil,
			[]int{1, 2, 3}, []float32{2, 2, 3, 4, 4.5, 4.5}},
		{"Clip inputs (opset 13)", 13, mkNode("Clip", []string{"x", "", "hi"}, []string{"y"}),
			[][]byte{mkFloatTensor("hi", nil, 3)}, []int{1, 2, 3}, []float32{1, 2, 3, 3, 3, 3}},
		{"Split attribute (opset 11)", 11, mkNode("Split", []string{"x"}, []string{"y", "z"}, mkAttrInt("axis", 2), mkAttrInts("split", 1, 2)), nil,
			[]int{1, 2, 1}, []float32{1, 4}},
		{"Split input (opset 13)", 13, mkNode("Split", []string{"x", "s"}, []string{"y", "z"}, mkAttrInt("axis", 2)),
			[][]byte{mkInt64Tensor("s", []int64{2}, 2, 1)}, []int{1, 2, 2}, []float32{1, 2, 4, 5}},
		{"Slice attributes (opset 9)", 9, mkNode("Slice", []string{"x"}, []string{"y"}, mkAttrInts("starts", 1), mkAttrInts("ends", 100), mkAttrInts("axes", 2)), nil,
			[]int{1, 2, 2}, []float32{2, 3, 5, 6}},
		{"Slice negative step (opset 13)", 13, mkNode("Slice", []string{"x", "st", "en", "ax", "sp"}, []string{"y"}),
			[][]byte{mkInt64Tensor("st", []int64{1}, -1), mkInt64Tensor("en", []int64{1}, -100), mkInt64Tensor("ax", []int64{1}, 2), mkInt64Tensor("sp", []int64{1}, -2)},
			[]int{1, 2, 2}, []float32{3, 1, 6, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := runOne(t, tc.opset, tc.node, tc.inits, x)
			assert.Equal(t, tc.shape, y.Shape())
			assert.Equal(t, tc.want, y.Float32s())
		})
	}
}

// TestSoftmaxOpsets: before opset 13 Softmax flattens the input to 2-d at
// axis and normalizes over everything after it; from 13 it normalizes one
// axis.
func TestSoftmaxOpsets(t *testing.T) {
	x := tensor.FromSlice([]float32{0, 0, 0, 0, 0, 0}, 1, 2, 3)
	old := runOne(t, 11, mkNode("Softmax", []string{"x"}, []string{"y"}, mkAttrInt("axis", 1)), nil, x)
	assert.InDeltaSlice(t, []float32{1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}, old.Float32s(), 1e-6)
	cur := runOne(t, 13, mkNode("Softmax", []string{"x"}, []string{"y"}, mkAttrInt("axis", 1)), nil, x)
	assert.InDeltaSlice(t, []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, cur.Float32s(), 1e-6)
	def := runOne(t, 13, mkNode("LogSoftmax", []string{"x"}, []string{"y"}), nil, x)
	assert.InDeltaSlice(t, []float32{-1.0986123, -1.0986123, -1.0986123, -1.0986123, -1.0986123, -1.0986123}, def.Float32s(), 1e-6)
}

// TestSparseConstant densifies Constant's sparse_value, with linear and
// coordinate indices.
func TestSparseConstant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indices []byte
	}{
		{"linear", mkInt64Tensor("", []int64{2}, 1, 5)},
		{"coordinates", mkInt64Tensor("", []int64{2, 2}, 0, 1, 1, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := pbBytes(nil, 1, mkFloatTensor("", []int64{2}, 7, -3))
			sp = pbBytes(sp, 2, tc.indices)
			sp = pbVarint(sp, 3, 2)
			sp = pbVarint(sp, 3, 3)
			attr := pbString(nil, 1, "sparse_value")
			attr = pbVarint(attr, 20, attrSparseTensor)
			attr = pbBytes(attr, 22, sp)
			model := mkModel(13, graphParts{
				nodes:   [][]byte{mkNode("Constant", nil, []string{"y"}, attr)},
				outputs: [][]byte{mkValueInfo("y", dtFloat, 2, 3)},
			})
			s := newSession(t, model)
			out, err := s.Run(context.Background(), nil)
			require.NoError(t, err)
			assert.Equal(t, []int{2, 3}, out["y"].Shape())
			assert.Equal(t, []float32{0, 7, 0, 0, 0, -3}, out["y"].Float32s())
		})
	}
}
