package autograd

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestCoreBackwardReleasesNodes checks that a backward pass without
// RetainGraph drops every node's inputs, saved tensors and rule, and that
// with RetainGraph (or CreateGraph) it keeps them.
func TestCoreBackwardReleasesNodes(t *testing.T) {
	build := func() (x, y *Var, nodes []*node) {
		x = Param(tensor.FromSlice([]float64{1, 2, 3}))
		w := Param(tensor.FromSlice([]float64{4, 5, 6}))
		h := x.Mul(w)
		e := h.Exp()
		y = e.Sum(nil, false)
		return x, y, []*node{h.node, e.node, y.node}
	}
	for _, opt := range []Options{{}, {RetainGraph: true}, {CreateGraph: true}} {
		x, y, nodes := build()
		for _, n := range nodes {
			require.NotNil(t, n.inputs)
			require.NotNil(t, n.backward)
		}
		require.NotEmpty(t, nodes[0].saved, "Mul saves its inputs")
		require.NoError(t, y.BackwardWith(nil, opt))
		require.NotNil(t, x.Grad())
		keep := opt.RetainGraph || opt.CreateGraph
		for _, n := range nodes {
			if keep {
				assert.NotNil(t, n.inputs, "%s inputs kept with %+v", n.op, opt)
				assert.NotNil(t, n.backward)
				assert.False(t, n.freed)
			} else {
				assert.Nil(t, n.inputs, "%s inputs released", n.op)
				assert.Nil(t, n.saved, "%s saved tensors released", n.op)
				assert.Nil(t, n.backward, "%s rule released", n.op)
				assert.True(t, n.freed)
			}
		}
	}
}

// TestCoreBackwardFreesIntermediates checks that once backward has run, the
// intermediate values the graph held become garbage.
func TestCoreBackwardFreesIntermediates(t *testing.T) {
	x := Param(tensor.FromSlice(make([]float64, 1<<12)))
	y, wp := func() (*Var, weak.Pointer[tensor.Tensor]) {
		h := x.Exp() // saved by Exp (its output) and by Mul (an input)
		return h.Mul(h).Sum(nil, false), weak.Make(h.Value())
	}()
	runtime.GC()
	require.NotNil(t, wp.Value(), "the graph keeps the intermediate alive before backward")
	require.NoError(t, y.Backward())
	runtime.GC()
	assert.Nil(t, wp.Value(), "backward released the intermediate")
	runtime.KeepAlive(y)
}

// TestCoreNoTapeWithoutGrad checks that ops on Vars that do not require a
// gradient record nothing.
func TestCoreNoTapeWithoutGrad(t *testing.T) {
	a := New(tensor.FromSlice([]float64{1, 2}))
	b := a.Mul(a).Exp().Sum(nil, false)
	assert.Nil(t, b.node)
	assert.False(t, b.requiresGrad)
	c := Param(tensor.FromSlice([]float64{1, 2}))
	d := a.Mul(c)
	require.NotNil(t, d.node)
	assert.Equal(t, "Mul", d.node.op)
	assert.Len(t, d.node.saved, 2)
}
