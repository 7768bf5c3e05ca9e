package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// reduceLoss applies r to per-element losses: the mean or the sum of all
// elements, or per itself. op names the loss in the panic for an unknown r.
func reduceLoss(op string, per *autograd.Var, r Reduction) *autograd.Var {
	switch r {
	case ReduceMean:
		return per.Mean(nil, false)
	case ReduceSum:
		return per.Sum(nil, false)
	case ReduceNone:
		return per
	}
	panic(fmt.Sprintf("nn.%s: unknown reduction %d", op, int(r)))
}

// checkSameShape panics unless a and b have the same shape.
func checkSameShape(op, an, bn string, a, b []int) {
	if !slices.Equal(a, b) {
		panic(fmt.Sprintf("nn.%s: %s shape %v and %s shape %v differ", op, an, a, bn, b))
	}
}

// checkFloatVar panics unless v holds floating-point values.
func checkFloatVar(op, name string, v *autograd.Var) {
	if !v.DType().IsFloat() {
		panic(fmt.Sprintf("nn.%s: %s must be floating point, got %s", op, name, v.DType()))
	}
}

// targetOf checks target against input (the same shape) and returns it as
// a constant Var in input's dtype: a target is data, and no gradient flows
// to it (the package documentation says how to differentiate both sides).
// op names the loss in the panic.
func targetOf(op string, input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkSameShape(op, "input", "target", input.Shape(), target.Shape())
	return autograd.New(target.To(input.DType()))
}

// constVar wraps a scalar constant of dtype dt.
func constVar(s float64, dt tensor.DType) *autograd.Var {
	return autograd.New(tensor.ScalarOf(s, dt))
}

// L1Loss is torch.nn.L1Loss: |input - target|, reduced by Reduction (the
// zero value averages).
type L1Loss struct {
	Reduction Reduction
}

// NewL1Loss returns a mean-absolute-error loss with the given reduction.
func NewL1Loss(r Reduction) *L1Loss { return &L1Loss{Reduction: r} }

// Forward returns the loss; target must have input's shape. The gradient
// at input == target is 0.
func (l *L1Loss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("L1Loss", "input", input)
	t := targetOf("L1Loss", input, target)
	return reduceLoss("L1Loss", input.Sub(t).Abs(), l.Reduction)
}

// SmoothL1Loss is torch.nn.SmoothL1Loss: with d = |input - target|, the
// loss is 0.5*d²/Beta where d < Beta and d - 0.5*Beta elsewhere. Beta = 0
// gives L1Loss. Build it with NewSmoothL1Loss for PyTorch's defaults.
type SmoothL1Loss struct {
	Reduction Reduction
	Beta      float64 // non-negative; PyTorch's default is 1
}

// NewSmoothL1Loss returns a smooth-L1 loss with PyTorch's defaults: mean
// reduction, beta 1.
func NewSmoothL1Loss() *SmoothL1Loss { return &SmoothL1Loss{Beta: 1} }

// Forward returns the loss; target must have input's shape.
func (l *SmoothL1Loss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("SmoothL1Loss", "input", input)
	t := targetOf("SmoothL1Loss", input, target)
	if l.Beta < 0 || math.IsNaN(l.Beta) {
		panic(fmt.Sprintf("nn.SmoothL1Loss: beta %v must be non-negative", l.Beta))
	}
	d := input.Sub(t).Abs()
	if l.Beta == 0 {
		return reduceLoss("SmoothL1Loss", d, l.Reduction)
	}
	small := d.Value().Lt(tensor.ScalarOf(l.Beta, d.DType()))
	per := autograd.Where(small, d.Square().MulScalar(0.5/l.Beta), d.SubScalar(0.5*l.Beta))
	return reduceLoss("SmoothL1Loss", per, l.Reduction)
}

// HuberLoss is torch.nn.HuberLoss: with d = |input - target|, the loss is
// 0.5*d² where d < Delta and Delta*(d - 0.5*Delta) elsewhere. Build it with
// NewHuberLoss for PyTorch's defaults.
type HuberLoss struct {
	Reduction Reduction
	Delta     float64 // positive; PyTorch's default is 1
}

// NewHuberLoss returns a Huber loss with PyTorch's defaults: mean
// reduction, delta 1.
func NewHuberLoss() *HuberLoss { return &HuberLoss{Delta: 1} }

// Forward returns the loss; target must have input's shape.
func (l *HuberLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("HuberLoss", "input", input)
	t := targetOf("HuberLoss", input, target)
	if !(l.Delta > 0) {
		panic(fmt.Sprintf("nn.HuberLoss: delta %v must be positive", l.Delta))
	}
	d := input.Sub(t).Abs()
	small := d.Value().Lt(tensor.ScalarOf(l.Delta, d.DType()))
	per := autograd.Where(small, d.Square().MulScalar(0.5), d.SubScalar(0.5*l.Delta).MulScalar(l.Delta))
	return reduceLoss("HuberLoss", per, l.Reduction)
}

// KLDivLoss is torch.nn.KLDivLoss: the pointwise Kullback-Leibler
// divergence target*(log(target) - input) between a target distribution and
// input log-probabilities (0 where target is 0). With LogTarget the target
// holds log-probabilities and the loss is exp(target)*(target - input).
// BatchMean selects PyTorch's reduction="batchmean" (the sum divided by the
// first dimension, the mathematically correct KL divergence) and then
// overrides Reduction.
type KLDivLoss struct {
	Reduction Reduction
	BatchMean bool
	LogTarget bool
}

// NewKLDivLoss returns a KL-divergence loss with the given reduction and
// log_target setting (PyTorch's defaults are ReduceMean and false).
func NewKLDivLoss(r Reduction, logTarget bool) *KLDivLoss {
	return &KLDivLoss{Reduction: r, LogTarget: logTarget}
}

// Forward returns the loss; input holds log-probabilities and target
// (probabilities, or log-probabilities with LogTarget) has its shape.
func (l *KLDivLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("KLDivLoss", "input", input)
	t := targetOf("KLDivLoss", input, target)
	var per *autograd.Var
	if l.LogTarget {
		per = t.Exp().Mul(t.Sub(input))
	} else {
		dt := t.DType()
		pos := t.Value().Gt(tensor.ScalarOf(0, dt))
		safe := autograd.Where(pos, t, constVar(1, dt))
		xlogx := autograd.Where(pos, t.Mul(safe.Log()), constVar(0, dt))
		per = xlogx.Sub(t.Mul(input))
	}
	if l.BatchMean {
		s := per.Sum(nil, false)
		if input.Dim() == 0 {
			return s
		}
		return s.DivScalar(float64(input.Shape()[0]))
	}
	return reduceLoss("KLDivLoss", per, l.Reduction)
}

// PoissonNLLLoss is torch.nn.PoissonNLLLoss: the negative log-likelihood
// of target under a Poisson distribution. With LogInput the input is the
// log-rate and the loss is exp(input) - target*input; otherwise it is the
// rate and the loss is input - target*log(input + Eps). Full adds Stirling's
// approximation of log(target!), target*log(target) - target +
// 0.5*log(2*pi*target), where target > 1. Build it with NewPoissonNLLLoss for
// PyTorch's defaults.
type PoissonNLLLoss struct {
	Reduction Reduction
	LogInput  bool
	Full      bool
	Eps       float64
}

// NewPoissonNLLLoss returns a Poisson loss with PyTorch's defaults: log
// input, no Stirling term, eps 1e-8, mean reduction.
func NewPoissonNLLLoss() *PoissonNLLLoss { return &PoissonNLLLoss{LogInput: true, Eps: 1e-8} }

// Forward returns the loss; target (counts, in any dtype) must have input's
// shape.
func (l *PoissonNLLLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("PoissonNLLLoss", "input", input)
	t := targetOf("PoissonNLLLoss", input, target)
	var per *autograd.Var
	if l.LogInput {
		per = input.Exp().Sub(t.Mul(input))
	} else {
		per = input.Sub(t.Mul(input.AddScalar(l.Eps).Log()))
	}
	if l.Full {
		dt := t.DType()
		big := t.Value().Gt(tensor.ScalarOf(1, dt))
		y := autograd.Where(big, t, constVar(2, dt)) // keeps log finite off the mask
		stirling := y.Mul(y.Log()).Sub(y).Add(y.MulScalar(2 * math.Pi).Log().MulScalar(0.5))
		per = per.Add(autograd.Where(big, stirling, constVar(0, dt)))
	}
	return reduceLoss("PoissonNLLLoss", per, l.Reduction)
}

// GaussianNLLLoss is torch.nn.GaussianNLLLoss: the negative log-likelihood
// 0.5*(log(var) + (input - target)²/var) of target under a Gaussian with
// mean input and variance var, plus 0.5*log(2*pi) when Full. The variance is
// clamped below at Eps for the value only; its gradient passes through
// unchanged, as in PyTorch. Build it with NewGaussianNLLLoss for PyTorch's
// defaults.
type GaussianNLLLoss struct {
	Reduction Reduction
	Full      bool
	Eps       float64
}

// NewGaussianNLLLoss returns a Gaussian loss with PyTorch's defaults: no
// constant term, eps 1e-6, mean reduction.
func NewGaussianNLLLoss() *GaussianNLLLoss { return &GaussianNLLLoss{Eps: 1e-6} }

// Forward returns the loss. target has input's shape; variance, predicted
// like input (both may require gradients), has that shape too
// (heteroscedastic), or that shape with the last axis 1 or dropped (one
// variance per row, broadcast). A negative variance panics.
func (l *GaussianNLLLoss) Forward(input *autograd.Var, target *tensor.Tensor, variance *autograd.Var) *autograd.Var {
	checkFloatVar("GaussianNLLLoss", "input", input)
	t := targetOf("GaussianNLLLoss", input, target)
	xs, vs := input.Shape(), variance.Shape()
	if !slices.Equal(xs, vs) {
		switch {
		case len(xs) > 0 && slices.Equal(xs[:len(xs)-1], vs):
			variance = variance.Unsqueeze(len(vs))
		case len(xs) > 0 && len(vs) == len(xs) && slices.Equal(xs[:len(xs)-1], vs[:len(vs)-1]) && vs[len(vs)-1] == 1:
		default:
			panic(fmt.Sprintf("nn.GaussianNLLLoss: variance shape %v does not fit input shape %v (want the same shape, or it with the last axis 1 or dropped)", vs, xs))
		}
	}
	v := variance.Value()
	if v.Lt(tensor.ZerosLike(v)).To(tensor.Float64).Sum(nil, false).Item() > 0 {
		panic("nn.GaussianNLLLoss: variance has negative entries")
	}
	// Clamp the value only: add the (constant) change the clamp makes.
	shift := v.Clamp(l.Eps, math.Inf(1)).Sub(v)
	variance = variance.Add(autograd.New(shift))
	per := variance.Log().Add(input.Sub(t).Square().Div(variance)).MulScalar(0.5)
	if l.Full {
		per = per.AddScalar(0.5 * math.Log(2*math.Pi))
	}
	return reduceLoss("GaussianNLLLoss", per, l.Reduction)
}
