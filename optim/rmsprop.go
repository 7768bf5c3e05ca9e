package optim

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Default RMSprop hyperparameters (PyTorch's), used where RMSpropOptions
// fields are zero.
const (
	DefaultRMSpropLR    = 1e-2
	DefaultRMSpropAlpha = 0.99
	DefaultRMSpropEps   = 1e-8
)

// RMSpropOptions are the hyperparameters of RMSprop, as
// torch.optim.RMSprop's. Zero LR, Alpha and Eps mean PyTorch's defaults
// (1e-2, 0.99, 1e-8); the other fields are taken as given (their zero
// values are PyTorch's defaults).
type RMSpropOptions struct {
	// LR is the learning rate.
	LR float64
	// Alpha is the decay rate of the squared-gradient average.
	Alpha float64
	// Eps is added to the denominator for stability.
	Eps float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// Momentum is the momentum factor (0: none).
	Momentum float64
	// Centered normalizes by the estimated variance of the gradient
	// instead of its second moment.
	Centered bool
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *RMSpropOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "alpha", f: &o.Alpha},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "momentum", f: &o.Momentum},
		{name: "centered", b: &o.Centered},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *RMSpropOptions) lrPtr() *float64 { return &o.LR }

func (o *RMSpropOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultRMSpropLR
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultRMSpropAlpha
	}
	if o.Eps == 0 {
		o.Eps = DefaultRMSpropEps
	}
}

func (o *RMSpropOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	case !(o.Momentum >= 0):
		panic(fmt.Sprintf("%s: invalid momentum %v", op, o.Momentum))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	case !(o.Alpha >= 0):
		panic(fmt.Sprintf("%s: invalid alpha %v", op, o.Alpha))
	}
}

// RMSprop is the RMSprop optimizer, as torch.optim.RMSprop (1.13,
// foreach=False). For each parameter:
//
//	g = grad (negated with Maximize) + weight_decay·param
//	v = α·v + (1-α)·g²
//	Centered: ḡ = α·ḡ + (1-α)·g; avg = sqrt(v - ḡ²) + eps
//	else:     avg = sqrt(v) + eps
//	Momentum > 0: buf = momentum·buf + g/avg; param -= lr·buf
//	else:         param -= lr·g/avg
//
// Per-parameter state: "step", "square_avg", with Momentum > 0
// "momentum_buffer" and with Centered "grad_avg".
type RMSprop struct {
	core[RMSpropOptions, *RMSpropOptions]
}

var _ Optimizer = (*RMSprop)(nil)

// NewRMSprop returns an RMSprop optimizer over params (one parameter group).
func NewRMSprop(params []*autograd.Var, opt RMSpropOptions) *RMSprop {
	keys := []string{"step", "square_avg", "momentum_buffer", "grad_avg"}
	r := &RMSprop{core: newCore[RMSpropOptions]("RMSprop", keys, keys[:2])}
	r.addGroup(params, opt)
	return r
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Alpha and Eps take the defaults).
func (r *RMSprop) AddParamGroup(params []*autograd.Var, opt RMSpropOptions) { r.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (r *RMSprop) Groups() []*Group[RMSpropOptions] { return r.groupList() }

// Step applies one RMSprop update to every parameter that has a gradient.
func (r *RMSprop) Step() error {
	for _, g := range r.groups {
		o := g.Options
		for _, p := range g.Params {
			grad, err := r.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := r.stateOf(p, func(w *tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{
					"step":       tensor.ScalarOf(0, tensor.Float64),
					"square_avg": tensor.ZerosLike(w),
				}
			})
			if o.Momentum > 0 && st["momentum_buffer"] == nil {
				st["momentum_buffer"] = tensor.ZerosLike(w)
			}
			if o.Centered && st["grad_avg"] == nil {
				st["grad_avg"] = tensor.ZerosLike(w)
			}
			bumpStep(st)
			if o.Maximize {
				grad = grad.Neg()
			}
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			v := st["square_avg"]
			v.CopyFrom(v.MulScalar(o.Alpha).Add(grad.Mul(grad).MulScalar(1 - o.Alpha)))
			var avg *tensor.Tensor
			if o.Centered {
				ga := st["grad_avg"]
				ga.CopyFrom(ga.MulScalar(o.Alpha).Add(grad.MulScalar(1 - o.Alpha)))
				avg = v.Sub(ga.Mul(ga)).Sqrt()
			} else {
				avg = v.Sqrt()
			}
			avg = avg.AddScalar(o.Eps)
			if o.Momentum > 0 {
				buf := st["momentum_buffer"]
				buf.CopyFrom(buf.MulScalar(o.Momentum).Add(grad.Div(avg)))
				w.CopyFrom(w.Sub(buf.MulScalar(o.LR)))
			} else {
				w.CopyFrom(w.Sub(grad.Div(avg).MulScalar(o.LR)))
			}
		}
	}
	return nil
}

// Default Rprop hyperparameters (PyTorch's), used where RpropOptions fields
// are zero.
const (
	DefaultRpropLR       = 1e-2
	DefaultRpropEtaMinus = 0.5
	DefaultRpropEtaPlus  = 1.2
	DefaultRpropStepMin  = 1e-6
	DefaultRpropStepMax  = 50
)

// RpropOptions are the hyperparameters of Rprop, as torch.optim.Rprop's.
// Zero LR, Etas and StepSizes mean PyTorch's defaults (1e-2, (0.5, 1.2),
// (1e-6, 50)).
type RpropOptions struct {
	// LR is the initial step size of every element.
	LR float64
	// Etas are the (decrease, increase) factors of the step size, with
	// 0 < Etas[0] < 1 < Etas[1].
	Etas [2]float64
	// StepSizes are the (minimum, maximum) step sizes.
	StepSizes [2]float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *RpropOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "etas", pair: &o.Etas},
		{name: "step_sizes", pair: &o.StepSizes},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *RpropOptions) lrPtr() *float64 { return &o.LR }

func (o *RpropOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultRpropLR
	}
	if o.Etas == [2]float64{} {
		o.Etas = [2]float64{DefaultRpropEtaMinus, DefaultRpropEtaPlus}
	}
	if o.StepSizes == [2]float64{} {
		o.StepSizes = [2]float64{DefaultRpropStepMin, DefaultRpropStepMax}
	}
}

func (o *RpropOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(0 < o.Etas[0] && o.Etas[0] < 1 && 1 < o.Etas[1]):
		panic(fmt.Sprintf("%s: invalid etas (%v, %v) (want 0 < etaminus < 1 < etaplus)", op, o.Etas[0], o.Etas[1]))
	case !(o.StepSizes[0] >= 0 && o.StepSizes[0] <= o.StepSizes[1]):
		panic(fmt.Sprintf("%s: invalid step sizes (%v, %v) (want 0 <= min <= max)", op, o.StepSizes[0], o.StepSizes[1]))
	}
}

// Rprop is the resilient backpropagation optimizer, as torch.optim.Rprop
// (1.13, foreach=False). Each element has its own step size (starting at
// LR); at each step, with g the gradient (negated with Maximize) and prev
// the previous step's g:
//
//	g·prev > 0: step_size *= etaplus
//	g·prev < 0: step_size *= etaminus, and g is taken as 0
//	step_size = clamp(step_size, min, max)
//	param -= sign(g)·step_size
//	prev = g
//
// Per-parameter state: "step", "prev" and "step_size".
type Rprop struct {
	core[RpropOptions, *RpropOptions]
}

var _ Optimizer = (*Rprop)(nil)

// NewRprop returns an Rprop optimizer over params (one parameter group).
func NewRprop(params []*autograd.Var, opt RpropOptions) *Rprop {
	keys := []string{"step", "prev", "step_size"}
	r := &Rprop{core: newCore[RpropOptions]("Rprop", keys, keys)}
	r.addGroup(params, opt)
	return r
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Etas and StepSizes take the defaults).
func (r *Rprop) AddParamGroup(params []*autograd.Var, opt RpropOptions) { r.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not. As in
// PyTorch, LR only sets the initial step size of parameters without state.
func (r *Rprop) Groups() []*Group[RpropOptions] { return r.groupList() }

// Step applies one Rprop update to every parameter that has a gradient.
func (r *Rprop) Step() error {
	for _, g := range r.groups {
		o := g.Options
		for _, p := range g.Params {
			grad, err := r.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := r.stateOf(p, func(w *tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{
					"step":      tensor.ScalarOf(0, tensor.Float64),
					"prev":      tensor.ZerosLike(w),
					"step_size": tensor.FullLike(w, o.LR),
				}
			})
			bumpStep(st)
			if o.Maximize {
				grad = grad.Neg()
			}
			prev, size := st["prev"], st["step_size"]
			prod := grad.Mul(prev)
			zero := tensor.ZerosLike(grad)
			up, down := prod.Gt(zero), prod.Lt(zero)
			factor := tensor.Where(up, tensor.FullLike(grad, o.Etas[1]),
				tensor.Where(down, tensor.FullLike(grad, o.Etas[0]), tensor.OnesLike(grad)))
			size.CopyFrom(size.Mul(factor).Clamp(o.StepSizes[0], o.StepSizes[1]))
			grad = tensor.Where(down, zero, grad)
			w.CopyFrom(w.Sub(grad.Sign().Mul(size)))
			prev.CopyFrom(grad)
		}
	}
	return nil
}
