package onnx

import (
	"context"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mlModel is a one-node model of an ai.onnx.ml operator.
func mlModel(op string, inputs [][]byte, output []byte, attrs ...[]byte) []byte {
	var names []string
	for i := range inputs {
		names = append(names, []string{"x", "y"}[i])
	}
	node := pbString(mkNode(op, names, []string{"out"}, attrs...), 7, "ai.onnx.ml")
	m := mkModel(20, graphParts{nodes: [][]byte{node}, inputs: inputs, outputs: [][]byte{output}})
	return pbBytes(m, 8, pbVarint(pbString(nil, 1, "ai.onnx.ml"), 2, 5))
}

func TestLabelEncoderStringsAndNumbers(t *testing.T) {
	s := newSession(t, mlModel("LabelEncoder", [][]byte{mkValueInfo("x", dtString, 3)}, mkValueInfoAnyShape("out", dtInt64),
		mkAttrStrings("keys_strings", "a", "b"), mkAttrInts("values_int64s", 10, 20), mkAttrInt("default_int64", 7)))
	out, err := s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: []int{3}, Data: []string{"b", "z", "a"}}})
	require.NoError(t, err)
	got, ok := out["out"].(*tensor.Tensor)
	require.True(t, ok)
	assert.Equal(t, []int64{20, 7, 10}, got.Int64s())

	s = newSession(t, mlModel("LabelEncoder", [][]byte{mkValueInfo("x", dtInt64, 2)}, mkValueInfoAnyShape("out", dtString),
		mkAttrInts("keys_int64s", 1, 2), mkAttrStrings("values_strings", "one", "two")))
	out, err = s.RunValues(context.Background(), map[string]any{"x": tensor.FromSlice([]int64{2, 5}, 2)})
	require.NoError(t, err)
	assert.Equal(t, Strings{Shape: []int{2}, Data: []string{"two", "_Unused"}}, out["out"])
}

func TestBinarizerAndArrayFeatureExtractor(t *testing.T) {
	out, err := opBinarizer(testNode("Binarizer", 1, 1, nil, map[string]float32{"threshold": 1}), []*tensor.Tensor{tensor.FromSlice([]float32{0, 1, 2}, 3)})
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0, 1}, out[0].Float64s())
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	out, err = opArrayFeatureExtractor(testNode("ArrayFeatureExtractor", 1, 1, nil, nil), []*tensor.Tensor{x, tensor.FromSlice([]int64{2, 0}, 2)})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, out[0].Shape())
	assert.Equal(t, []float64{3, 1, 6, 4}, out[0].Float64s())
	_, err = opArrayFeatureExtractor(testNode("ArrayFeatureExtractor", 1, 1, nil, nil), []*tensor.Tensor{x, tensor.FromSlice([]int64{3}, 1)})
	require.ErrorContains(t, err, "outside the last axis")
}

func TestTreeEnsembleOneTree(t *testing.T) {
	// Node 0: x0 <= 0.5 ? leaf 0 (weight 1) : node 1; node 1: x0 in {2, 3}
	// ? leaf 1 (weight 10) : leaf 2 (weight 100). One target, summed.
	n := testNode("TreeEnsemble", 5, 1, map[string]int64{"n_targets": 1, "aggregate_function": 1}, nil)
	n.maxElements = 1 << 20
	set := func(name string, v ...int64) { n.attrs[name] = &attribute{name: name, ints: v} }
	set("nodes_featureids", 0, 0)
	set("nodes_truenodeids", 0, 1)
	set("nodes_trueleafs", 1, 1)
	set("nodes_falsenodeids", 1, 2)
	set("nodes_falseleafs", 0, 1)
	set("leaf_targetids", 0, 0, 0)
	set("tree_roots", 0)
	tensorAttr := func(name string, dt int64, raw []byte, count int64) {
		n.attrs[name] = &attribute{name: name, t: &tensorProto{name: name, dataType: dt, dims: []int64{count}, rawData: raw}}
	}
	f32 := func(v ...float32) []byte {
		var b []byte
		for _, x := range v {
			u := math.Float32bits(x)
			b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
		return b
	}
	tensorAttr("nodes_splits", dtFloat, f32(0.5, 0), 2)
	tensorAttr("nodes_modes", dtUint8, []byte{treeLEQ, treeMember}, 2)
	tensorAttr("leaf_weights", dtFloat, f32(1, 10, 100), 3)
	tensorAttr("membership_values", dtFloat, f32(2, 3, float32(math.NaN())), 3)
	x := tensor.FromSlice([]float32{0, 3, 4}, 3, 1)
	out, err := opTreeEnsemble(n, []*tensor.Tensor{x})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 10, 100}, out[0].Float64s())
}
