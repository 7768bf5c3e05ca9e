package optim_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

func TestLBFGSMisuse(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	o := optim.NewLBFGS([]*autograd.Var{p}, optim.LBFGSOptions{})
	require.Error(t, o.Step(), "Step without a closure")
	_, err := o.StepClosure(nil)
	require.Error(t, err)
	boom := errors.New("boom")
	_, err = o.StepClosure(func() (float64, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, optim.LBFGSOptions{LR: 1, MaxIter: 20, MaxEval: 25, ToleranceGrad: 1e-7, ToleranceChange: 1e-9, HistorySize: 100},
		o.Options())
	assert.Panics(t, func() { optim.NewLBFGS(nil, optim.LBFGSOptions{}) })
	assert.Panics(t, func() { optim.NewLBFGS([]*autograd.Var{p}, optim.LBFGSOptions{LR: -1}) })
	assert.Panics(t, func() { o.SetLR(0) })
}

// TestLBFGSQuadratic checks convergence on a convex quadratic: with the
// strong Wolfe search L-BFGS reaches the minimum in a few iterations.
func TestLBFGSQuadratic(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{3, -2, 1}, 3))
	scale := tensor.FromSlice([]float64{1, 10, 100}, 3)
	o := optim.NewLBFGS([]*autograd.Var{p}, optim.LBFGSOptions{LineSearch: optim.StrongWolfe})
	closure := func() (float64, error) {
		p.ZeroGrad()
		l := p.Mul(p).Mul(autograd.New(scale)).Sum(nil, false)
		return l.Item(), l.Backward()
	}
	_, err := o.StepClosure(closure)
	require.NoError(t, err)
	for _, x := range p.Value().Float64s() {
		assert.InDelta(t, 0, x, 1e-6)
	}
	assert.LessOrEqual(t, o.Iterations(), 20)
}

// TestExtraStateResume checks that ASGD, SparseAdam, LAMB, LARS and
// Adafactor (with its factored, non-parameter-shaped state) continue
// identically after a state-dict round trip through safetensors.
func TestExtraStateResume(t *testing.T) {
	grads := [][]float64{{0.5, -1, 0, 0}, {0.1, 0.2, 0, 0}, {0, 0, 1, -1}, {0.3, 0.3, 0.3, 0.3}}
	mk := map[string]func(p *autograd.Var) optim.Optimizer{
		"asgd": func(p *autograd.Var) optim.Optimizer {
			o := optim.DefaultASGDOptions()
			o.T0, o.Lambd = 1, 0.1
			return optim.NewASGD([]*autograd.Var{p}, o)
		},
		"sparse_adam": func(p *autograd.Var) optim.Optimizer {
			return optim.NewSparseAdam([]*autograd.Var{p}, optim.SparseAdamOptions{LR: 0.1})
		},
		"lamb": func(p *autograd.Var) optim.Optimizer {
			return optim.NewLAMB([]*autograd.Var{p}, optim.LAMBOptions{LR: 0.1, WeightDecay: 0.01})
		},
		"lars": func(p *autograd.Var) optim.Optimizer {
			return optim.NewLARS([]*autograd.Var{p}, optim.LARSOptions{LR: 1, Momentum: 0.9})
		},
		"adafactor": func(p *autograd.Var) optim.Optimizer {
			o := optim.DefaultAdafactorOptions()
			o.Beta1 = 0.9
			return optim.NewAdafactor([]*autograd.Var{p}, o)
		},
	}
	for name, newOpt := range mk {
		t.Run(name, func(t *testing.T) {
			p := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
			q := autograd.Param(p.Value().Clone())
			a := newOpt(p)
			for i, g := range grads {
				p.SetGrad(tensor.FromSlice(g, 2, 2))
				require.NoError(t, a.Step())
				if i == 1 {
					b := newOpt(q)
					q.Value().CopyFrom(p.Value())
					var buf bytes.Buffer
					require.NoError(t, nn.EncodeTensors(&buf, a.StateDict(), nil))
					sd, _, err := nn.DecodeTensors(buf.Bytes())
					require.NoError(t, err)
					require.NoError(t, b.LoadStateDict(sd))
					for _, g2 := range grads[2:] {
						q.SetGrad(tensor.FromSlice(g2, 2, 2))
						require.NoError(t, b.Step())
					}
				}
			}
			assert.Equal(t, p.Value().Float64s(), q.Value().Float64s())
		})
	}
}

// TestSparseAdamSkipsUntouchedRows checks that a row with an all-zero
// gradient keeps its value and moments.
func TestSparseAdamSkipsUntouchedRows(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
	o := optim.NewSparseAdam([]*autograd.Var{p}, optim.SparseAdamOptions{LR: 0.1})
	p.SetGrad(tensor.FromSlice([]float64{1, 0, 0, 0, 0, -2}, 3, 2))
	require.NoError(t, o.Step())
	v := p.Value().Float64s()
	// Touched rows move by lr against the gradient's sign (first step), a
	// zero entry of a touched row stays (its moments are zero).
	assert.InDeltaSlice(t, []float64{0.9, 2, 3, 4, 5, 6.1}, v, 1e-6)
	assert.Panics(t, func() { optim.NewSparseAdam([]*autograd.Var{p}, optim.SparseAdamOptions{Eps: -1}) })
}

func TestAdafactorStateShapes(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3))
	o := optim.NewAdafactor([]*autograd.Var{p}, optim.DefaultAdafactorOptions())
	p.SetGrad(tensor.FromSlice([]float64{1, 1, 1, 1, 1, 1}, 2, 3))
	require.NoError(t, o.Step())
	sd := o.StateDict()
	assert.Equal(t, []int{2}, sd["state.0.exp_avg_sq_row"].Shape())
	assert.Equal(t, []int{3}, sd["state.0.exp_avg_sq_col"].Shape())
	sd["state.0.exp_avg_sq_col"] = tensor.Zeros([]int{2, 3}, tensor.Float64)
	require.ErrorContains(t, o.LoadStateDict(sd), "exp_avg_sq_col")
	bad := optim.DefaultAdafactorOptions()
	bad.LR = 0.1
	assert.Panics(t, func() { optim.NewAdafactor([]*autograd.Var{p}, bad) }, "manual lr with relative step")
}
