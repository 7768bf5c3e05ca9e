package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Default learning rate of Adamax and NAdam (PyTorch's); RAdam's is
// DefaultAdamLR. Their other defaults are Adam's.
const DefaultAdamaxLR = 2e-3

// Default NAdam momentum decay (PyTorch's).
const DefaultNAdamMomentumDecay = 4e-3

// validateAdamLike panics unless LR, Eps, betas and weight decay are valid.
func validateAdamLike(op string, lr, eps float64, betas [2]float64, wd float64) {
	switch {
	case !(lr >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, lr))
	case !(eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, eps))
	case !(betas[0] >= 0 && betas[0] < 1):
		panic(fmt.Sprintf("%s: invalid beta1 %v (want [0, 1))", op, betas[0]))
	case !(betas[1] >= 0 && betas[1] < 1):
		panic(fmt.Sprintf("%s: invalid beta2 %v (want [0, 1))", op, betas[1]))
	case !(wd >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, wd))
	}
}

// adamLikeDefaults fills zero betas and eps with Adam's defaults.
func adamLikeDefaults(betas *[2]float64, eps *float64) {
	if *betas == [2]float64{} {
		*betas = [2]float64{DefaultBeta1, DefaultBeta2}
	}
	if *eps == 0 {
		*eps = DefaultAdamEps
	}
}

// newMoments returns the state "step", "exp_avg" and "exp_avg_sq" (or the
// name given for the second moment) for a parameter w.
func newMoments(second string) func(w *tensor.Tensor) map[string]*tensor.Tensor {
	return func(w *tensor.Tensor) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{
			"step":    tensor.ScalarOf(0, tensor.Float64),
			"exp_avg": tensor.ZerosLike(w),
			second:    tensor.ZerosLike(w),
		}
	}
}

// AdamaxOptions are the hyperparameters of Adamax, as torch.optim.Adamax's.
// Zero LR, Betas and Eps mean PyTorch's defaults (2e-3, (0.9, 0.999),
// 1e-8); the other fields are taken as given.
type AdamaxOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first moment and the infinity norm.
	Betas [2]float64
	// Eps is added to |grad| before the running maximum.
	Eps float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *AdamaxOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *AdamaxOptions) lrPtr() *float64 { return &o.LR }

func (o *AdamaxOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdamaxLR
	}
	adamLikeDefaults(&o.Betas, &o.Eps)
}

func (o *AdamaxOptions) validate(op string) {
	validateAdamLike(op, o.LR, o.Eps, o.Betas, o.WeightDecay)
}

// Adamax is the Adamax optimizer (Adam with the infinity norm), as
// torch.optim.Adamax (1.13, foreach=False). For each parameter at step t:
//
//	g = grad (negated with Maximize) + weight_decay·param
//	m = β1·m + (1-β1)·g
//	u = max(β2·u, |g| + eps)
//	param -= lr/(1-β1^t) · m/u
//
// Per-parameter state: "step", "exp_avg" and "exp_inf".
type Adamax struct {
	core[AdamaxOptions, *AdamaxOptions]
}

var _ Optimizer = (*Adamax)(nil)

// NewAdamax returns an Adamax optimizer over params (one parameter group).
func NewAdamax(params []*autograd.Var, opt AdamaxOptions) *Adamax {
	keys := []string{"step", "exp_avg", "exp_inf"}
	a := &Adamax{core: newCore[AdamaxOptions]("Adamax", keys, keys)}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Betas and Eps take the defaults).
func (a *Adamax) AddParamGroup(params []*autograd.Var, opt AdamaxOptions) { a.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (a *Adamax) Groups() []*Group[AdamaxOptions] { return a.groupList() }

// Step applies one Adamax update to every parameter that has a gradient.
func (a *Adamax) Step() error {
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
			st := a.stateOf(p, newMoments("exp_inf"))
			step := bumpStep(st)
			if o.Maximize {
				grad = grad.Neg()
			}
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			m, u := st["exp_avg"], st["exp_inf"]
			m.CopyFrom(m.MulScalar(b1).Add(grad.MulScalar(1 - b1)))
			u.CopyFrom(u.MulScalar(b2).Maximum(grad.Abs().AddScalar(o.Eps)))
			clr := o.LR / (1 - math.Pow(b1, step))
			w.CopyFrom(w.Sub(m.Div(u).MulScalar(clr)))
		}
	}
	return nil
}

// NAdamOptions are the hyperparameters of NAdam, as torch.optim.NAdam's
// (1.13, which has no maximize option). Zero LR, Betas, Eps and
// MomentumDecay mean PyTorch's defaults (2e-3, (0.9, 0.999), 1e-8, 4e-3);
// WeightDecay is taken as given.
type NAdamOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first and second moment averages.
	Betas [2]float64
	// Eps is added to the denominator for stability.
	Eps float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
	// MomentumDecay sets the momentum schedule
	// μ_t = β1·(1 - 0.5·0.96^(t·momentum_decay)).
	MomentumDecay float64
}

func (o *NAdamOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "momentum_decay", f: &o.MomentumDecay},
	}
}

func (o *NAdamOptions) lrPtr() *float64 { return &o.LR }

func (o *NAdamOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdamaxLR
	}
	if o.MomentumDecay == 0 {
		o.MomentumDecay = DefaultNAdamMomentumDecay
	}
	adamLikeDefaults(&o.Betas, &o.Eps)
}

func (o *NAdamOptions) validate(op string) {
	validateAdamLike(op, o.LR, o.Eps, o.Betas, o.WeightDecay)
	if !(o.MomentumDecay >= 0) {
		panic(fmt.Sprintf("%s: invalid momentum decay %v", op, o.MomentumDecay))
	}
}

// NAdam is Adam with Nesterov momentum, as torch.optim.NAdam (1.13,
// foreach=False). For each parameter at step t:
//
//	g = grad + weight_decay·param
//	μ_t = β1·(1 - 0.5·0.96^(t·ψ)), μ_{t+1} likewise (ψ: momentum_decay)
//	Π = Π·μ_t (the product of all μ so far, rounded to float32 as
//	           PyTorch's float32 state tensor does)
//	m = β1·m + (1-β1)·g
//	v = β2·v + (1-β2)·g²
//	d = sqrt(v/(1-β2^t)) + eps
//	param -= lr·(1-μ_t)/(1-Π) · g/d
//	param -= lr·μ_{t+1}/(1-Π·μ_t·μ_{t+1}) · m/d
//
// (The second denominator multiplies by μ_t twice, as torch 1.13 does.)
//
// Per-parameter state: "step", "mu_product" (a scalar), "exp_avg" and
// "exp_avg_sq".
type NAdam struct {
	core[NAdamOptions, *NAdamOptions]
}

var _ Optimizer = (*NAdam)(nil)

// NewNAdam returns an NAdam optimizer over params (one parameter group).
func NewNAdam(params []*autograd.Var, opt NAdamOptions) *NAdam {
	keys := []string{"step", "mu_product", "exp_avg", "exp_avg_sq"}
	n := &NAdam{core: newCore[NAdamOptions]("NAdam", keys, keys)}
	n.scalars = []string{"mu_product"}
	n.addGroup(params, opt)
	return n
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Betas, Eps and MomentumDecay take the defaults).
func (n *NAdam) AddParamGroup(params []*autograd.Var, opt NAdamOptions) { n.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (n *NAdam) Groups() []*Group[NAdamOptions] { return n.groupList() }

// Step applies one NAdam update to every parameter that has a gradient.
func (n *NAdam) Step() error {
	for _, g := range n.groups {
		o := g.Options
		b1, b2 := o.Betas[0], o.Betas[1]
		for _, p := range g.Params {
			grad, err := n.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := n.stateOf(p, func(w *tensor.Tensor) map[string]*tensor.Tensor {
				st := newMoments("exp_avg_sq")(w)
				st["mu_product"] = tensor.ScalarOf(1, tensor.Float64)
				return st
			})
			step := bumpStep(st)
			bc2 := 1 - math.Pow(b2, step)
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			mu := b1 * (1 - 0.5*math.Pow(0.96, step*o.MomentumDecay))
			muNext := b1 * (1 - 0.5*math.Pow(0.96, (step+1)*o.MomentumDecay))
			// PyTorch keeps mu_product in a float32 tensor, so its products
			// round to float32.
			muProduct := float64(float32(st["mu_product"].Item()) * float32(mu))
			st["mu_product"] = tensor.ScalarOf(muProduct, tensor.Float64)
			// torch 1.13 multiplies by μ_t a second time here; kept for
			// fidelity.
			muProductNext := float64(float32(muProduct) * float32(mu) * float32(muNext))
			m, v := st["exp_avg"], st["exp_avg_sq"]
			m.CopyFrom(m.MulScalar(b1).Add(grad.MulScalar(1 - b1)))
			v.CopyFrom(v.MulScalar(b2).Add(grad.Mul(grad).MulScalar(1 - b2)))
			denom := v.DivScalar(bc2).Sqrt().AddScalar(o.Eps)
			w.CopyFrom(w.Sub(grad.Div(denom).MulScalar(o.LR * (1 - mu) / (1 - muProduct))))
			w.CopyFrom(w.Sub(m.Div(denom).MulScalar(o.LR * muNext / (1 - muProductNext))))
		}
	}
	return nil
}

// RAdamOptions are the hyperparameters of RAdam, as torch.optim.RAdam's
// (1.13, which has no maximize option). Zero LR, Betas and Eps mean
// PyTorch's defaults (1e-3, (0.9, 0.999), 1e-8); WeightDecay is taken as
// given.
type RAdamOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first and second moment averages.
	Betas [2]float64
	// Eps is added to the denominator for stability.
	Eps float64
	// WeightDecay adds WeightDecay·param to the gradient (L2 penalty).
	WeightDecay float64
}

func (o *RAdamOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
	}
}

func (o *RAdamOptions) lrPtr() *float64 { return &o.LR }

func (o *RAdamOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = DefaultAdamLR
	}
	adamLikeDefaults(&o.Betas, &o.Eps)
}

func (o *RAdamOptions) validate(op string) {
	validateAdamLike(op, o.LR, o.Eps, o.Betas, o.WeightDecay)
}

// RAdam is rectified Adam, as torch.optim.RAdam (1.13, foreach=False). For
// each parameter at step t:
//
//	g = grad + weight_decay·param
//	m = β1·m + (1-β1)·g
//	v = β2·v + (1-β2)·g²
//	ρ∞ = 2/(1-β2) - 1,  ρ_t = ρ∞ - 2t·β2^t/(1-β2^t)
//	ρ_t > 5: r = sqrt((ρ_t-4)(ρ_t-2)ρ∞ / ((ρ∞-4)(ρ∞-2)ρ_t))
//	         param -= lr·m/(1-β1^t) · sqrt(1-β2^t)/(sqrt(v)+eps) · r
//	else:    param -= lr·m/(1-β1^t)
//
// Per-parameter state: "step", "exp_avg" and "exp_avg_sq".
type RAdam struct {
	core[RAdamOptions, *RAdamOptions]
}

var _ Optimizer = (*RAdam)(nil)

// NewRAdam returns an RAdam optimizer over params (one parameter group).
func NewRAdam(params []*autograd.Var, opt RAdamOptions) *RAdam {
	keys := []string{"step", "exp_avg", "exp_avg_sq"}
	r := &RAdam{core: newCore[RAdamOptions]("RAdam", keys, keys)}
	r.addGroup(params, opt)
	return r
}

// AddParamGroup adds parameters with their own hyperparameters (zero LR,
// Betas and Eps take the defaults).
func (r *RAdam) AddParamGroup(params []*autograd.Var, opt RAdamOptions) { r.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (r *RAdam) Groups() []*Group[RAdamOptions] { return r.groupList() }

// Step applies one RAdam update to every parameter that has a gradient.
func (r *RAdam) Step() error {
	for _, g := range r.groups {
		o := g.Options
		b1, b2 := o.Betas[0], o.Betas[1]
		for _, p := range g.Params {
			grad, err := r.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			st := r.stateOf(p, newMoments("exp_avg_sq"))
			step := bumpStep(st)
			bc1 := 1 - math.Pow(b1, step)
			bc2 := 1 - math.Pow(b2, step)
			if o.WeightDecay != 0 {
				grad = grad.Add(w.MulScalar(o.WeightDecay))
			}
			m, v := st["exp_avg"], st["exp_avg_sq"]
			m.CopyFrom(m.MulScalar(b1).Add(grad.MulScalar(1 - b1)))
			v.CopyFrom(v.MulScalar(b2).Add(grad.Mul(grad).MulScalar(1 - b2)))
			mhat := m.DivScalar(bc1)
			rhoInf := 2/(1-b2) - 1
			rhoT := rhoInf - 2*step*math.Pow(b2, step)/bc2
			if rhoT > 5 {
				rect := math.Sqrt((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT))
				adaptive := v.Sqrt().AddScalar(o.Eps).Reciprocal().MulScalar(math.Sqrt(bc2))
				w.CopyFrom(w.Sub(mhat.MulScalar(o.LR).Mul(adaptive).MulScalar(rect)))
			} else {
				w.CopyFrom(w.Sub(mhat.MulScalar(o.LR)))
			}
		}
	}
	return nil
}
