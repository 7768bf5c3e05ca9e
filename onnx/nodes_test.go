package onnx_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

func TestModelNodesListsTheGraphInOrder(t *testing.T) {
	g := tensor.NewGenerator(1)
	model := nn.NewSequential(nn.NewLinear(g, 3, 2, true), nn.NewReLU())
	var b bytes.Buffer
	require.NoError(t, onnx.Export(model, []*tensor.Tensor{tensor.Zeros([]int{1, 3})}, &b, onnx.ExportOptions{}))
	m, err := onnx.Read(&b)
	require.NoError(t, err)
	nodes := m.Nodes()
	require.NotEmpty(t, nodes)
	last := nodes[len(nodes)-1]
	assert.Equal(t, "Relu", last.OpType)
	assert.Equal(t, []string{m.Outputs[0].Name}, last.Outputs)
	// Each node reads the graph input, an initializer or an earlier output.
	known := map[string]bool{m.Inputs[0].Name: true}
	for _, name := range m.InitializerNames() {
		known[name] = true
	}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			assert.True(t, known[in], "%s reads %q before it is made", n.OpType, in)
		}
		for _, out := range n.Outputs {
			known[out] = true
		}
	}
	// The slices are copies.
	nodes[0].Inputs[0] = "changed"
	assert.NotEqual(t, "changed", m.Nodes()[0].Inputs[0])
}
