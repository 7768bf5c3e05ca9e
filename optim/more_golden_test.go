package optim_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
)

func pair(m map[string]any, k string) [2]float64 {
	v, ok := m[k].([]any)
	if !ok {
		return [2]float64{}
	}
	return [2]float64{v[0].(float64), v[1].(float64)}
}

// build makes an optimizer from its first group's options and adds the
// other groups.
func build[O any, T interface{ AddParamGroup([]*autograd.Var, O) }](ps [][]*autograd.Var, opts []map[string]any,
	mk func(map[string]any) O, newOpt func([]*autograd.Var, O) T) T {
	o := newOpt(ps[0], mk(opts[0]))
	for i := 1; i < len(ps); i++ {
		o.AddParamGroup(ps[i], mk(opts[i]))
	}
	return o
}

// moreOptimizer builds the optimizer of a golden_optim_more case;
// lrOverride, if non-zero, replaces every group's learning rate.
func (r *run) moreOptimizer(lrOverride float64) optim.Optimizer {
	ps, opts := r.groups()
	lr := func(m map[string]any) float64 {
		if lrOverride != 0 {
			return lrOverride
		}
		return num(m, "lr")
	}
	switch name := r.c.String("optimizer"); name {
	case "adagrad":
		return build(ps, opts, func(m map[string]any) optim.AdagradOptions {
			return optim.AdagradOptions{LR: lr(m), LRDecay: num(m, "lr_decay"), WeightDecay: num(m, "weight_decay"),
				InitialAccumulatorValue: num(m, "initial_accumulator_value"), Eps: num(m, "eps"), Maximize: flag(m, "maximize")}
		}, optim.NewAdagrad)
	case "rmsprop":
		return build(ps, opts, func(m map[string]any) optim.RMSpropOptions {
			return optim.RMSpropOptions{LR: lr(m), Alpha: num(m, "alpha"), Eps: num(m, "eps"), WeightDecay: num(m, "weight_decay"),
				Momentum: num(m, "momentum"), Centered: flag(m, "centered"), Maximize: flag(m, "maximize")}
		}, optim.NewRMSprop)
	case "adamax":
		return build(ps, opts, func(m map[string]any) optim.AdamaxOptions {
			return optim.AdamaxOptions{LR: lr(m), Betas: pair(m, "betas"), Eps: num(m, "eps"),
				WeightDecay: num(m, "weight_decay"), Maximize: flag(m, "maximize")}
		}, optim.NewAdamax)
	case "nadam":
		return build(ps, opts, func(m map[string]any) optim.NAdamOptions {
			return optim.NAdamOptions{LR: lr(m), Betas: pair(m, "betas"), Eps: num(m, "eps"),
				WeightDecay: num(m, "weight_decay"), MomentumDecay: num(m, "momentum_decay")}
		}, optim.NewNAdam)
	case "radam":
		return build(ps, opts, func(m map[string]any) optim.RAdamOptions {
			return optim.RAdamOptions{LR: lr(m), Betas: pair(m, "betas"), Eps: num(m, "eps"), WeightDecay: num(m, "weight_decay")}
		}, optim.NewRAdam)
	case "adadelta":
		return build(ps, opts, func(m map[string]any) optim.AdadeltaOptions {
			return optim.AdadeltaOptions{LR: lr(m), Rho: num(m, "rho"), Eps: num(m, "eps"),
				WeightDecay: num(m, "weight_decay"), Maximize: flag(m, "maximize")}
		}, optim.NewAdadelta)
	case "rprop":
		return build(ps, opts, func(m map[string]any) optim.RpropOptions {
			return optim.RpropOptions{LR: lr(m), Etas: pair(m, "etas"), StepSizes: pair(m, "step_sizes"), Maximize: flag(m, "maximize")}
		}, optim.NewRprop)
	case "lion":
		return build(ps, opts, func(m map[string]any) optim.LionOptions {
			return optim.LionOptions{LR: lr(m), Betas: pair(m, "betas"), WeightDecay: num(m, "weight_decay"), Maximize: flag(m, "maximize")}
		}, optim.NewLion)
	default:
		panic("unknown optimizer " + name)
	}
}

// TestGoldenMoreTraining replays 20 steps of each further optimizer on a
// small MLP and compares the losses and every parameter after each step
// with PyTorch's (or, for Lion, the generator's reference) trajectory.
func TestGoldenMoreTraining(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim_more.json") {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(c)
			r.steps(t, r.moreOptimizer(0), 0, 20)
		})
	}
}

// TestGoldenMoreResume runs 10 steps, saves the optimizer state as
// safetensors, restores it into a fresh optimizer built with a wrong
// learning rate over fresh parameters holding the same values, and checks
// that the last 10 steps still match.
func TestGoldenMoreResume(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim_more.json") {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(c)
			o := r.moreOptimizer(0)
			r.steps(t, o, 0, 10)
			var buf bytes.Buffer
			require.NoError(t, nn.EncodeTensors(&buf, o.StateDict(), nil))

			for i, p := range r.params {
				r.params[i] = autograd.Param(p.Value().Clone())
			}
			o2 := r.moreOptimizer(123)
			sd, _, err := nn.DecodeTensors(buf.Bytes())
			require.NoError(t, err)
			require.NoError(t, o2.LoadStateDict(sd))
			for g := range o2.NumGroups() {
				require.Equal(t, o.LR(g), o2.LR(g), "group %d learning rate restored", g)
			}
			r.steps(t, o2, 10, 20)
		})
	}
}
