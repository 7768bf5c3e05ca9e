package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// AdafactorOptions are the hyperparameters of Adafactor, named as Hugging
// Face transformers' Adafactor. Every field is taken as given; start from
// DefaultAdafactorOptions.
type AdafactorOptions struct {
	// LR is the external learning rate, used only without RelativeStep.
	LR float64
	// Eps are ε1 (added to the squared gradient) and ε2 (the smallest
	// parameter scale).
	Eps [2]float64
	// ClipThreshold is d, the largest RMS of the unscaled update.
	ClipThreshold float64
	// DecayRate is the exponent c of β2_t = 1 - t^c (negative).
	DecayRate float64
	// Beta1 is the first-moment decay; 0 keeps no first moment.
	Beta1 float64
	// WeightDecay is a decoupled decay: param -= weight_decay·lr·param.
	WeightDecay float64
	// ScaleParameter scales the step by the parameter's RMS (at least ε2).
	ScaleParameter bool
	// RelativeStep uses the time-dependent step min(1e-2, 1/sqrt(t))
	// instead of LR.
	RelativeStep bool
	// WarmupInit makes the relative step min(1e-6·t, 1/sqrt(t)).
	WarmupInit bool
}

// DefaultAdafactorOptions returns Hugging Face's defaults: relative steps
// scaled by the parameter RMS, eps (1e-30, 1e-3), clip threshold 1, decay
// rate -0.8, no first moment, no weight decay.
func DefaultAdafactorOptions() AdafactorOptions {
	return AdafactorOptions{Eps: [2]float64{1e-30, 1e-3}, ClipThreshold: 1, DecayRate: -0.8, ScaleParameter: true, RelativeStep: true}
}

func (o *AdafactorOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "eps", pair: &o.Eps},
		{name: "clip_threshold", f: &o.ClipThreshold},
		{name: "decay_rate", f: &o.DecayRate},
		{name: "beta1", f: &o.Beta1},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "scale_parameter", b: &o.ScaleParameter},
		{name: "relative_step", b: &o.RelativeStep},
		{name: "warmup_init", b: &o.WarmupInit},
	}
}

func (o *AdafactorOptions) lrPtr() *float64 { return &o.LR }

func (o *AdafactorOptions) withDefaults() {}

func (o *AdafactorOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case o.RelativeStep && o.LR != 0:
		panic(fmt.Sprintf("%s: a manual learning rate (%v) cannot be combined with RelativeStep", op, o.LR))
	case o.WarmupInit && !o.RelativeStep:
		panic(fmt.Sprintf("%s: WarmupInit requires RelativeStep", op))
	case !(o.Eps[0] >= 0 && o.Eps[1] >= 0):
		panic(fmt.Sprintf("%s: invalid eps %v", op, o.Eps))
	case !(o.ClipThreshold > 0):
		panic(fmt.Sprintf("%s: invalid clip threshold %v", op, o.ClipThreshold))
	case !(o.DecayRate < 0):
		panic(fmt.Sprintf("%s: invalid decay rate %v (want < 0)", op, o.DecayRate))
	case !(o.Beta1 >= 0 && o.Beta1 < 1):
		panic(fmt.Sprintf("%s: invalid beta1 %v (want [0, 1))", op, o.Beta1))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	}
}

// Adafactor is the memory-frugal adaptive optimizer of Shazeer and Stern
// (2018), "Adafactor: Adaptive Learning Rates with Sublinear Memory Cost",
// as Hugging Face transformers implements it. At step t, for a parameter x
// with gradient g:
//
//	ρ = min(1e-2, 1/sqrt(t)) (RelativeStep; min(1e-6·t, ·) with WarmupInit), else LR
//	α = ρ·max(ε2, RMS(x)) with ScaleParameter, else ρ
//	β2 = 1 - t^DecayRate
//	for x with 2 or more dimensions (factored, over the last two):
//	  R = β2·R + (1-β2)·mean_cols(g² + ε1),  C = β2·C + (1-β2)·mean_rows(g² + ε1)
//	  u = g / sqrt(R/mean(R) ⊗ C)
//	otherwise:  V = β2·V + (1-β2)·(g² + ε1),  u = g/sqrt(V)
//	u = α·u / max(1, RMS(u)/ClipThreshold)
//	u = m = Beta1·m + (1-Beta1)·u  (when Beta1 > 0)
//	x -= WeightDecay·α·x (when WeightDecay > 0), then x -= u
//
// RMS(x) is ‖x‖/sqrt(numel). Per-parameter state: "step", and
// "exp_avg_sq_row" (shape[:-1]) with "exp_avg_sq_col" (shape[:-2] +
// shape[-1:]) for factored parameters, "exp_avg_sq" otherwise, and
// "exp_avg" with Beta1.
type Adafactor struct {
	core[AdafactorOptions, *AdafactorOptions]
}

var _ Optimizer = (*Adafactor)(nil)

// NewAdafactor returns an Adafactor optimizer over params (one group).
func NewAdafactor(params []*autograd.Var, opt AdafactorOptions) *Adafactor {
	keys := []string{"step", "exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq", "exp_avg"}
	a := &Adafactor{core: newCore[AdafactorOptions]("Adafactor", keys, keys[:1])}
	a.stateShape = func(key string, shape []int) []int {
		n := len(shape)
		switch {
		case key == "exp_avg_sq_row" && n >= 2:
			return append([]int{}, shape[:n-1]...)
		case key == "exp_avg_sq_col" && n >= 2:
			return append(append([]int{}, shape[:n-2]...), shape[n-1])
		}
		return nil
	}
	a.addGroup(params, opt)
	return a
}

// AddParamGroup adds parameters with their own hyperparameters.
func (a *Adafactor) AddParamGroup(params []*autograd.Var, opt AdafactorOptions) {
	a.addGroup(params, opt)
}

// Groups returns the parameter groups. Their Options may be changed between
// steps; their Params may not.
func (a *Adafactor) Groups() []*Group[AdafactorOptions] { return a.groupList() }

// rms returns ‖t‖/sqrt(numel(t)).
func rms(t *tensor.Tensor) float64 { return l2(t) / math.Sqrt(float64(max(t.Numel(), 1))) }

// Step applies one Adafactor update to every parameter that has a gradient.
func (a *Adafactor) Step() error {
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
			shape := w.Shape()
			n := len(shape)
			factored := n >= 2
			st := a.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{"step": tensor.ScalarOf(0, tensor.Float64)}
				a.state[p] = st
			}
			if factored && st["exp_avg_sq_row"] == nil {
				st["exp_avg_sq_row"] = tensor.ZerosOn(w.Device(), a.stateShape("exp_avg_sq_row", shape), w.DType())
				st["exp_avg_sq_col"] = tensor.ZerosOn(w.Device(), a.stateShape("exp_avg_sq_col", shape), w.DType())
			}
			if !factored && st["exp_avg_sq"] == nil {
				st["exp_avg_sq"] = tensor.ZerosLike(w)
			}
			if o.Beta1 > 0 && st["exp_avg"] == nil {
				st["exp_avg"] = tensor.ZerosLike(w)
			}
			step := st["step"].Item() + 1
			st["step"] = tensor.ScalarOf(step, tensor.Float64)

			lr := o.LR
			if o.RelativeStep {
				minStep := 1e-2
				if o.WarmupInit {
					minStep = 1e-6 * step
				}
				lr = math.Min(minStep, 1/math.Sqrt(step))
			}
			if o.ScaleParameter {
				lr *= math.Max(o.Eps[1], rms(w))
			}
			beta2 := 1 - math.Pow(step, o.DecayRate)
			sq := grad.Mul(grad).AddScalar(o.Eps[0])
			var u *tensor.Tensor
			if factored {
				row, col := st["exp_avg_sq_row"], st["exp_avg_sq_col"]
				row.CopyFrom(row.MulScalar(beta2).Add(sq.Mean([]int{n - 1}, false).MulScalar(1 - beta2)))
				col.CopyFrom(col.MulScalar(beta2).Add(sq.Mean([]int{n - 2}, false).MulScalar(1 - beta2)))
				rFactor := row.Div(row.Mean([]int{n - 2}, true)).Rsqrt().Unsqueeze(n - 1)
				cFactor := col.Unsqueeze(n - 2).Rsqrt()
				u = rFactor.Mul(cFactor).Mul(grad)
			} else {
				v := st["exp_avg_sq"]
				v.CopyFrom(v.MulScalar(beta2).Add(sq.MulScalar(1 - beta2)))
				u = v.Rsqrt().Mul(grad)
			}
			u = u.DivScalar(math.Max(1, rms(u)/o.ClipThreshold)).MulScalar(lr)
			if o.Beta1 > 0 {
				m := st["exp_avg"]
				m.CopyFrom(m.MulScalar(o.Beta1).Add(u.MulScalar(1 - o.Beta1)))
				u = m
			}
			if o.WeightDecay != 0 {
				w.CopyFrom(w.MulScalar(1 - o.WeightDecay*lr))
			}
			w.CopyFrom(w.Sub(u))
		}
	}
	return nil
}
