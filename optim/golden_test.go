package optim_test

import (
	"bytes"
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

// run is one replay of a golden training case.
type run struct {
	c      golden.Case
	x, y   *tensor.Tensor
	params []*autograd.Var
}

func newRun(c golden.Case) *run {
	r := &run{c: c, x: goldtensor.ToTensor(c.Inputs[0]), y: goldtensor.ToTensor(c.Inputs[1])}
	for _, in := range c.Inputs[2:] {
		r.params = append(r.params, autograd.Param(goldtensor.ToTensor(in)))
	}
	return r
}

// loss computes the MLP's loss on the batch, as the generator does.
func (r *run) loss() *autograd.Var {
	p := r.params
	h := autograd.New(r.x).MatMul(p[0].T()).Add(p[1]).Tanh()
	out := h.MatMul(p[2].T()).Add(p[3])
	if r.c.String("loss") == "mse" {
		return nn.NewMSELoss(nn.ReduceMean).Forward(out, r.y)
	}
	return nn.NewCrossEntropyLoss().Forward(out, r.y)
}

// groups decodes the "groups" attribute into parameter lists and option
// maps.
func (r *run) groups() ([][]*autograd.Var, []map[string]any) {
	var ps [][]*autograd.Var
	var opts []map[string]any
	for _, g := range r.c.Attrs["groups"].([]any) {
		m := g.(map[string]any)
		var list []*autograd.Var
		for _, i := range m["params"].([]any) {
			list = append(list, r.params[int(i.(float64))])
		}
		ps = append(ps, list)
		opts = append(opts, m)
	}
	return ps, opts
}

func num(m map[string]any, k string) float64 {
	v, _ := m[k].(float64)
	return v
}

func flag(m map[string]any, k string) bool {
	v, _ := m[k].(bool)
	return v
}

// optimizer builds the case's optimizer; lrOverride, if non-zero, replaces
// every group's learning rate (to check LoadStateDict restores it).
func (r *run) optimizer(lrOverride float64) optim.Optimizer {
	ps, opts := r.groups()
	lr := func(m map[string]any) float64 {
		if lrOverride != 0 {
			return lrOverride
		}
		return num(m, "lr")
	}
	switch name := r.c.String("optimizer"); name {
	case "sgd":
		mk := func(m map[string]any) optim.SGDOptions {
			return optim.SGDOptions{LR: lr(m), Momentum: num(m, "momentum"), Dampening: num(m, "dampening"),
				WeightDecay: num(m, "weight_decay"), Nesterov: flag(m, "nesterov"), Maximize: flag(m, "maximize")}
		}
		o := optim.NewSGD(ps[0], mk(opts[0]))
		for i := 1; i < len(ps); i++ {
			o.AddParamGroup(ps[i], mk(opts[i]))
		}
		return o
	case "adam", "adamw":
		mk := func(m map[string]any) optim.AdamOptions {
			o := optim.AdamOptions{LR: lr(m), Eps: num(m, "eps"), WeightDecay: num(m, "weight_decay"),
				AMSGrad: flag(m, "amsgrad"), Maximize: flag(m, "maximize")}
			if b, ok := m["betas"].([]any); ok {
				o.Betas = [2]float64{b[0].(float64), b[1].(float64)}
			}
			return o
		}
		newOpt := optim.NewAdam
		if name == "adamw" {
			newOpt = optim.NewAdamW
		}
		o := newOpt(ps[0], mk(opts[0]))
		for i := 1; i < len(ps); i++ {
			o.AddParamGroup(ps[i], mk(opts[i]))
		}
		return o
	default:
		panic("unknown optimizer " + name)
	}
}

// steps runs steps [from, to) and checks the loss and parameters after each
// against the golden history.
func (r *run) steps(t *testing.T, o optim.Optimizer, from, to int) {
	rtol, atol := 1e-9, 1e-11
	if r.c.Inputs[0].DType == golden.Float32 {
		rtol, atol = 1e-5, 1e-5
	}
	for step := from; step < to; step++ {
		if r.c.Has("lr_scale_at") {
			at := r.c.Attrs["lr_scale_at"].([]any)
			if step == int(at[0].(float64)) {
				for g := range o.NumGroups() {
					o.SetGroupLR(g, o.LR(g)*at[1].(float64))
				}
			}
		}
		o.ZeroGrad()
		l := r.loss()
		require.NoError(t, l.Backward())
		require.NoError(t, o.Step())
		golden.AllClose(t, fmt.Sprintf("loss before step %d", step),
			golden.Tensor{Shape: []int{}, DType: golden.Float64, Data: r.c.Outputs[0].Data[step : step+1]},
			l.Shape(), l.Value().Float64s(), rtol, atol)
		for i, p := range r.params {
			want := r.c.Outputs[1+i]
			n := want.Numel() / want.Shape[0]
			golden.AllClose(t, fmt.Sprintf("param %d after step %d", i, step),
				golden.Tensor{Shape: want.Shape[1:], DType: want.DType, Data: want.Data[step*n : (step+1)*n]},
				p.Shape(), p.Value().Float64s(), rtol, atol)
		}
	}
}

// TestGoldenTraining replays 20 PyTorch optimizer steps on a small MLP and
// compares the losses and every parameter after each step.
func TestGoldenTraining(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim.json") {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(c)
			r.steps(t, r.optimizer(0), 0, 20)
		})
	}
}

// TestGoldenResume runs 10 steps, saves the optimizer state as safetensors,
// restores it into a fresh optimizer built with a wrong learning rate over
// fresh parameters holding the same values, and checks that the last 10
// steps still match PyTorch's run.
func TestGoldenResume(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_optim.json") {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(c)
			o := r.optimizer(0)
			r.steps(t, o, 0, 10)
			var buf bytes.Buffer
			require.NoError(t, nn.EncodeTensors(&buf, o.StateDict(), nil))

			for i, p := range r.params {
				r.params[i] = autograd.Param(p.Value().Clone())
			}
			o2 := r.optimizer(123)
			sd, _, err := nn.DecodeTensors(buf.Bytes())
			require.NoError(t, err)
			require.NoError(t, o2.LoadStateDict(sd))
			r.steps(t, o2, 10, 20)
		})
	}
}
