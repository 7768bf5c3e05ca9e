package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// SparseAdamOptions are the hyperparameters of SparseAdam, as
// torch.optim.SparseAdam's. Zero LR, Betas and Eps mean PyTorch's defaults
// (1e-3, (0.9, 0.999), 1e-8).
type SparseAdamOptions struct {
	// LR is the learning rate.
	LR float64
	// Betas are the decay rates of the first and second moment averages.
	Betas [2]float64
	// Eps is added to the denominator for stability.
	Eps float64
	// Maximize ascends the objective instead of descending.
	Maximize bool
}

func (o *SparseAdamOptions) fields() []field {
	return []field{
		{name: "lr", f: &o.LR},
		{name: "betas", pair: &o.Betas},
		{name: "eps", f: &o.Eps},
		{name: "maximize", b: &o.Maximize},
	}
}

func (o *SparseAdamOptions) lrPtr() *float64 { return &o.LR }

func (o *SparseAdamOptions) withDefaults() {
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

func (o *SparseAdamOptions) validate(op string) {
	switch {
	case !(o.LR >= 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, o.LR))
	case !(o.Eps > 0):
		panic(fmt.Sprintf("%s: invalid epsilon %v (want > 0)", op, o.Eps))
	case !(o.Betas[0] >= 0 && o.Betas[0] < 1):
		panic(fmt.Sprintf("%s: invalid beta1 %v (want [0, 1))", op, o.Betas[0]))
	case !(o.Betas[1] >= 0 && o.Betas[1] < 1):
		panic(fmt.Sprintf("%s: invalid beta2 %v (want [0, 1))", op, o.Betas[1]))
	}
}

// SparseAdam is the lazy Adam variant for sparse gradients, as
// torch.optim.SparseAdam (1.13). Ember's gradients are dense, so the sparse
// structure is read from the gradient itself: a row (a slice along the first
// dimension; the single element of a scalar) takes part in a step only if
// its gradient has a non-zero entry, as the rows an embedding lookup touched
// appear in torch's sparse gradient. Rows that take part are updated as
//
//	m = β1·m + (1-β1)·g,  v = β2·v + (1-β2)·g²
//	param -= lr·sqrt(1-β2^t)/(1-β1^t) · m / (sqrt(v) + eps)
//
// and the other rows, with their moments, are left untouched. t counts the
// steps in which the parameter had a gradient at all.
//
// Per-parameter state: "step", "exp_avg", "exp_avg_sq".
type SparseAdam struct {
	core[SparseAdamOptions, *SparseAdamOptions]
}

var _ Optimizer = (*SparseAdam)(nil)

// NewSparseAdam returns a SparseAdam optimizer over params (one group).
func NewSparseAdam(params []*autograd.Var, opt SparseAdamOptions) *SparseAdam {
	keys := []string{"step", "exp_avg", "exp_avg_sq"}
	s := &SparseAdam{core: newCore[SparseAdamOptions]("SparseAdam", keys, keys)}
	s.addGroup(params, opt)
	return s
}

// AddParamGroup adds parameters with their own hyperparameters.
func (s *SparseAdam) AddParamGroup(params []*autograd.Var, opt SparseAdamOptions) {
	s.addGroup(params, opt)
}

// Groups returns the parameter groups. Their Options may be changed between
// steps (to schedule any hyperparameter); their Params may not.
func (s *SparseAdam) Groups() []*Group[SparseAdamOptions] { return s.groupList() }

// Step applies one SparseAdam update to the touched rows of every parameter
// that has a gradient.
func (s *SparseAdam) Step() error {
	for _, g := range s.groups {
		o := g.Options
		b1, b2 := o.Betas[0], o.Betas[1]
		for _, p := range g.Params {
			grad, err := s.gradOf(p)
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
			st := s.state[p]
			if st == nil {
				st = map[string]*tensor.Tensor{
					"step":       tensor.ScalarOf(0, tensor.Float64),
					"exp_avg":    tensor.ZerosLike(w),
					"exp_avg_sq": tensor.ZerosLike(w),
				}
				s.state[p] = st
			}
			step := st["step"].Item() + 1
			st["step"] = tensor.ScalarOf(step, tensor.Float64)

			// touched marks the rows with a non-zero gradient entry.
			var axes []int
			for d := 1; d < grad.Dim(); d++ {
				axes = append(axes, d)
			}
			mag := grad.Abs()
			if len(axes) > 0 {
				mag = mag.Sum(axes, true)
			}
			touched := mag.Gt(tensor.ScalarOf(0, mag.DType()))

			m, v := st["exp_avg"], st["exp_avg_sq"]
			newM := m.MulScalar(b1).Add(grad.MulScalar(1 - b1))
			newV := v.MulScalar(b2).Add(grad.Mul(grad).MulScalar(1 - b2))
			stepSize := o.LR * math.Sqrt(1-math.Pow(b2, step)) / (1 - math.Pow(b1, step))
			newW := w.Sub(newM.Div(newV.Sqrt().AddScalar(o.Eps)).MulScalar(stepSize))
			m.CopyFrom(tensor.Where(touched, newM, m))
			v.CopyFrom(tensor.Where(touched, newV, v))
			w.CopyFrom(tensor.Where(touched, newW, w))
		}
	}
	return nil
}
