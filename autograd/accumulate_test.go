package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// The backward pass adds a Var's gradient contributions in place into a sum
// it allocated, and lets a leaf keep that sum without a copy. These tests
// check that no two gradients ever share storage through that shortcut.
func TestAccumulateOwnership(t *testing.T) {
	vals := func() *tensor.Tensor { return tensor.FromSlice([]float64{1, -2, 3, 0.5}, 2, 2) }

	t.Run("leaf used many times", func(t *testing.T) {
		x := autograd.Param(vals())
		y := x.Mul(x).Add(x.MulScalar(3)).Add(x.Exp()).Add(x)
		require.NoError(t, y.Sum(nil, false).Backward())
		want := make([]float64, 4)
		for i, v := range vals().Float64s() {
			want[i] = 2*v + 3 + mathExp(v) + 1
		}
		assert.InDeltaSlice(t, want, x.Grad().Float64s(), 1e-12)
	})

	t.Run("a shared sum is copied for each leaf", func(t *testing.T) {
		a, b := autograd.Param(vals()), autograd.Param(vals())
		y := a.Add(b) // its backward hands one tensor to both a and b
		z := y.MulScalar(2).Add(y.MulScalar(3)).Sum(nil, false)
		require.NoError(t, z.Backward())
		assert.Equal(t, []float64{5, 5, 5, 5}, a.Grad().Float64s())
		assert.False(t, a.Grad().SharesStorage(b.Grad()))
		a.Grad().MulScalarInPlace(0)
		assert.Equal(t, []float64{5, 5, 5, 5}, b.Grad().Float64s())
	})

	t.Run("a retained gradient is not a leaf's", func(t *testing.T) {
		x := autograd.Param(vals())
		y := x.MulScalar(1).RetainGrad()
		z := y.Add(y).Add(y).Sum(nil, false)
		require.NoError(t, z.Backward())
		assert.Equal(t, []float64{3, 3, 3, 3}, y.Grad().Float64s())
		assert.Equal(t, []float64{3, 3, 3, 3}, x.Grad().Float64s())
		assert.False(t, x.Grad().SharesStorage(y.Grad()))
	})

	t.Run("a hook's tensor is not the leaf's gradient", func(t *testing.T) {
		x := autograd.Param(vals())
		var seen *tensor.Tensor
		x.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor { seen = g; return nil })
		require.NoError(t, x.Add(x).Add(x).Sum(nil, false).Backward())
		require.NotNil(t, seen)
		assert.False(t, seen.SharesStorage(x.Grad()))
		seen.MulScalarInPlace(0)
		assert.Equal(t, []float64{3, 3, 3, 3}, x.Grad().Float64s())
	})

	t.Run("user gradient is never written", func(t *testing.T) {
		x := autograd.Param(vals())
		y := x.MulScalar(2)
		gout := tensor.FromSlice([]float64{1, 1, 1, 1}, 2, 2)
		out := y.Add(y)
		require.NoError(t, out.BackwardWith(gout, autograd.Options{}))
		assert.Equal(t, []float64{1, 1, 1, 1}, gout.Float64s())
		assert.Equal(t, []float64{4, 4, 4, 4}, x.Grad().Float64s())
	})

	t.Run("retained graph twice", func(t *testing.T) {
		x := autograd.Param(vals())
		z := x.Mul(x).Add(x).Sum(nil, false)
		require.NoError(t, z.BackwardWith(nil, autograd.Options{RetainGraph: true}))
		first := x.Grad().Clone()
		require.NoError(t, z.Backward())
		assert.InDeltaSlice(t, first.MulScalar(2).Float64s(), x.Grad().Float64s(), 1e-12)
	})
}

func mathExp(v float64) float64 { return tensor.ScalarOf(v, tensor.Float64).Exp().Item() }
