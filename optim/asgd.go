package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// ASGDOptions are the hyperparameters of ASGD, as torch.optim.ASGD's. Every
// field is taken as given (zero is a meaningful value for most of them), so
// start from DefaultASGDOptions for PyTorch's defaults.
type ASGDOptions struct {
	// LR is the learning rate.
	LR float64
	// Lambd is the decay term.
	Lambd float64
	// Alpha is the power of the learning-rate decay.
	Alpha float64
	// T0 is the step at which averaging starts.
	T0 float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

// DefaultASGDOptions returns torch.optim.ASGD's defaults: lr 1e-2, lambd
// 1e-4, alpha 0.75, t0 1e6, no weight decay.
func DefaultASGDOptions() ASGDOptions {
	return ASGDOptions{LR: 1e-2, Lambd: 1e-4, Alpha: 0.75, T0: 1e6}
}

func (o *ASGDOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "lambd", f: &o.Lambd},
		{name: "alpha", f: &o.Alpha},
		{name: "t0", f: &o.T0},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *ASGDOptions) lrPtr() *float64 { return &o.LR }

func (o *ASGDOptions) withDefaults() {}

func (o *ASGDOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	case o.Lambd != o.Lambd || o.Alpha != o.Alpha || o.T0 != o.T0:
		panic(fmt.Sprintf("%s: NaN hyperparameter (lambd=%v, alpha=%v, t0=%v)", op, o.Lambd, o.Alpha, o.T0))
	}
}

// ASGD is averaged stochastic gradient descent (Polyak and Juditsky 1992),
// as torch.optim.ASGD (1.13, foreach=False). For each parameter at step t,
// with η and μ from the previous step (η = lr and μ = 1 at the first):
//
//	g = grad (negated with Maximize) + weight_decay·param
//	param = param·(1 - λ·η) - η·g
//	ax = param if μ = 1, else ax + μ·(param - ax)
//	η = lr / (1 + λ·lr·t)^α
//	μ = 1 / max(1, t - t0)
//
// ax, the running average of the parameter, is what ASGD returns as the
// solution: read it with Averaged. As in PyTorch, η and μ are stored in
// single precision (torch keeps them in float32 tensors), so trajectories
// match torch's exactly.
//
// Per-parameter state: "step", "eta", "mu" (scalars) and "ax".
type ASGD struct {
	core[ASGDOptions, *ASGDOptions]
}

var _ Optimizer = (*ASGD)(nil)

// NewASGD returns an ASGD optimizer over params (one parameter group).
func NewASGD(params []*autograd.Var, opt ASGDOptions) *ASGD {
	keys := []string{"step", "eta", "mu", "ax"}
	a := &ASGD{core: newCore[ASGDOptions]("ASGD", keys, keys)}
	a.scalars = []string{"eta", "mu"}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters.
func (a *ASGD) AddParamGroup(params []*autograd.Var, opt ASGDOptions) { a.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (a *ASGD) Groups() []*Group[ASGDOptions] { return a.groupList() }

// Averaged returns the running average of p's values ("ax"), or nil if p
// has not been updated yet.
func (a *ASGD) Averaged(p *autograd.Var) *tensor.Tensor {
	if st := a.state[p]; st != nil {
		return st["ax"]
	}
	return nil
}

// f32 rounds x to single precision, as a float32 torch tensor holds it.
func f32(x float64) float64 { return float64(float32(x)) }

// Step applies one ASGD update to every parameter that has a gradient.
func (a *ASGD) Step() error {
	for _, g := range a.groups {
		o := g.Options
		for _, p := range g.Params {
			grad, err := a.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			if o.Maximize {
				grad = grad.Neg()
			}
			st := a.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{
					"step": tensor.ScalarOf(0, tensor.Float64),
					"eta":  tensor.ScalarOf(f32(o.LR), tensor.Float64),
					"mu":   tensor.ScalarOf(1, tensor.Float64),
					"ax":   tensor.ZerosLike(w),
				}
				a.state[p] = st
			}
			step := st["step"].Item() + 1
			st["step"] = tensor.ScalarOf(step, tensor.Float64)
			eta, mu := st["eta"].Item(), st["mu"].Item()
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			w.CopyFrom(w.MulScalar(1 - o.Lambd*eta).Sub(grad.MulScalar(eta)))
			ax := st["ax"]
			if mu != 1 {
				ax.CopyFrom(ax.Add(w.Sub(ax).MulScalar(mu)))
			} else {
				ax.CopyFrom(w)
			}
			st["eta"] = tensor.ScalarOf(f32(o.LR/math.Pow(1+o.Lambd*o.LR*step, o.Alpha)), tensor.Float64)
			st["mu"] = tensor.ScalarOf(f32(1/math.Max(1, step-o.T0)), tensor.Float64)
		}
	}
	return nil
}
