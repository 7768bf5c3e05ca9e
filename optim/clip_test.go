package optim_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// withGrads returns parameters of zeros whose gradients are the inputs.
func withGrads(ins []golden.Tensor) []*autograd.Var {
	var ps []*autograd.Var
	for _, in := range ins {
		g := goldtensor.ToTensor(in)
		p := autograd.Param(tensor.ZerosLike(g))
		p.SetGrad(g)
		ps = append(ps, p)
	}
	return ps
}

func gradData(g *tensor.Tensor) []float64 { return g.To(tensor.Float64).Float64s() }

func TestClipGolden(t *testing.T) {
	n := 0
	for _, c := range golden.Load(t, "testdata/golden_schedules.json") {
		if c.Op != "clip_grad_norm" && c.Op != "clip_grad_value" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			ps := withGrads(c.Inputs)
			rtol, atol := 1e-12, 1e-14
			if c.Inputs[0].DType == golden.Float32 {
				rtol, atol = 2e-6, 1e-7
			}
			if c.Op == "clip_grad_norm" {
				total := optim.ClipGradNorm(ps, c.Float("max_norm"), c.Float("norm_type"))
				want := c.Outputs[len(c.Outputs)-1]
				golden.AllClose(t, c.Name+"/total", want, nil, []float64{total}, rtol, atol)
			} else {
				optim.ClipGradValue(ps, c.Float("clip"))
			}
			for i, p := range ps {
				require.Equal(t, c.Inputs[i].DType == golden.Float32, p.Grad().DType() == tensor.Float32)
				golden.AllClose(t, c.Name, c.Outputs[i], p.Grad().Shape(), gradData(p.Grad()), rtol, atol)
			}
		})
	}
	require.Equal(t, 18, n)
}

func TestClipEdgeCases(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	q := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	// No gradients: nothing to clip.
	require.Equal(t, 0.0, optim.ClipGradNorm([]*autograd.Var{p, q}, 1, 2))
	require.Nil(t, p.Grad())
	// One gradient (3, 4): norm 5, scaled by 1/(5+1e-6); q is skipped.
	p.SetGrad(tensor.FromSlice([]float64{3, 4}, 2))
	require.InDelta(t, 5.0, optim.ClipGradNorm([]*autograd.Var{p, q}, 1, 2), 1e-15)
	c := 1 / (5 + 1e-6)
	require.InDeltaSlice(t, []float64{3 * c, 4 * c}, p.Grad().Float64s(), 1e-15)
	require.Nil(t, q.Grad())
	// Within the bound: unchanged; inf-norm is the largest magnitude.
	p.SetGrad(tensor.FromSlice([]float64{-3, 2}, 2))
	require.Equal(t, 3.0, optim.ClipGradNorm([]*autograd.Var{p}, 10, math.Inf(1)))
	require.Equal(t, []float64{-3, 2}, p.Grad().Float64s())
	optim.ClipGradValue([]*autograd.Var{p, q}, 2.5)
	require.Equal(t, []float64{-2.5, 2}, p.Grad().Float64s())
	require.Panics(t, func() { optim.ClipGradNorm([]*autograd.Var{p}, 1, 0) })
	require.Panics(t, func() { optim.ClipGradValue([]*autograd.Var{p}, -1) })
	require.Panics(t, func() { optim.ClipGradValue([]*autograd.Var{nil}, 1) })
}
