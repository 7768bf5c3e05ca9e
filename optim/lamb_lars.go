package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// LAMBOptions are the hyperparameters of LAMB. Zero LR, Betas and Eps mean
// the defaults (1e-3, (0.9, 0.999), 1e-6); WeightDecay is taken as given.
type LAMBOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first and second moment averages.
	Betas [2]float64
	// Eps is added to the denominator for stability.
	Eps float64
	// WeightDecay is the decoupled decay λ added to the Adam direction.
	WeightDecay float64
}

func (o *LAMBOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "weight_decay", f: &o.WeightDecay},
	}
}

func (o *LAMBOptions) lrPtr() *float64 { return &o.LR }

func (o *LAMBOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = 1e-3
	}
	if o.Betas == [2]float64{} {
		o.Betas = [2]float64{DefaultBeta1, DefaultBeta2}
	}
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
}

func (o *LAMBOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	case !(o.Betas[0] >= 0 && o.Betas[0] < 1) || !(o.Betas[1] >= 0 && o.Betas[1] < 1):
		panic(fmt.Sprintf("%s: invalid betas %v (want [0, 1))", op, o.Betas))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	}
}

// LAMB is layer-wise adaptive moments for large batches (You et al. 2019,
// "Large Batch Optimization for Deep Learning", Algorithm 2, with φ the
// identity). For each parameter (one layer) at step t:
//
//	m = β1·m + (1-β1)·g,  v = β2·v + (1-β2)·g²
//	r = (m/(1-β1^t)) / (sqrt(v/(1-β2^t)) + eps) + weight_decay·param
//	trust = ‖param‖/‖r‖ (1 if either norm is zero)
//	param -= lr·trust·r
//
// Per-parameter state: "step", "exp_avg", "exp_avg_sq".
type LAMB struct {
	core[LAMBOptions, *LAMBOptions]
}

var _ Optimizer = (*LAMB)(nil)

// NewLAMB returns a LAMB optimizer over params (one parameter group).
func NewLAMB(params []*autograd.Var, opt LAMBOptions) *LAMB {
	keys := []string{"step", "exp_avg", "exp_avg_sq"}
	l := &LAMB{core: newCore[LAMBOptions]("LAMB", keys, keys)}
	l.addGroup(params, opt)
	return l
}

// AddParamGroup adds parameters with their own hyperparameters.
func (l *LAMB) AddParamGroup(params []*autograd.Var, opt LAMBOptions) { l.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps; their Params may not.
func (l *LAMB) Groups() []*Group[LAMBOptions] { return l.groupList() }

// l2 returns the Euclidean norm of t as a float64.
func l2(t *tensor.Tensor) float64 { return t.To(tensor.Float64).Norm(2, nil, false).Item() }

// Step applies one LAMB update to every parameter that has a gradient.
func (l *LAMB) Step() error {
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
			st := l.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{
					"step":       tensor.ScalarOf(0, tensor.Float64),
					"exp_avg":    tensor.ZerosLike(w),
					"exp_avg_sq": tensor.ZerosLike(w),
				}
				l.state[p] = st
			}
			step := st["step"].Item() + 1
			st["step"] = tensor.ScalarOf(step, tensor.Float64)
			m, v := st["exp_avg"], st["exp_avg_sq"]
			m.CopyFrom(m.MulScalar(b1).Add(grad.MulScalar(1 - b1)))
			v.CopyFrom(v.MulScalar(b2).Add(grad.Mul(grad).MulScalar(1 - b2)))
			mhat := m.DivScalar(1 - math.Pow(b1, step))
			vhat := v.DivScalar(1 - math.Pow(b2, step))
			r := mhat.Div(vhat.Sqrt().AddScalar(o.Eps))
			if o.WeightDecay != 0 {
				r = r.Add(w.MulScalar(o.WeightDecay))
			}
			trust := 1.0
			if wn, rn := l2(w), l2(r); wn > 0 && rn > 0 {
				trust = wn / rn
			}
			w.CopyFrom(w.Sub(r.MulScalar(o.LR * trust)))
		}
	}
	return nil
}

// LARSOptions are the hyperparameters of LARS. Zero TrustCoefficient means
// the paper's 0.001; the other fields are taken as given.
type LARSOptions struct {
	// LR is the global learning rate γ (required).
	LR float64
	// Momentum is the momentum factor m.
	Momentum float64
	// WeightDecay is the L2 coefficient β.
	WeightDecay float64
	// TrustCoefficient is η, the scale of the layer-wise learning rate.
	TrustCoefficient float64
	// Eps is added to the local learning rate's denominator.
	Eps float64
}

func (o *LARSOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "momentum", f: &o.Momentum},
		{name: "weight_decay", f: &o.WeightDecay},
		{name: "trust_coefficient", f: &o.TrustCoefficient},
		{name: "eps", f: &o.Eps},
	}
}

func (o *LARSOptions) lrPtr() *float64 { return &o.LR }

func (o *LARSOptions) withDefaults() {
	if o.TrustCoefficient == 0 {
		o.TrustCoefficient = 1e-3
	}
}

func (o *LARSOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Momentum >= 0):
		panic(fmt.Sprintf("%s: invalid momentum %v", op, o.Momentum))
	case !(o.WeightDecay >= 0):
		panic(fmt.Sprintf("%s: invalid weight decay %v", op, o.WeightDecay))
	case !(o.TrustCoefficient > 0):
		panic(fmt.Sprintf("%s: invalid trust coefficient %v", op, o.TrustCoefficient))
	case !(o.Eps >= 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v", op, o.Eps))
	}
}

// LARS is layer-wise adaptive rate scaling (You et al. 2017, "Large Batch
// Training of Convolutional Networks", Algorithm 1). For each parameter
// (one layer):
//
//	λ = η·‖w‖/(‖g‖ + β·‖w‖ + eps)   (1 if ‖w‖ or ‖g‖ is zero)
//	buf = m·buf + γ·λ·(g + β·w)
//	w -= buf
//
// Per-parameter state: "momentum_buffer".
type LARS struct {
	core[LARSOptions, *LARSOptions]
}

var _ Optimizer = (*LARS)(nil)

// NewLARS returns a LARS optimizer over params (one parameter group).
func NewLARS(params []*autograd.Var, opt LARSOptions) *LARS {
	keys := []string{"momentum_buffer"}
	l := &LARS{core: newCore[LARSOptions]("LARS", keys, keys)}
	l.addGroup(params, opt)
	return l
}

// AddParamGroup adds parameters with their own hyperparameters.
func (l *LARS) AddParamGroup(params []*autograd.Var, opt LARSOptions) { l.addGroup(params, opt) }

// Groups returns the parameter groups. Their Options may be changed between
// steps; their Params may not.
func (l *LARS) Groups() []*Group[LARSOptions] { return l.groupList() }

// Step applies one LARS update to every parameter that has a gradient.
func (l *LARS) Step() error {
	for _, g := range l.groups {
		o := g.Options
		for _, p := range g.Params {
			grad, err := l.gradOf(p)
			if err != nil {
				return err
			}
			if grad == nil {
				continue
			}
			w := p.Value()
			local := 1.0
			if wn, gn := l2(w), l2(grad); wn > 0 && gn > 0 {
				local = o.TrustCoefficient * wn / (gn + o.WeightDecay*wn + o.Eps)
			}
			d := grad
			if o.WeightDecay != 0 {
				d = d.Add(w.MulScalar(o.WeightDecay))
			}
			d = d.MulScalar(o.LR * local)
			st := l.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{"momentum_buffer": tensor.ZerosLike(w)}
				l.state[p] = st
			}
			buf := st["momentum_buffer"]
			buf.CopyFrom(buf.MulScalar(o.Momentum).Add(d))
			w.CopyFrom(w.Sub(buf))
		}
	}
	return nil
}
