package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Default Adam hyperparameters (PyTorch's), used where AdamOptions fields
// are zero.
const (
	DefaultAdamLR  = 1e-3
	DefaultBeta1   = 0.9
	DefaultBeta2   = 0.999
	DefaultAdamEps = 1e-8
	// DefaultAdamWWeightDecay is torch.optim.AdamW's default weight decay.
	// AdamOptions takes WeightDecay as given, so set it explicitly for
	// AdamW.
	DefaultAdamWWeightDecay = 1e-2
)

// AdamOptions are the hyperparameters of Adam and AdamW. Zero LR, Betas and
// Eps mean PyTorch's defaults (1e-3, (0.9, 0.999), 1e-8); the other fields
// are taken as given.
type AdamOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first and second moment averages.
	Betas [2]float64
	// Eps is added to the denominator for stability.
	Eps float64
	// WeightDecay is the L2 penalty added to the gradient (Adam) or the
	// decoupled decay param *= 1 - lr·weight_decay (AdamW).
	WeightDecay float64
	// AMSGrad uses the running maximum of the second moment.
	AMSGrad bool
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *AdamOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "amsgrad", b: &o.AMSGrad},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *AdamOptions) lrPtr() *float64 { return &o.LR }

func (o *AdamOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdamLR
	}
	if o.Betas == [2]float64{} {
		o.Betas = [2]float64{DefaultBeta1, DefaultBeta2}
	}
	if o.Eps == 0 {
		o.Eps = DefaultAdamEps
	}
}

func (o *AdamOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	case !(o.Betas[0] >= 0 && o.Betas[0] < 1):
		panic(fmt.Sprintf("%s: invalid beta1 %v (want [0, 1))", op, o.Betas[0]))
	case !(o.Betas[1] >= 0 && o.Betas[1] < 1):
		panic(fmt.Sprintf("%s: invalid beta2 %v (want [0, 1))", op, o.Betas[1]))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	}
}

// Adam is the Adam optimizer, as torch.optim.Adam (1.13, foreach=False);
// with decoupled weight decay it is AdamW (see NewAdamW). For each
// parameter at step t:
//
//	g = grad (negated with Maximize)
//	Adam:  g += weight_decay·param      AdamW: param *= 1 - lr·weight_decay
//	m = β1·m + (1-β1)·g
//	v = β2·v + (1-β2)·g²
//	v̂ = max(v̂, v) with AMSGrad, else v
//	param -= lr/(1-β1^t) · m / (sqrt(v̂)/sqrt(1-β2^t) + eps)
//
// Per-parameter state: "step", "exp_avg", "exp_avg_sq" and, with AMSGrad,
// "max_exp_avg_sq".
type Adam struct {
	core[AdamOptions, *AdamOptions]
	decoupled bool
}

var _ Optimizer = (*Adam)(nil)

var adamKeys = []string{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

// NewAdam returns an Adam optimizer over params (one parameter group).
func NewAdam(params []*autograd.Var, opt AdamOptions) *Adam {
	a := &Adam{core: newCore[AdamOptions]("Adam", adamKeys, adamKeys[:3])}
	a.addGroup(params, opt)
	return a
}

// NewAdamW returns an AdamW optimizer (Adam with decoupled weight decay)
// over params. Note that opt.WeightDecay is used as given:
// PyTorch's default for AdamW is DefaultAdamWWeightDecay.
func NewAdamW(params []*autograd.Var, opt AdamOptions) *Adam {
	a := &Adam{core: newCore[AdamOptions]("AdamW", adamKeys, adamKeys[:3]), decoupled: true}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Betas and Eps take the defaults).
func (a *Adam) AddParamGroup(params []*autograd.Var, opt AdamOptions) { a.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (a *Adam) Groups() []*Group[AdamOptions] { return a.groupList() }

// Step applies one Adam (or AdamW) update to every parameter that has a
// gradient.
func (a *Adam) Step() error {
	for _, g := range a.groups {
		o := g.Options
		b1, b2 := o.Betas[0], o.Betas[1]
		for _, p := range g.Params {
			grad, err := a.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := a.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{
					"step":       tensor.ScalarOf(0, tensor.Float64),
					"exp_avg":    tensor.ZerosLike(w),
					"exp_avg_sq": tensor.ZerosLike(w),
				}
				a.state[p] = st
			}
			if o.AMSGrad && st["max_exp_avg_sq"] == nil {
				st["max_exp_avg_sq"] = tensor.ZerosLike(w)
			}
			step := st["step"].Item() + 1
			st["step"] = tensor.ScalarOf(step, tensor.Float64)
			if a.fusedStep(w, grad, st, o, step) {
				continue
			}
			if o.Maximize {
				grad = grad.Neg()
			}
			if a.decoupled {
				w.CopyFrom(w.MulScalar(1 - o.LR*o.WeightDecay))
			} else if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			m, v := st["exp_avg"], st["exp_avg_sq"]
			m.CopyFrom(m.MulScalar(b1).Add(grad.MulScalar(1 - b1)))
			v.CopyFrom(v.MulScalar(b2).Add(grad.Mul(grad).MulScalar(1 - b2)))

			bc1 := 1 - math.Pow(b1, step)
			bc2 := 1 - math.Pow(b2, step)
			stepSize := o.LR / bc1
			bc2Sqrt := math.Sqrt(bc2)
			vhat := v
			if o.AMSGrad {
				mx := st["max_exp_avg_sq"]
				mx.CopyFrom(mx.Maximum(v))
				vhat = mx
			}
			denom := vhat.Sqrt().DivScalar(bc2Sqrt).AddScalar(o.Eps)
			w.CopyFrom(w.Sub(m.Div(denom).MulScalar(stepSize)))
		}
	}
	return nil
}

// fusedStep applies the update with tensor.AdamUpdate (one pass, no
// temporaries, the same values as the op-by-op formula) when the parameter
// and its state allow it, and reports whether it did.
func (a *Adam) fusedStep(w, grad *tensor.Tensor, st map[string]*tensor.Tensor, o AdamOptions, step float64) bool {
	m, v, mx := st["exp_avg"], st["exp_avg_sq"], st["max_exp_avg_sq"]
	if !o.AMSGrad {
		mx = nil
	}
	for _, t := range []*tensor.Tensor{w, m, v} {
		if !tensor.FusedSupported(t) {
			return false
		}
	}
	if mx != nil && !tensor.FusedSupported(mx) {
		return false
	}
	tensor.AdamUpdate(w, grad, m, v, mx, tensor.AdamStep{
		LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1], Eps: o.Eps, WeightDecay: o.WeightDecay,
		Step: step, Decoupled: a.decoupled, AMSGrad: o.AMSGrad, Maximize: o.Maximize,
	})
	return true
}
