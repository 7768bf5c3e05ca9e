package autograd_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

func TestUnbindGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_unbind.json") {
		for _, layout := range []string{"contiguous", "strided"} {
			t.Run(c.Name+"/"+layout, func(t *testing.T) {
				x := goldtensor.ToTensor(c.Inputs[0])
				if layout == "strided" {
					x = ixgStrided(x)
				}
				xv := autograd.Param(x)
				pieces := xv.Unbind(c.Int("axis"))
				require.Len(t, pieces, x.Size(c.Int("axis")))
				var loss *autograd.Var
				for k, i := range c.Ints("used") {
					out := pieces[i]
					assert.Equal(t, "Unbind", out.Op())
					golden.AllClose(t, fmt.Sprintf("output %d", k), c.Outputs[k], out.Shape(), out.Value().To(tensor.Float64).Float64s(), 0, 0)
					term := out.Mul(autograd.New(goldtensor.ToTensor(c.GradOutputs[k]))).Sum(nil, false)
					if loss == nil {
						loss = term
					} else {
						loss = loss.Add(term)
					}
				}
				require.NoError(t, loss.Backward())
				golden.AllClose(t, "grad", *c.Grads[0], xv.Grad().Shape(), xv.Grad().To(tensor.Float64).Float64s(), 1e-6, 1e-6)
			})
		}
	}
}

func TestUnbindGradCheck(t *testing.T) {
	gen := tensor.NewGenerator(5)
	x := gen.Randn([]int{3, 4, 2}, tensor.Float64)
	// weighted combines pieces with distinct weights and squares, leaving
	// the pieces in skip without a gradient.
	weighted := func(axis int, skip ...int) func(in []*autograd.Var) *autograd.Var {
		return func(in []*autograd.Var) *autograd.Var {
			var acc *autograd.Var
			for i, p := range in[0].Unbind(axis) {
				if contains(skip, i) {
					continue
				}
				term := p.Mul(p).MulScalar(float64(i+1)).Sum(nil, false)
				if acc == nil {
					acc = term
				} else {
					acc = acc.Add(term)
				}
			}
			return acc
		}
	}
	cases := []struct {
		name  string
		f     func(in []*autograd.Var) *autograd.Var
		input *tensor.Tensor
	}{
		{"axis0", weighted(0), x},
		{"axis1_some_unused", weighted(1, 0, 2), x},
		{"axis_neg", weighted(-1), x},
		{"transposed", weighted(0), x.Transpose(0, 2)},
		{"sliced", weighted(1), x.Slice(1, 0, 4, 2)},
		{"broadcast", weighted(0), gen.Randn([]int{1, 4}, tensor.Float64).Expand(3, 4)},
		{"restacked", func(in []*autograd.Var) *autograd.Var {
			ps := in[0].Unbind(1)
			return autograd.Stack([]*autograd.Var{ps[3], ps[0], ps[0]}, 0).Tanh().Sum(nil, false)
		}, x},
		{"mixed_with_input", func(in []*autograd.Var) *autograd.Var {
			ps := in[0].Unbind(0)
			return ps[1].Mul(in[0].Select(0, 2)).Sum(nil, false).Add(in[0].Sum(nil, false))
		}, x},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, c.input))
			require.NoError(t, autograd.GradGradCheck(c.f, c.input))
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestUnbindEngine(t *testing.T) {
	t.Run("retained graph runs twice", func(t *testing.T) {
		x := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
		ps := x.Unbind(0)
		loss := ps[0].MulScalar(3).Sum(nil, false).Add(ps[1].Mul(ps[1]).Sum(nil, false))
		require.NoError(t, loss.BackwardWith(nil, autograd.Options{RetainGraph: true}))
		assert.Equal(t, []float64{3, 3, 6, 8}, x.Grad().Float64s())
		require.NoError(t, loss.Backward())
		assert.Equal(t, []float64{6, 6, 12, 16}, x.Grad().Float64s())
		require.ErrorIs(t, loss.Backward(), autograd.ErrGraphFreed)
	})
	t.Run("unused pieces get zeros", func(t *testing.T) {
		x := autograd.Param(tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2))
		ps := x.Unbind(0)
		require.NoError(t, ps[1].Sum(nil, false).Backward())
		assert.Equal(t, []float32{0, 0, 1, 1, 0, 0}, x.Grad().Float32s())
	})
	t.Run("autograd.Grad", func(t *testing.T) {
		x := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3))
		ps := x.Unbind(1)
		y := ps[0].Mul(ps[2]).Sum(nil, false)
		gs, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, nil, autograd.Options{})
		require.NoError(t, err)
		assert.Equal(t, []float64{3, 0, 1, 6, 0, 4}, gs[0].Value().Float64s())
		assert.Nil(t, x.Grad())
	})
	t.Run("no gradient no graph", func(t *testing.T) {
		x := autograd.New(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
		ps := x.Unbind(1)
		require.Len(t, ps, 2)
		assert.Equal(t, []float64{2, 4}, ps[1].Value().Float64s())
		assert.False(t, ps[1].RequiresGrad())
		assert.True(t, ps[1].IsLeaf())
	})
	t.Run("axis out of range", func(t *testing.T) {
		x := autograd.Param(tensor.Zeros([]int{2, 3}, tensor.Float64))
		assert.PanicsWithValue(t, "autograd.Unbind: axis 2 out of range for shape [2 3]", func() { x.Unbind(2) })
		assert.PanicsWithValue(t, "autograd.Unbind: axis -3 out of range for shape [2 3]", func() { x.Unbind(-3) })
	})
}

// BenchmarkUnbindBackward unbinds 200 time steps and sums them back: with
// Select per piece the backward was quadratic in the number of pieces.
func BenchmarkUnbindBackward(b *testing.B) {
	x := autograd.Param(tensor.NewGenerator(1).Randn([]int{200, 16, 64}))
	b.ReportAllocs()
	for b.Loop() {
		x.ZeroGrad()
		var acc *autograd.Var
		for _, p := range x.Unbind(0) {
			s := p.Sum(nil, false)
			if acc == nil {
				acc = s
			} else {
				acc = acc.Add(s)
			}
		}
		if err := acc.Backward(); err != nil {
			b.Fatal(err)
		}
	}
}
