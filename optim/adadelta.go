package optim

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Default Adadelta hyperparameters (PyTorch's), used where AdadeltaOptions
// fields are zero.
const (
	DefaultAdadeltaLR  = 1.0
	DefaultAdadeltaRho = 0.9
	DefaultAdadeltaEps = 1e-6
)

// AdadeltaOptions are the hyperparameters of Adadelta, as
// torch.optim.Adadelta's. Zero LR, Rho and Eps mean PyTorch's defaults
// (1.0, 0.9, 1e-6); the other fields are taken as given.
type AdadeltaOptions struct {
	// LR scales the computed update.
	LR float64
	// Rho is the decay rate of the squared-gradient and squared-update
	// averages.
	Rho float64
	// Eps is added inside the square roots for stability.
	Eps float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *AdadeltaOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "rho", f: &o.Rho},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *AdadeltaOptions) lrPtr() *float64 { return &o.LR }

func (o *AdadeltaOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdadeltaLR
	}
	if o.Rho == 0 {
		o.Rho = DefaultAdadeltaRho
	}
	if o.Eps == 0 {
		o.Eps = DefaultAdadeltaEps
	}
}

func (o *AdadeltaOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Rho >= 0 && o.Rho <= 1):
		panic(fmt.Sprintf("%s: invalid rho %v (want [0, 1])", op, o.Rho))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	}
}

// Adadelta is the Adadelta optimizer, as torch.optim.Adadelta (1.13,
// foreach=False). For each parameter:
//
//	g = grad (negated with Maximize) + weight_decay·param
//	v = ρ·v + (1-ρ)·g²
//	δ = sqrt(u + eps)/sqrt(v + eps) · g
//	u = ρ·u + (1-ρ)·δ²
//	param -= lr·δ
//
// Per-parameter state: "step", "square_avg" (v) and "acc_delta" (u).
type Adadelta struct {
	core[AdadeltaOptions, *AdadeltaOptions]
}

var _ Optimizer = (*Adadelta)(nil)

// NewAdadelta returns an Adadelta optimizer over params (one parameter
// group).
func NewAdadelta(params []*autograd.Var, opt AdadeltaOptions) *Adadelta {
	keys := []string{"step", "square_avg", "acc_delta"}
	a := &Adadelta{core: newCore[AdadeltaOptions]("Adadelta", keys, keys)}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Rho and Eps take the defaults).
func (a *Adadelta) AddParamGroup(params []*autograd.Var, opt AdadeltaOptions) {
	a.addGroup(params, opt)
}

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (a *Adadelta) Groups() []*Group[AdadeltaOptions] { return a.groupList() }

// Step applies one Adadelta update to every parameter that has a gradient.
func (a *Adadelta) Step() error {
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
			st := a.stateOf(p, func(w *tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{
					"step":       tensor.ScalarOf(0, tensor.Float64),
					"square_avg": tensor.ZerosLike(w),
					"acc_delta":  tensor.ZerosLike(w),
				}
			})
			bumpStep(st)
			if o.Maximize {
				grad = grad.Neg()
			}
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			v, u := st["square_avg"], st["acc_delta"]
			v.CopyFrom(v.MulScalar(o.Rho).Add(grad.Mul(grad).MulScalar(1 - o.Rho)))
			std := v.AddScalar(o.Eps).Sqrt()
			delta := u.AddScalar(o.Eps).Sqrt().Div(std).Mul(grad)
			u.CopyFrom(u.MulScalar(o.Rho).Add(delta.Mul(delta).MulScalar(1 - o.Rho)))
			w.CopyFrom(w.Sub(delta.MulScalar(o.LR)))
		}
	}
	return nil
}
