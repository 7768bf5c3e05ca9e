package autograd

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Activation functions, the functional forms of torch.nn.functional's. Each
// is composed of recorded Var operations (or recorded with a gradient rule
// written in Var operations), so higher-order gradients work. Branches are
// selected with Where, and a branch that is not taken is evaluated on a safe
// argument (zero), so that an overflow there (exp of a large input) cannot
// turn the gradient into NaN. At a kink the gradient follows PyTorch's
// convention, stated on each function. All of them require a floating-point
// input and panic otherwise.

// SELU's constants (Klambauer et al., 2017), as in PyTorch.
const (
	seluAlpha = 1.6732632423543772848170429916717
	seluScale = 1.0507009873554804934193349852946
)

func checkFloat(op string, x *Var) {
	if !x.DType().IsFloat() {
		panic(fmt.Sprintf("autograd.%s: input of shape %v has dtype %v; activations need a floating-point input", op, x.Shape(), x.DType()))
	}
}

// scalarOf returns s as a 0-d tensor of x's dtype, for comparisons.
func scalarOf(x *Var, s float64) *tensor.Tensor { return tensor.ScalarOf(s, x.DType()) }

// constLike returns a constant Var shaped like x and filled with s.
func constLike(x *Var, s float64) *Var { return New(tensor.FullLike(x.value, s)) }

// HardTanh clamps x to [minVal, maxVal], as torch.nn.functional.hardtanh.
// The gradient passes where minVal < x < maxVal (strictly: it is zero at
// both ends, as in PyTorch).
func HardTanh(x *Var, minVal, maxVal float64) *Var {
	checkFloat("HardTanh", x)
	if minVal > maxVal {
		panic(fmt.Sprintf("autograd.HardTanh: min_val %g must not exceed max_val %g", minVal, maxVal))
	}
	v := x.value
	inside := v.Gt(scalarOf(x, minVal)).LogicalAnd(v.Lt(scalarOf(x, maxVal)))
	return annotate(Where(inside, x, New(v.Clamp(minVal, maxVal))), "HardTanh", map[string]any{"min": minVal, "max": maxVal}, x)
}

// ReLU6 returns min(max(x, 0), 6); the gradient is zero at 0 and at 6, as in
// PyTorch.
func ReLU6(x *Var) *Var {
	checkFloat("ReLU6", x)
	return HardTanh(x, 0, 6)
}

// LeakyReLU returns x where x > 0 and negativeSlope*x elsewhere (PyTorch's
// default slope is 0.01). The gradient at 0 is negativeSlope.
func LeakyReLU(x *Var, negativeSlope float64) *Var {
	checkFloat("LeakyReLU", x)
	pos := x.value.Gt(scalarOf(x, 0))
	return annotate(Where(pos, x, x.MulScalar(negativeSlope)), "LeakyReLU", map[string]any{"negativeSlope": negativeSlope}, x)
}

// PReLU returns x where x > 0 and weight*x elsewhere, with a learnable slope
// per channel, as torch.nn.functional.prelu. weight is 1-d: of length 1 (one
// slope for every element), or of length C, the size of x's axis 1 (the
// channel axis; x must then have at least two axes). The gradient at 0 is
// the slope.
func PReLU(x, weight *Var) *Var {
	checkFloat("PReLU", x)
	ws := weight.Shape()
	if len(ws) != 1 {
		panic(fmt.Sprintf("autograd.PReLU: weight must be 1-d, got shape %v", ws))
	}
	var w *Var
	switch c := ws[0]; {
	case c == 1:
		w = weight.Reshape()
	case x.Dim() >= 2 && x.Shape()[1] == c:
		shape := make([]int, x.Dim())
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = c
		w = weight.Reshape(shape...)
	default:
		panic(fmt.Sprintf("autograd.PReLU: weight of shape %v needs 1 element or one per channel (axis 1) of input shape %v", ws, x.Shape()))
	}
	pos := x.value.Gt(scalarOf(x, 0))
	return annotate(Where(pos, x, x.Mul(w)), "PReLU", nil, x, weight)
}

// elu computes scale * (x if x > 0 else alpha*(exp(inScale*x) - 1)), the
// common form of ELU, SELU and CELU. The negative branch sees min(x, 0).
func elu(op string, x *Var, alpha, scale, inScale float64) *Var {
	checkFloat(op, x)
	pos := x.value.Gt(scalarOf(x, 0))
	neg := Where(pos, constLike(x, 0), x)
	if inScale != 1 {
		neg = neg.MulScalar(inScale)
	}
	out := Where(pos, x, neg.Expm1().MulScalar(alpha))
	if scale != 1 {
		out = out.MulScalar(scale)
	}
	return annotate(out, op, map[string]any{"alpha": alpha, "scale": scale, "inScale": inScale}, x)
}

// ELU returns x where x > 0 and alpha*(exp(x) - 1) elsewhere (PyTorch's
// default alpha is 1). The gradient at 0 is alpha, as in PyTorch.
func ELU(x *Var, alpha float64) *Var { return elu("ELU", x, alpha, 1, 1) }

// SELU returns scale * ELU(x, alpha) with PyTorch's fixed constants
// alpha ≈ 1.6733 and scale ≈ 1.0507.
func SELU(x *Var) *Var { return elu("SELU", x, seluAlpha, seluScale, 1) }

// CELU returns x where x > 0 and alpha*(exp(x/alpha) - 1) elsewhere
// (PyTorch's default alpha is 1). The gradient at 0 is 1. alpha must not be
// zero.
func CELU(x *Var, alpha float64) *Var {
	if alpha == 0 {
		panic("autograd.CELU: alpha must not be zero")
	}
	return elu("CELU", x, alpha, 1, 1/alpha)
}

// GELU returns the Gaussian error linear unit x*Φ(x), as
// torch.nn.functional.gelu. approximate is "none" (the exact form with erf)
// or "tanh" (0.5*x*(1 + tanh(sqrt(2/π)*(x + 0.044715*x³)))); anything else
// panics.
func GELU(x *Var, approximate string) *Var {
	checkFloat("GELU", x)
	switch approximate {
	case "none":
		phi := x.MulScalar(1 / math.Sqrt2).Erf().AddScalar(1).MulScalar(0.5)
		return x.Mul(phi)
	case "tanh":
		inner := x.Add(x.PowScalar(3).MulScalar(0.044715)).MulScalar(math.Sqrt(2 / math.Pi))
		return x.Mul(inner.Tanh().AddScalar(1)).MulScalar(0.5)
	}
	panic(fmt.Sprintf("autograd.GELU: approximate must be \"none\" or \"tanh\", got %q", approximate))
}

// SiLU returns x*sigmoid(x) (also called swish).
func SiLU(x *Var) *Var {
	checkFloat("SiLU", x)
	return x.Mul(x.Sigmoid())
}

// Mish returns x*tanh(softplus(x)), with softplus at PyTorch's default beta
// 1 and threshold 20.
func Mish(x *Var) *Var {
	checkFloat("Mish", x)
	return x.Mul(Softplus(x, 1, 20).Tanh())
}

// HardSigmoid returns min(max(x+3, 0), 6)/6. The gradient is 1/6 where
// -3 < x < 3 and zero elsewhere (also at ±3), as in PyTorch.
func HardSigmoid(x *Var) *Var {
	checkFloat("HardSigmoid", x)
	v := x.value
	inside := v.Gt(scalarOf(x, -3)).LogicalAnd(v.Lt(scalarOf(x, 3)))
	outside := New(v.Ge(scalarOf(x, 3)).To(v.DType()))
	return annotate(Where(inside, x.AddScalar(3).DivScalar(6), outside), "HardSigmoid", nil, x)
}

// HardSwish returns x*min(max(x+3, 0), 6)/6. Its gradient is 0 for x < -3,
// x/3 + 1/2 for -3 <= x < 3 and 1 for x >= 3, PyTorch's convention at the
// kinks.
func HardSwish(x *Var) *Var {
	checkFloat("HardSwish", x)
	v := x.value
	low := v.Lt(scalarOf(x, -3))
	mid := v.Lt(scalarOf(x, 3))
	safe := Where(mid, x, constLike(x, 0))
	quad := safe.Mul(safe.AddScalar(3)).DivScalar(6)
	return annotate(Where(low, constLike(x, 0), Where(mid, quad, x)), "HardSwish", nil, x)
}

// Softplus returns log(1 + exp(beta*x))/beta, and x itself where
// beta*x > threshold (PyTorch's defaults are beta 1, threshold 20), as
// torch.nn.functional.softplus. beta must not be zero.
func Softplus(x *Var, beta, threshold float64) *Var {
	checkFloat("Softplus", x)
	if beta == 0 {
		panic("autograd.Softplus: beta must not be zero")
	}
	over := x.value.MulScalar(beta).Gt(scalarOf(x, threshold))
	safe := Where(over, constLike(x, 0), x)
	soft := safe.MulScalar(beta).Exp().Log1p().DivScalar(beta)
	return annotate(Where(over, x, soft), "Softplus", map[string]any{"beta": beta, "threshold": threshold}, x)
}

// Softsign returns x/(1 + |x|).
func Softsign(x *Var) *Var {
	checkFloat("Softsign", x)
	return x.Div(x.Abs().AddScalar(1))
}

// Softmin returns Softmax(-x, axis): exp(-x) normalized along axis.
func Softmin(x *Var, axis int) *Var {
	checkFloat("Softmin", x)
	return Softmax(x.Neg(), axis)
}

// Threshold returns x where x > threshold and value elsewhere, as
// torch.nn.functional.threshold; the gradient is zero at the threshold.
func Threshold(x *Var, threshold, value float64) *Var {
	checkFloat("Threshold", x)
	keep := x.value.Gt(scalarOf(x, threshold))
	return annotate(Where(keep, x, constLike(x, value)), "Threshold", map[string]any{"threshold": threshold, "value": value}, x)
}

// LogSigmoid returns log(sigmoid(x)), computed stably as
// min(x, 0) - log1p(exp(-|x|)). Its gradient is sigmoid(-x).
func LogSigmoid(x *Var) *Var {
	checkFloat("LogSigmoid", x)
	v := x.value
	s := begin("LogSigmoid", x)
	out := v.Minimum(tensor.ZerosLike(v)).Sub(v.Abs().Neg().Exp().Log1p())
	return s.record(out, []*Var{x}, saved(x), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0].Neg().Sigmoid())}
	})
}

// GLU splits x into halves a and b along axis (negative counts from the
// end; PyTorch's default is -1) and returns a*sigmoid(b). The axis must
// have even length.
func GLU(x *Var, axis int) *Var {
	checkFloat("GLU", x)
	d := x.Dim()
	ax := axis
	if ax < 0 {
		ax += d
	}
	if ax < 0 || ax >= d {
		panic(fmt.Sprintf("autograd.GLU: axis %d out of range for input shape %v", axis, x.Shape()))
	}
	n := x.Shape()[ax]
	if n%2 != 0 {
		panic(fmt.Sprintf("autograd.GLU: axis %d of input shape %v has odd length %d; it must split in halves", axis, x.Shape(), n))
	}
	a := x.Narrow(ax, 0, n/2)
	b := x.Narrow(ax, n/2, n/2)
	return a.Mul(b.Sigmoid())
}

// Tanhshrink returns x - tanh(x).
func Tanhshrink(x *Var) *Var {
	checkFloat("Tanhshrink", x)
	return x.Sub(x.Tanh())
}

// Softshrink returns x - lambda where x > lambda, x + lambda where
// x < -lambda and 0 elsewhere (PyTorch's default lambda is 0.5); the
// gradient is zero at ±lambda. lambda must not be negative.
func Softshrink(x *Var, lambda float64) *Var {
	checkFloat("Softshrink", x)
	if lambda < 0 {
		panic(fmt.Sprintf("autograd.Softshrink: lambda must be non-negative, got %g", lambda))
	}
	v := x.value
	above := v.Gt(scalarOf(x, lambda))
	below := v.Lt(scalarOf(x, -lambda))
	return annotate(Where(above, x.SubScalar(lambda), Where(below, x.AddScalar(lambda), constLike(x, 0))), "Softshrink", map[string]any{"lambda": lambda}, x)
}

// Hardshrink returns x where |x| > lambda and 0 elsewhere (PyTorch's
// default lambda is 0.5); the gradient is zero at ±lambda.
func Hardshrink(x *Var, lambda float64) *Var {
	checkFloat("Hardshrink", x)
	v := x.value
	zeroed := v.Ge(scalarOf(x, -lambda)).LogicalAnd(v.Le(scalarOf(x, lambda)))
	return annotate(Where(zeroed, constLike(x, 0), x), "Hardshrink", map[string]any{"lambda": lambda}, x)
}
