package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Backward lets a leaf keep a gradient that an op's rule allocated itself
// (no copy). These tests check the values and that no adopted gradient
// shares storage with anything else the caller can reach.
func TestAdoptedGradients(t *testing.T) {
	x := func() *tensor.Tensor { return tensor.FromSlice([]float64{1, -2, 3, 0.5, 2, -1}, 2, 3) }

	cases := []struct {
		name string
		f    func(x, w, b *autograd.Var) *autograd.Var
	}{
		{"linear", func(x, w, b *autograd.Var) *autograd.Var { return x.MatMul(w.T()).Add(b) }},
		{"linear twice", func(x, w, b *autograd.Var) *autograd.Var {
			return x.MatMul(w.T()).Add(b).Relu().Add(x.MatMul(w.T()).MulScalar(2))
		}},
		{"leaf also used directly", func(x, w, b *autograd.Var) *autograd.Var {
			return x.MatMul(w.T()).Add(b).Add(w.Sum([]int{1}, false).Unsqueeze(0))
		}},
		{"batched input", func(x, w, b *autograd.Var) *autograd.Var {
			return x.Reshape(1, 2, 3).Expand(2, 2, 3).MatMul(w.T()).Add(b)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wt := tensor.FromSlice([]float64{0.5, -1, 2, 1.5, 0.25, -0.75, 1, 2, -0.5, 0.3, 0.7, -1.2}, 4, 3)
			bt := tensor.FromSlice([]float64{0.1, -0.2, 0.3, 0.4}, 4)
			xv, wv, bv := autograd.Param(x()), autograd.Param(wt), autograd.Param(bt)
			y := c.f(xv, wv, bv)
			require.NoError(t, y.Square().Sum(nil, false).Backward())

			// Reference: the same graph through autograd.Grad, whose
			// results never come from adoption.
			xr, wr, br := autograd.Param(x()), autograd.Param(wt.Clone()), autograd.Param(bt.Clone())
			gs, err := autograd.Grad([]*autograd.Var{c.f(xr, wr, br).Square().Sum(nil, false)}, []*autograd.Var{xr, wr, br}, nil, autograd.Options{})
			require.NoError(t, err)
			leaves := []*autograd.Var{xv, wv, bv}
			for i, l := range leaves {
				assert.InDeltaSlice(t, gs[i].Value().Float64s(), l.Grad().Float64s(), 1e-12)
				assert.True(t, l.Grad().IsContiguous())
				assert.False(t, l.Grad().SharesStorage(l.Value()))
				assert.False(t, l.Grad().SharesStorage(y.Value()))
				for j, o := range leaves {
					if i != j {
						assert.False(t, l.Grad().SharesStorage(o.Grad()))
					}
				}
			}
			// Writing one gradient in place leaves the others intact.
			before := bv.Grad().Float64s()
			wv.Grad().MulScalarInPlace(0)
			xv.Grad().MulScalarInPlace(0)
			assert.Equal(t, before, bv.Grad().Float64s())
		})
	}
}

// With RetainGraph the rules run again, so nothing is adopted across passes:
// a second pass adds the same gradient, whatever was written in between.
func TestAdoptedGradientsRetainGraph(t *testing.T) {
	w := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
	x := autograd.New(tensor.FromSlice([]float64{1, -1, 0.5, 2}, 2, 2))
	y := x.MatMul(w.T()).Sum(nil, false)
	require.NoError(t, y.BackwardWith(nil, autograd.Options{RetainGraph: true}))
	first := w.Grad().Float64s()
	assert.Equal(t, []float64{1.5, 1, 1.5, 1, 1.5, 1}, first)
	w.Grad().MulScalarInPlace(10)
	require.NoError(t, y.BackwardWith(nil, autograd.Options{}))
	assert.Equal(t, []float64{16.5, 11, 16.5, 11, 16.5, 11}, w.Grad().Float64s())
}

// A rule recorded through Custom may return a tensor its caller keeps; the
// leaf must get a copy.
func TestCustomGradientNotAdopted(t *testing.T) {
	kept := tensor.FromSlice([]float64{7, 8}, 2)
	p := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	out := autograd.Custom("Keep", p.Value().Clone(), []*autograd.Var{p}, nil, func(_ *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
		return []*autograd.Var{autograd.New(kept)}
	})
	require.NoError(t, out.BackwardWith(tensor.FromSlice([]float64{1, 1}, 2), autograd.Options{}))
	assert.False(t, p.Grad().SharesStorage(kept))
	p.Grad().MulScalarInPlace(0)
	assert.Equal(t, []float64{7, 8}, kept.Float64s())
}

// The matrix product's gradient for a transposed right operand is formed in
// the layout behind the view; check it numerically, 2-d and batched.
func TestMatMulTransposedOperandGradCheck(t *testing.T) {
	g := tensor.NewGenerator(3)
	cases := []struct {
		name string
		a    []int
	}{
		{"2d", []int{3, 4}},
		{"batched", []int{2, 3, 4}},
		{"vector", []int{4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := g.Randn(c.a, tensor.Float64)
			w := g.Randn([]int{5, 4}, tensor.Float64)
			require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
				return in[0].MatMul(in[1].T())
			}, a, w))
		})
	}
}
