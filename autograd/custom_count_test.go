package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// TestCustomBackwardGradientCount checks that a Custom rule returning fewer
// or more gradients than the op has inputs fails the backward pass with an
// error naming the op and both counts (PyTorch raises "returned an
// incorrect number of gradients"), and that one gradient per input, nil
// included, is accepted.
func TestCustomBackwardGradientCount(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int
		want  string
	}{
		{"fewer", 1, "the backward rule of ScaledSum returned 1 gradient for its 2 inputs"},
		{"none", 0, "the backward rule of ScaledSum returned 0 gradients for its 2 inputs"},
		{"more", 3, "the backward rule of ScaledSum returned 3 gradients for its 2 inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
			b := autograd.Param(tensor.FromSlice([]float64{3, 4}, 2))
			out := autograd.Custom("ScaledSum", a.Value().Add(b.Value()), []*autograd.Var{a, b}, nil,
				func(g *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
					res := make([]*autograd.Var, tc.count)
					for i := range res {
						res[i] = g
					}
					return res
				})
			err := out.Sum(nil, false).Backward()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("Function", func(t *testing.T) {
		pair := autograd.NewFunction("PairProduct", func(in []*autograd.Var) *autograd.Var {
			return in[0].Mul(in[1])
		}, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Mul(in[1])} // forgets in[0]'s gradient
		})
		a := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
		b := autograd.Param(tensor.FromSlice([]float64{3, 4}, 2))
		err := pair.Apply(a, b).Sum(nil, false).Backward()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the backward rule of PairProduct returned 1 gradient for its 2 inputs")
	})
	t.Run("nil for an input", func(t *testing.T) {
		a := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
		b := autograd.Param(tensor.FromSlice([]float64{3, 4}, 2))
		out := autograd.Custom("ScaledSum", a.Value().Add(b.Value()), []*autograd.Var{a, b}, nil,
			func(g *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g.MulScalar(2), nil}
			})
		require.NoError(t, out.Sum(nil, false).Backward())
		assert.Equal(t, []float64{2, 2}, a.Grad().Float64s())
		assert.Nil(t, b.Grad())
	})
}
