package optim

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// stateOf returns p's per-parameter state, creating it with init on first
// use.
func (c *core[O, P]) stateOf(p *autograd.Var, init func(w *tensor.Tensor) map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	st := c.state[p]
	if st == nil {
		st = init(p.Value())
		c.state[p] = st
	}
	return st
}

// bumpStep increments the "step" state and returns the new count.
func bumpStep(st map[string]*tensor.Tensor) float64 {
	step := st["step"].Item() + 1
	st["step"] = tensor.ScalarOf(step, tensor.Float64)
	return step
}

// Default Adagrad hyperparameters (PyTorch's), used where AdagradOptions
// fields are zero.
const (
	DefaultAdagradLR  = 1e-2
	DefaultAdagradEps = 1e-10
)

// AdagradOptions are the hyperparameters of Adagrad, as torch.optim.Adagrad's.
// Zero LR and Eps mean PyTorch's defaults (1e-2, 1e-10); the other fields
// are taken as given (their zero values are PyTorch's defaults).
type AdagradOptions struct {
	// LR is the learning rate.
	LR float64
	// LRDecay decays the learning rate: lr/(1 + (t-1)·lr_decay) at step t.
	LRDecay float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// InitialAccumulatorValue is the starting value of the sum of squared
	// gradients, per group (torch 1.13 takes it from the constructor for
	// every group).
	InitialAccumulatorValue float64
	// Eps is added to the denominator for stability.
	Eps float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *AdagradOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "lr_decay", f: &o.LRDecay},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "initial_accumulator_value", f: &o.InitialAccumulatorValue},
		{name: "eps", f: &o.Eps},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *AdagradOptions) lrPtr() *float64 { return &o.LR }

func (o *AdagradOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdagradLR
	}
	if o.Eps == 0 {
		o.Eps = DefaultAdagradEps
	}
}

func (o *AdagradOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.LRDecay >= 0):
		panic(fmt.Sprintf("%s: invalid lr_decay %v", op, o.LRDecay))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	case !(o.InitialAccumulatorValue >= 0):
		panic(fmt.Sprintf("%s: invalid initial_accumulator_value %v", op, o.InitialAccumulatorValue))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	}
}

// Adagrad is the Adagrad optimizer, as torch.optim.Adagrad (1.13,
// foreach=False, dense gradients). For each parameter at step t:
//
//	g = grad (negated with Maximize) + weight_decay·param
//	sum += g²
//	param -= lr/(1 + (t-1)·lr_decay) · g / (sqrt(sum) + eps)
//
// Per-parameter state: "step" and "sum" (starting at
// InitialAccumulatorValue).
type Adagrad struct {
	core[AdagradOptions, *AdagradOptions]
}

var _ Optimizer = (*Adagrad)(nil)

// NewAdagrad returns an Adagrad optimizer over params (one parameter group).
func NewAdagrad(params []*autograd.Var, opt AdagradOptions) *Adagrad {
	keys := []string{"step", "sum"}
	a := &Adagrad{core: newCore[AdagradOptions]("Adagrad", keys, keys)}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR and
// Eps take the defaults).
func (a *Adagrad) AddParamGroup(params []*autograd.Var, opt AdagradOptions) { a.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (a *Adagrad) Groups() []*Group[AdagradOptions] { return a.groupList() }

// Step applies one Adagrad update to every parameter that has a gradient.
func (a *Adagrad) Step() error {
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
					"step": tensor.ScalarOf(0, tensor.Float64),
					"sum":  tensor.FullLike(w, o.InitialAccumulatorValue),
				}
			})
			step := bumpStep(st)
			if o.Maximize {
				grad = grad.Neg()
			}
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			clr := o.LR / (1 + (step-1)*o.LRDecay)
			sum := st["sum"]
			sum.CopyFrom(sum.Add(grad.Mul(grad)))
			std := sum.Sqrt().AddScalar(o.Eps)
			w.CopyFrom(w.Sub(grad.Div(std).MulScalar(clr)))
		}
	}
	return nil
}
