package autograd

import (
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeInfoReadsOpsAttrsAndInputs(t *testing.T) {
	x := Param(tensor.FromSlice([]float64{1, -2, 3, -4, 5, -6}, 2, 3))
	y := x.Reshape(3, 2)
	n, ok := y.Node()
	require.True(t, ok)
	assert.Equal(t, "Reshape", n.Op)
	assert.Equal(t, []int{3, 2}, n.Attrs["shape"])
	require.Len(t, n.Inputs, 1)
	assert.Same(t, x, n.Inputs[0])

	s := y.Sum([]int{1}, true)
	n, ok = s.Node()
	require.True(t, ok)
	assert.Equal(t, "Sum", n.Op)
	assert.Equal(t, []int{1}, n.Attrs["axes"])
	assert.Equal(t, true, n.Attrs["keepDim"])

	_, ok = x.Node()
	assert.False(t, ok, "a leaf has no node")
	_, ok = New(tensor.Ones([]int{2})).Exp().Node()
	assert.False(t, ok, "nothing is recorded without a gradient")

	l := LeakyReLU(x, 0.1)
	c, ok := l.Composite()
	require.True(t, ok)
	assert.Equal(t, "LeakyReLU", c.Op)
	assert.Equal(t, 0.1, c.Attrs["negativeSlope"])
	assert.Same(t, x, c.Inputs[0])
	n, _ = l.Node()
	assert.Equal(t, "Where", n.Op)
	_, ok = x.Exp().Composite()
	assert.False(t, ok)

	n.Attrs["cond"] = nil // a copy: the graph keeps its own map
	n2, _ := l.Node()
	assert.NotNil(t, n2.Attrs["cond"])
}
