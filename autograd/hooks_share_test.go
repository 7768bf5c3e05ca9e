package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// keeper is a gradient hook that keeps every tensor it is shown, with a
// snapshot of its values at the time.
type keeper struct {
	kept  []*tensor.Tensor
	saved [][]float64
}

func (k *keeper) hook(g *tensor.Tensor) *tensor.Tensor {
	k.kept = append(k.kept, g)
	k.saved = append(k.saved, g.Float64s())
	return nil
}

// unchanged asserts that every kept tensor still holds its snapshot.
func (k *keeper) unchanged(t *testing.T) {
	t.Helper()
	for i, g := range k.kept {
		assert.Equal(t, k.saved[i], g.Float64s(), "kept gradient %d was written after the hook saw it", i)
	}
}

// linearLoss is a graph whose gradient for w a backward rule allocates
// itself, so the leaf may adopt it.
func linearLoss(w *autograd.Var) *autograd.Var {
	x := autograd.New(tensor.FromSlice([]float64{1, -2, 3, 0.5, 2, -1}, 2, 3))
	return x.MatMul(w.T()).Square().Sum(nil, false)
}

func newW() *autograd.Var {
	return autograd.Param(tensor.FromSlice([]float64{0.5, -1, 2, 1.5, 0.25, -0.75}, 2, 3))
}

// wantGrad is d linearLoss / dw for newW's value, from a hook-free leaf.
func wantGrad(t *testing.T) []float64 {
	w := newW()
	require.NoError(t, linearLoss(w).Backward())
	return w.Grad().Float64s()
}

// A SharesGrad hook lets the leaf keep the tensor the hook saw; autograd
// itself never writes into it afterwards, even when a later pass
// accumulates into the same leaf.
func TestSharesGradHookAdopts(t *testing.T) {
	want := wantGrad(t)
	w := newW()
	var k keeper
	w.RegisterHookWith(k.hook, autograd.HookOptions{SharesGrad: true})
	require.NoError(t, linearLoss(w).Backward())
	require.Len(t, k.kept, 1)
	assert.Equal(t, want, w.Grad().Float64s())
	assert.True(t, w.Grad().SharesStorage(k.kept[0]), "the gradient is adopted, not copied")

	require.NoError(t, linearLoss(w).Backward())
	require.Len(t, k.kept, 2)
	k.unchanged(t)
	for i := range want {
		assert.InDelta(t, 2*want[i], w.Grad().Float64s()[i], 1e-12)
	}
	for _, g := range k.kept {
		assert.False(t, w.Grad().SharesStorage(g), "an accumulated gradient is a fresh sum")
	}
}

// Without SharesGrad (or when any hook lacks it, or a hook replaces the
// gradient) the leaf's Grad never aliases a tensor a hook saw or returned,
// so writing Grad in place, accumulating over several passes and retaining
// the graph leave every kept tensor as it was.
func TestHookKeptGradNotAliased(t *testing.T) {
	cases := []struct {
		name     string
		register func(w *autograd.Var, k *keeper)
	}{
		{"plain hook", func(w *autograd.Var, k *keeper) { w.RegisterHook(k.hook) }},
		{"plain hook after a sharing one", func(w *autograd.Var, k *keeper) {
			w.RegisterHookWith(func(*tensor.Tensor) *tensor.Tensor { return nil }, autograd.HookOptions{SharesGrad: true})
			w.RegisterHook(k.hook)
		}},
		{"plain hook before a sharing one", func(w *autograd.Var, k *keeper) {
			w.RegisterHook(k.hook)
			w.RegisterHookWith(func(*tensor.Tensor) *tensor.Tensor { return nil }, autograd.HookOptions{SharesGrad: true})
		}},
		{"sharing hook returning a kept replacement", func(w *autograd.Var, k *keeper) {
			w.RegisterHookWith(func(g *tensor.Tensor) *tensor.Tensor {
				r := g.Clone()
				k.hook(r)
				return r
			}, autograd.HookOptions{SharesGrad: true})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := wantGrad(t)
			w := newW()
			var k keeper
			c.register(w, &k)
			require.NoError(t, linearLoss(w).Backward())
			require.Len(t, k.kept, 1)
			assert.Equal(t, want, w.Grad().Float64s())
			assert.False(t, w.Grad().SharesStorage(k.kept[0]))
			w.Grad().MulScalarInPlace(0) // an optimizer writing Grad in place
			k.unchanged(t)

			w.ZeroGrad()
			loss := linearLoss(w)
			require.NoError(t, loss.BackwardWith(nil, autograd.Options{RetainGraph: true}))
			require.NoError(t, loss.Backward())
			require.Len(t, k.kept, 3)
			k.unchanged(t)
			for i := range want {
				assert.InDelta(t, 2*want[i], w.Grad().Float64s()[i], 1e-12)
			}
			for _, g := range k.kept {
				assert.False(t, w.Grad().SharesStorage(g))
			}
		})
	}
}

// A SharesGrad hook does not let a leaf adopt a gradient the pass does not
// own: Add hands one tensor to both operands, and Expand's gradient may be
// the incoming one, so each leaf still gets its own copy.
func TestSharesGradHookSharedIncoming(t *testing.T) {
	a := autograd.Param(tensor.FromSlice([]float64{1, 2, 3}, 3))
	b := autograd.Param(tensor.FromSlice([]float64{4, 5, 6}, 3))
	var ka, kb keeper
	a.RegisterHookWith(ka.hook, autograd.HookOptions{SharesGrad: true})
	b.RegisterHookWith(kb.hook, autograd.HookOptions{SharesGrad: true})
	seed := tensor.FromSlice([]float64{1, 10, 100}, 3)
	y := a.Add(b)
	require.NoError(t, y.BackwardWith(seed, autograd.Options{}))
	assert.Equal(t, []float64{1, 10, 100}, a.Grad().Float64s())
	assert.Equal(t, []float64{1, 10, 100}, b.Grad().Float64s())
	assert.False(t, a.Grad().SharesStorage(b.Grad()))
	assert.False(t, a.Grad().SharesStorage(seed))
	a.Grad().MulScalarInPlace(0)
	assert.Equal(t, []float64{1, 10, 100}, b.Grad().Float64s())
	assert.Equal(t, []float64{1, 10, 100}, seed.Float64s())
	ka.unchanged(t)
	kb.unchanged(t)
}

// With CreateGraph a SharesGrad hook still sees the recorded gradient, and
// the gradient stays differentiable.
func TestSharesGradHookCreateGraph(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{1, 2, 3}, 3))
	var k keeper
	x.RegisterHookWith(k.hook, autograd.HookOptions{SharesGrad: true})
	y := x.Mul(x).Mul(x).Sum(nil, false) // dy/dx = 3x², d²y/dx² summed = 6x
	require.NoError(t, y.BackwardWith(nil, autograd.Options{CreateGraph: true}))
	assert.Equal(t, []float64{3, 12, 27}, x.GradVar().Value().Float64s())
	g := x.GradVar()
	x.ZeroGrad()
	require.NoError(t, g.Sum(nil, false).Backward())
	assert.Equal(t, []float64{6, 12, 18}, x.Grad().Float64s())
	k.unchanged(t)
}

// With RetainGraph the pass owns no gradient a rule returned, so even a
// SharesGrad hook's leaf gets a copy: writing Grad in place between passes
// cannot reach anything the retained graph uses again.
func TestSharesGradHookRetainGraph(t *testing.T) {
	want := wantGrad(t)
	w := newW()
	var k keeper
	w.RegisterHookWith(k.hook, autograd.HookOptions{SharesGrad: true})
	loss := linearLoss(w)
	require.NoError(t, loss.BackwardWith(nil, autograd.Options{RetainGraph: true}))
	assert.Equal(t, want, w.Grad().Float64s())
	w.Grad().MulScalarInPlace(0)
	require.NoError(t, loss.BackwardWith(nil, autograd.Options{RetainGraph: true}))
	assert.Equal(t, want, w.Grad().Float64s())
	require.Len(t, k.kept, 2)
	k.unchanged(t)
	for _, g := range k.kept {
		assert.False(t, w.Grad().SharesStorage(g))
	}
}
