package optim

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// SGDOptions are the hyperparameters of SGD, as torch.optim.SGD's. The zero
// value of every field but LR is PyTorch's default.
type SGDOptions struct {
	// LR is the learning rate (required: PyTorch has no default).
	LR float64
	// Momentum is the momentum factor (0: plain SGD).
	Momentum float64
	// Dampening damps the gradient added to the momentum buffer.
	Dampening float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// Nesterov enables Nesterov momentum (needs Momentum > 0 and zero
	// Dampening).
	Nesterov bool
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *SGDOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "momentum", f: &o.Momentum},
		{name: "dampening", f: &o.Dampening},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "nesterov", b: &o.Nesterov},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *SGDOptions) lrPtr() *float64 { return &o.LR }

func (o *SGDOptions) withDefaults() {}

func (o *SGDOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Momentum >= 0):
		panic(fmt.Sprintf("%s: invalid momentum %v", op, o.Momentum))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	case o.Dampening != o.Dampening:
		panic(fmt.Sprintf("%s: invalid dampening %v", op, o.Dampening))
	case o.Nesterov && (o.Momentum <= 0 || o.Dampening != 0):
		panic(fmt.Sprintf("%s: Nesterov momentum requires a momentum and zero dampening (momentum=%v, dampening=%v)", op, o.Momentum, o.Dampening))
	}
}

// SGD is stochastic gradient descent with optional momentum, as
// torch.optim.SGD (1.13, foreach=False):
//
//	g = grad (negated with Maximize) + weight_decay·param
//	buf = g at the first step, then momentum·buf + (1-dampening)·g
//	g = g + momentum·buf with Nesterov, else buf
//	param -= lr·g
//
// Per-parameter state: "momentum_buffer".
type SGD struct {
	core[SGDOptions, *SGDOptions]
}

var _ Optimizer = (*SGD)(nil)

// NewSGD returns an SGD optimizer over params (one parameter group).
func NewSGD(params []*autograd.Var, opt SGDOptions) *SGD {
	s := &SGD{core: newCore[SGDOptions]("SGD", []string{"momentum_buffer"}, nil)}
	s.addGroup(params, opt)
	return s
}

// AddParamGroup adds parameters with their own hyperparameters.
func (s *SGD) AddParamGroup(params []*autograd.Var, opt SGDOptions) { s.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (s *SGD) Groups() []*Group[SGDOptions] { return s.groupList() }

// Step applies one SGD update to every parameter that has a gradient.
func (s *SGD) Step() error {
	for _, g := range s.groups {
		o := g.Options
		for _, p := range g.Params {
			d, err := s.gradOf(p)
			if err != nil {
				return err
			}
			if d == nil {
				continue
			}
			w := p.Value()
			if s.fusedStep(p, w, d, o) {
				continue
			}
			if o.Maximize {
				d = d.Neg()
			}
			if o.WeightDecay != 0 {
				d = d.Add(w.MulScalar(o.WeightDecay))
			}
			if o.Momentum != 0 {
				st := s.state[p]
				if st == nil {
					st = map[string]*tensor.Tensor{}
					s.state[p] = st
				}
				buf := st["momentum_buffer"]
				if buf == nil {
					buf = d.Clone()
					st["momentum_buffer"] = buf
				} else {
					buf.CopyFrom(buf.MulScalar(o.Momentum).Add(d.MulScalar(1 - o.Dampening)))
				}
				if o.Nesterov {
					d = d.Add(buf.MulScalar(o.Momentum))
				} else {
					d = buf
				}
			}
			w.CopyFrom(w.Sub(d.MulScalar(o.LR)))
		}
	}
	return nil
}

// fusedStep applies the update with tensor.SGDUpdate (one pass, no
// temporaries, the same values as the op-by-op formula) when the parameter
// and its momentum buffer allow it, and reports whether it did.
func (s *SGD) fusedStep(p *autograd.Var, w, d *tensor.Tensor, o SGDOptions) bool {
	if !tensor.FusedSupported(w) {
		return false
	}
	step := tensor.SGDStep{LR: o.LR, Momentum: o.Momentum, Dampening: o.Dampening, WeightDecay: o.WeightDecay, Nesterov: o.Nesterov, Maximize: o.Maximize}
	var buf *tensor.Tensor
	if o.Momentum != 0 {
		st := s.state[p]
		if st != nil {
			buf = st["momentum_buffer"]
		}
		if buf != nil && !tensor.FusedSupported(buf) {
			return false
		}
		if buf == nil {
			buf = tensor.ZerosLike(w)
			step.InitBuffer = true
			if st == nil {
				st = map[string]*tensor.Tensor{}
				s.state[p] = st
			}
			st["momentum_buffer"] = buf
		}
	}
	tensor.SGDUpdate(w, d, buf, step)
	return true
}
