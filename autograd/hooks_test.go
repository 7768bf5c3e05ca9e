package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

func TestRegisterHook(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{1, 2, 3}, 3))
	var seen [][]float64
	h1 := x.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
		seen = append(seen, g.Float64s())
		return nil
	})
	h2 := x.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor { return g.MulScalar(10) })

	// x is used twice: the hook sees the summed gradient once.
	y := x.Mul(x).Add(x).Sum(nil, false) // dy/dx = 2x + 1
	require.NoError(t, y.Backward())
	assert.Equal(t, [][]float64{{3, 5, 7}}, seen)
	assert.Equal(t, []float64{30, 50, 70}, x.Grad().Float64s(), "second hook scales the accumulated gradient")

	h2.Remove()
	h2.Remove() // twice is harmless
	x.ZeroGrad()
	require.NoError(t, x.Mul(x).Sum(nil, false).Backward())
	assert.Equal(t, []float64{2, 4, 6}, x.Grad().Float64s())
	h1.Remove()
	x.ZeroGrad()
	require.NoError(t, x.Sum(nil, false).Backward())
	assert.Len(t, seen, 2, "removed hook not called")
}

// TestHookOnIntermediate checks that a hook on a non-leaf changes the
// gradient flowing to its inputs, and that autograd.Grad honors hooks.
func TestHookOnIntermediate(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{1, -2}, 2))
	h := x.MulScalar(3)
	h.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
		return tensor.Where(g.Gt(tensor.ScalarOf(1.5, tensor.Float64)), g, tensor.ZerosLike(g))
	})
	w := tensor.FromSlice([]float64{1, 2}, 2)
	y := h.Mul(autograd.New(w)).Sum(nil, false)
	gs, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, nil, autograd.Options{})
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 6}, gs[0].Value().Float64s())
}

func TestRegisterHookMisuse(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	assert.Panics(t, func() {
		autograd.New(tensor.Zeros([]int{2})).RegisterHook(func(g *tensor.Tensor) *tensor.Tensor { return nil })
	})
	assert.Panics(t, func() { x.RegisterHook(nil) })
	x.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor { return tensor.Zeros([]int{3}) })
	assert.Panics(t, func() { _ = x.Sum(nil, false).Backward() })
	var zero autograd.HookHandle
	zero.Remove()
}
