package optim_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// stepOf returns row step of a stacked golden history.
func stepOf(h golden.Tensor, step int) golden.Tensor {
	n := h.Numel() / h.Shape[0]
	return golden.Tensor{Shape: h.Shape[1:], DType: h.DType, Data: h.Data[step*n : (step+1)*n]}
}

// lbfgsOptions decodes an LBFGS group.
func lbfgsOptions(m map[string]any) optim.LBFGSOptions {
	o := optim.LBFGSOptions{LR: num(m, "lr"), MaxIter: int(num(m, "max_iter")), MaxEval: int(num(m, "max_eval")),
		HistorySize: int(num(m, "history_size"))}
	if s, _ := m["line_search_fn"].(string); s == "strong_wolfe" {
		o.LineSearch = optim.StrongWolfe
	}
	return o
}

// asgdOptions decodes an ASGD group over torch's defaults.
func asgdOptions(m map[string]any) optim.ASGDOptions {
	o := optim.DefaultASGDOptions()
	for k, f := range map[string]*float64{"lr": &o.LR, "lambd": &o.Lambd, "alpha": &o.Alpha, "t0": &o.T0, "weight_decay": &o.WeightDecay} {
		if v, ok := m[k].(float64); ok {
			*f = v
		}
	}
	o.Maximize = flag(m, "maximize")
	return o
}

// extraOptimizer builds a LAMB, LARS or Adafactor case's optimizer.
func extraOptimizer(ps [][]*autograd.Var, opts []map[string]any, name string) optim.Optimizer {
	switch name {
	case "lamb":
		return build(ps, opts, func(m map[string]any) optim.LAMBOptions {
			return optim.LAMBOptions{LR: num(m, "lr"), Betas: pair(m, "betas"), Eps: num(m, "eps"), WeightDecay: num(m, "weight_decay")}
		}, optim.NewLAMB)
	case "lars":
		return build(ps, opts, func(m map[string]any) optim.LARSOptions {
			return optim.LARSOptions{LR: num(m, "lr"), Momentum: num(m, "momentum"), WeightDecay: num(m, "weight_decay"),
				TrustCoefficient: num(m, "trust_coefficient"), Eps: num(m, "eps")}
		}, optim.NewLARS)
	case "adafactor":
		return build(ps, opts, func(m map[string]any) optim.AdafactorOptions {
			o := optim.DefaultAdafactorOptions()
			for k, f := range map[string]*float64{"lr": &o.LR, "clip_threshold": &o.ClipThreshold, "decay_rate": &o.DecayRate,
				"beta1": &o.Beta1, "weight_decay": &o.WeightDecay} {
				if v, ok := m[k].(float64); ok {
					*f = v
				}
			}
			for k, f := range map[string]*bool{"scale_parameter": &o.ScaleParameter, "relative_step": &o.RelativeStep,
				"warmup_init": &o.WarmupInit} {
				if v, ok := m[k].(bool); ok {
					*f = v
				}
			}
			if _, ok := m["eps"]; ok {
				o.Eps = pair(m, "eps")
			}
			return o
		}, optim.NewAdafactor)
	}
	panic("unknown optimizer " + name)
}

// TestGoldenExtraMLP replays ASGD's and LBFGS's torch trajectories and
// LAMB's, LARS's and Adafactor's reference trajectories on a small MLP: the
// loss before each step, every parameter after it and, for ASGD, the
// running averages.
func TestGoldenExtraMLP(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim_extra.json") {
		if c.Op != "mlp" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(c)
			ps, opts := r.groups()
			var asgd *optim.ASGD
			var lbfgs *optim.LBFGS
			var other optim.Optimizer
			switch c.String("optimizer") {
			case "asgd":
				asgd = build(ps, opts, asgdOptions, optim.NewASGD)
				other = asgd
			case "lbfgs":
				lbfgs = optim.NewLBFGS(ps[0], lbfgsOptions(opts[0]))
			default:
				other = extraOptimizer(ps, opts, c.String("optimizer"))
			}
			closure := func() (float64, error) {
				for _, p := range r.params {
					p.ZeroGrad()
				}
				l := r.loss()
				return l.Item(), l.Backward()
			}
			for step := range 20 {
				var loss float64
				var err error
				if other != nil {
					loss, err = closure()
					require.NoError(t, err)
					require.NoError(t, other.Step())
				} else {
					loss, err = lbfgs.StepClosure(closure)
					require.NoError(t, err)
				}
				require.InDelta(t, c.Outputs[0].Data[step], loss, 1e-9*(1+abs(loss)), "loss before step %d", step)
				for i, p := range r.params {
					golden.AllClose(t, fmt.Sprintf("param %d after step %d", i, step), stepOf(c.Outputs[1+i], step),
						p.Shape(), p.Value().Float64s(), 1e-7, 1e-9)
					if asgd != nil {
						ax := asgd.Averaged(p)
						golden.AllClose(t, fmt.Sprintf("average %d after step %d", i, step), stepOf(c.Outputs[5+i], step),
							ax.Shape(), ax.Float64s(), 1e-7, 1e-9)
					}
				}
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestGoldenSparseAdam replays torch's SparseAdam on an embedding table
// with sparse gradients; Ember's dense gradient leaves the rows not looked
// up at zero, and SparseAdam skips them as torch does.
func TestGoldenSparseAdam(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim_extra.json") {
		if c.Op != "embedding" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			e := autograd.Param(goldtensor.ToTensor(c.Inputs[0]))
			idx := goldtensor.ToTensor(c.Inputs[1])
			target := goldtensor.ToTensor(c.Inputs[2])
			_, opts := (&run{c: c}).groupsFor([]*autograd.Var{e})
			m := opts[0]
			o := optim.NewSparseAdam([]*autograd.Var{e}, optim.SparseAdamOptions{LR: num(m, "lr"), Betas: pair(m, "betas"),
				Eps: num(m, "eps"), Maximize: flag(m, "maximize")})
			mse := nn.NewMSELoss(nn.ReduceMean)
			for step := range 20 {
				o.ZeroGrad()
				rows := idx.Select(0, step).Contiguous()
				l := mse.Forward(e.IndexSelect(0, rows).Tanh(), target.IndexSelect(0, rows))
				require.NoError(t, l.Backward())
				require.NoError(t, o.Step())
				require.InDelta(t, c.Outputs[0].Data[step], l.Item(), 1e-10, "loss before step %d", step)
				golden.AllClose(t, fmt.Sprintf("table after step %d", step), stepOf(c.Outputs[1], step),
					e.Shape(), e.Value().Float64s(), 1e-7, 1e-9)
			}
		})
	}
}

// groupsFor decodes the "groups" attribute over the given parameters.
func (r *run) groupsFor(params []*autograd.Var) ([][]*autograd.Var, []map[string]any) {
	r.params = params
	return r.groups()
}

// rosenbrock sets a's and b's gradients to those of the extended
// Rosenbrock function of their concatenation and returns its value.
func rosenbrock(a, b *autograd.Var) float64 {
	x := append(a.Value().Float64s(), b.Value().Float64s()...)
	g := make([]float64, len(x))
	f := 0.0
	for i := 0; i+1 < len(x); i++ {
		u, v := x[i+1]-x[i]*x[i], 1-x[i]
		f += 100*u*u + v*v
		g[i] += -400*u*x[i] - 2*v
		g[i+1] += 200 * u
	}
	a.SetGrad(tensor.FromSlice(g[:a.Value().Numel()], a.Shape()...))
	b.SetGrad(tensor.FromSlice(g[a.Value().Numel():], b.Shape()...))
	return f
}

// TestGoldenLBFGSRosenbrock replays torch's LBFGS (fixed step and strong
// Wolfe line search, history shifting, state across steps) on the extended
// Rosenbrock function split over two parameters.
func TestGoldenLBFGSRosenbrock(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim_extra.json") {
		if c.Op != "rosenbrock" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			a, b := autograd.Param(goldtensor.ToTensor(c.Inputs[0])), autograd.Param(goldtensor.ToTensor(c.Inputs[1]))
			_, opts := (&run{c: c}).groupsFor([]*autograd.Var{a, b})
			o := optim.NewLBFGS([]*autograd.Var{a, b}, lbfgsOptions(opts[0]))
			for step := range 20 {
				loss, err := o.StepClosure(func() (float64, error) { return rosenbrock(a, b), nil })
				require.NoError(t, err)
				require.InDelta(t, c.Outputs[0].Data[step], loss, 1e-7*(1+abs(loss)), "loss before step %d", step)
				golden.AllClose(t, fmt.Sprintf("a after step %d", step), stepOf(c.Outputs[1], step), a.Shape(), a.Value().Float64s(), 1e-7, 1e-9)
				golden.AllClose(t, fmt.Sprintf("b after step %d", step), stepOf(c.Outputs[2], step), b.Shape(), b.Value().Float64s(), 1e-7, 1e-9)
				require.Equal(t, int(c.Outputs[3].Data[step]), o.FuncEvals(), "closure calls after step %d", step)
			}
		})
	}
}
