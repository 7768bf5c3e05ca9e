package optim

import (
	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Default Lion hyperparameters (the paper's), used where LionOptions
// fields are zero.
const (
	DefaultLionLR    = 1e-4
	DefaultLionBeta1 = 0.9
	DefaultLionBeta2 = 0.99
)

// LionOptions are the hyperparameters of Lion. Zero LR and Betas mean the
// defaults (1e-4, (0.9, 0.99)); the other fields are taken as given.
type LionOptions struct {
	// LR is the learning rate (Lion's updates have unit magnitude per
	// element, so it is typically 3-10× smaller than Adam's).
	LR float64
	// Betas are the interpolation factor of the update (β1) and the decay
	// rate of the momentum (β2).
	Betas [2]float64
	// WeightDecay is the decoupled decay param *= 1 - lr·weight_decay.
	WeightDecay float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *LionOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *LionOptions) lrPtr() *float64 { return &o.LR }

func (o *LionOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultLionLR
	}
	if o.Betas == [2]float64{} {
		o.Betas = [2]float64{DefaultLionBeta1, DefaultLionBeta2}
	}
}

func (o *LionOptions) validate(op string) {
	validateAdamLike(op, o.LR, 0, o.Betas, o.WeightDecay)
}

// Lion is the Lion optimizer (EvoLved Sign Momentum; Chen et al. 2023,
// "Symbolic Discovery of Optimization Algorithms", Algorithm 2), which is
// not in PyTorch 1.13. For each parameter:
//
//	g = grad (negated with Maximize)
//	c = β1·m + (1-β1)·g
//	param *= 1 - lr·weight_decay
//	param -= lr·sign(c)
//	m = β2·m + (1-β2)·g
//
// Per-parameter state: "exp_avg" (m).
type Lion struct {
	core[LionOptions, *LionOptions]
}

var _ Optimizer = (*Lion)(nil)

// NewLion returns a Lion optimizer over params (one parameter group).
func NewLion(params []*autograd.Var, opt LionOptions) *Lion {
	keys := []string{"exp_avg"}
	l := &Lion{core: newCore[LionOptions]("Lion", keys, keys)}
	l.addGroup(params, opt)
	return l
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR and
// Betas take the defaults).
func (l *Lion) AddParamGroup(params []*autograd.Var, opt LionOptions) { l.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (l *Lion) Groups() []*Group[LionOptions] { return l.groupList() }

// Step applies one Lion update to every parameter that has a gradient.
func (l *Lion) Step() error {
	for _, g := range l.groups {
		o := g.Options
		b1, b2 := o.Betas[0], o.Betas[1]
		for _, p := range g.Params {
			grad, err := l.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := l.stateOf(p, func(w *tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"exp_avg": tensor.ZerosLike(w)}
			})
			if o.Maximize {
				grad = grad.Neg()
			}
			m := st["exp_avg"]
			c := m.MulScalar(b1).Add(grad.MulScalar(1 - b1))
			if o.WeightDecay != 0 {
				w.CopyFrom(w.MulScalar(1 - o.LR*o.WeightDecay))
			}
			w.CopyFrom(w.Sub(c.Sign().MulScalar(o.LR)))
			m.CopyFrom(m.MulScalar(b2).Add(grad.MulScalar(1 - b2)))
		}
	}
	return nil
}
