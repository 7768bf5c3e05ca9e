package autograd

import (
	"math"

	"github.com/emberml/ember/tensor"
)

// Elementwise operations with NumPy broadcasting. Each gradient rule sits
// beside its op and is written in Var operations, so it can be recorded
// again for higher-order gradients.

// SumTo sums v over the axes that broadcasting added or stretched so that the
// result has the given shape: the adjoint of broadcasting.
func (v *Var) SumTo(shape []int) *Var {
	vs := v.value.Shape()
	if sameShape(vs, shape) {
		return v
	}
	lead := len(vs) - len(shape)
	var axes []int
	for i := range vs {
		if i < lead || (shape[i-lead] == 1 && vs[i] != 1) {
			axes = append(axes, i)
		}
	}
	s := v
	if len(axes) > 0 {
		s = v.Sum(axes, true)
	}
	return s.Reshape(shape...)
}

// Add returns v + u.
func (v *Var) Add(u *Var) *Var {
	return begin("Add", v, u).record(v.value.Add(u.value), []*Var{v, u}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.SumTo(in[0].Shape()), g.SumTo(in[1].Shape())}
	})
}

// Sub returns v - u.
func (v *Var) Sub(u *Var) *Var {
	return begin("Sub", v, u).record(v.value.Sub(u.value), []*Var{v, u}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.SumTo(in[0].Shape()), g.Neg().SumTo(in[1].Shape())}
	})
}

// Mul returns v * u.
func (v *Var) Mul(u *Var) *Var {
	return begin("Mul", v, u).record(v.value.Mul(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[1]).SumTo(in[0].Shape()), g.Mul(in[0]).SumTo(in[1].Shape())}
	})
}

// Div returns v / u.
func (v *Var) Div(u *Var) *Var {
	return begin("Div", v, u).record(v.value.Div(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, _ *Var) []*Var {
		a, b := in[0], in[1]
		ga := g.Div(b).SumTo(a.Shape())
		gb := g.Mul(a).Div(b.Mul(b)).Neg().SumTo(b.Shape())
		return []*Var{ga, gb}
	})
}

// Pow returns v ** u.
func (v *Var) Pow(u *Var) *Var {
	return begin("Pow", v, u).record(v.value.Pow(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, out *Var) []*Var {
		a, b := in[0], in[1]
		// d/da = b * a**(b-1); d/db = out * log(a), taken as 0 where a == 0
		// (PyTorch's convention, which keeps 0**b differentiable in b).
		ga := g.Mul(b).Mul(a.Pow(b.AddScalar(-1))).SumTo(a.Shape())
		zero := a.value.Eq(tensor.ZerosLike(a.value))
		logA := a.Where0(zero).Log().MaskedZero(zero)
		gb := g.Mul(a.Pow(b)).Mul(logA).SumTo(b.Shape())
		return []*Var{ga, gb}
	})
}

// Where0 returns v with the masked elements replaced by one (a safe argument
// for Log); the gradient does not flow to replaced elements.
func (v *Var) Where0(mask *tensor.Tensor) *Var {
	return Where(mask, New(tensor.OnesLike(v.value)), v)
}

// MaskedZero returns v with the masked elements set to zero.
func (v *Var) MaskedZero(mask *tensor.Tensor) *Var {
	return Where(mask, New(tensor.ZerosLike(v.value)), v)
}

// Maximum returns the elementwise maximum; ties split the gradient evenly.
func (v *Var) Maximum(u *Var) *Var {
	return begin("Maximum", v, u).record(v.value.Maximum(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, _ *Var) []*Var {
		return minMaxGrad(g, in[0], in[1], in[0].value.Gt(in[1].value))
	})
}

// Minimum returns the elementwise minimum; ties split the gradient evenly.
func (v *Var) Minimum(u *Var) *Var {
	return begin("Minimum", v, u).record(v.value.Minimum(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, _ *Var) []*Var {
		return minMaxGrad(g, in[0], in[1], in[0].value.Lt(in[1].value))
	})
}

func minMaxGrad(g, a, b *Var, aWins *tensor.Tensor) []*Var {
	tie := a.value.Eq(b.value)
	wa := tensor.Where(aWins, tensor.OnesLike(g.value), tensor.ZerosLike(g.value))
	wa = tensor.Where(tie, tensor.FullLike(g.value, 0.5), wa)
	wb := tensor.OnesLike(wa).Sub(wa)
	return []*Var{g.Mul(New(wa)).SumTo(a.Shape()), g.Mul(New(wb)).SumTo(b.Shape())}
}

// AddScalar returns v + s.
func (v *Var) AddScalar(s float64) *Var {
	return begin("AddScalar", v).recordAttrs(map[string]any{"scalar": s}, v.value.AddScalar(s), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g}
	})
}

// SubScalar returns v - s.
func (v *Var) SubScalar(s float64) *Var {
	return begin("SubScalar", v).recordAttrs(map[string]any{"scalar": s}, v.value.SubScalar(s), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g}
	})
}

// MulScalar returns v * s.
func (v *Var) MulScalar(s float64) *Var {
	return begin("MulScalar", v).recordAttrs(map[string]any{"scalar": s}, v.value.MulScalar(s), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.MulScalar(s)}
	})
}

// DivScalar returns v / s.
func (v *Var) DivScalar(s float64) *Var {
	return begin("DivScalar", v).recordAttrs(map[string]any{"scalar": s}, v.value.DivScalar(s), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.DivScalar(s)}
	})
}

// PowScalar returns v ** e.
func (v *Var) PowScalar(e float64) *Var {
	return begin("PowScalar", v).recordAttrs(map[string]any{"exponent": e}, v.value.PowScalar(e), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		if e == 0 {
			return []*Var{g.MulScalar(0)}
		}
		return []*Var{g.Mul(in[0].PowScalar(e - 1)).MulScalar(e)}
	})
}

// Neg returns -v.
func (v *Var) Neg() *Var {
	return begin("Neg", v).record(v.value.Neg(), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Neg()}
	})
}

// Abs returns |v| (gradient sign(v), 0 at 0).
func (v *Var) Abs() *Var {
	return begin("Abs", v).record(v.value.Abs(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(New(in[0].value.Sign()))}
	})
}

// Exp returns e**v.
func (v *Var) Exp() *Var {
	s := begin("Exp", v)
	out := v.value.Exp()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Mul(out)}
	})
}

// Log returns the natural logarithm.
func (v *Var) Log() *Var {
	return begin("Log", v).record(v.value.Log(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Div(in[0])}
	})
}

// Log1p returns log(1+v).
func (v *Var) Log1p() *Var {
	return begin("Log1p", v).record(v.value.Log1p(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Div(in[0].AddScalar(1))}
	})
}

// Expm1 returns e**v - 1.
func (v *Var) Expm1() *Var {
	s := begin("Expm1", v)
	out := v.value.Expm1()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Mul(out.AddScalar(1))}
	})
}

// Sqrt returns the square root.
func (v *Var) Sqrt() *Var {
	s := begin("Sqrt", v)
	out := v.value.Sqrt()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Div(out.MulScalar(2))}
	})
}

// Rsqrt returns 1/sqrt(v).
func (v *Var) Rsqrt() *Var {
	return begin("Rsqrt", v).record(v.value.Rsqrt(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0].PowScalar(-1.5)).MulScalar(-0.5)}
	})
}

// Sin returns the sine.
func (v *Var) Sin() *Var {
	return begin("Sin", v).record(v.value.Sin(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0].Cos())}
	})
}

// Cos returns the cosine.
func (v *Var) Cos() *Var {
	return begin("Cos", v).record(v.value.Cos(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0].Sin()).Neg()}
	})
}

// Tanh returns the hyperbolic tangent.
func (v *Var) Tanh() *Var {
	s := begin("Tanh", v)
	out := v.value.Tanh()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Mul(out.Mul(out).Neg().AddScalar(1))}
	})
}

// Sigmoid returns 1/(1+e**-v).
func (v *Var) Sigmoid() *Var {
	s := begin("Sigmoid", v)
	out := v.value.Sigmoid()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Mul(out.Mul(out.Neg().AddScalar(1)))}
	})
}

// Relu returns max(v, 0); the gradient at 0 is 0, as in PyTorch.
func (v *Var) Relu() *Var {
	s := begin("Relu", v)
	out := v.value.Relu()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{reluGrad(g, out.value)}
	})
}

// reluGrad is g masked to where Relu's output out is positive, in one fused
// pass. It is linear in g with the mask held constant, so its own gradient
// is the same mask applied to the incoming gradient (higher orders work).
func reluGrad(g *Var, out *tensor.Tensor) *Var {
	return begin("ReluBackward", g).record(tensor.ReluGrad(g.value, out), []*Var{g}, []*tensor.Tensor{out}, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{reluGrad(gg, out)}
	})
}

// Clamp limits v to [lo, hi]; the gradient passes where lo <= v <= hi.
func (v *Var) Clamp(lo, hi float64) *Var {
	return begin("Clamp", v).recordAttrs(map[string]any{"min": lo, "max": hi}, v.value.Clamp(lo, hi), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		x := in[0].value
		inside := x.Ge(tensor.ScalarOf(lo, x.DType())).LogicalAnd(x.Le(tensor.ScalarOf(hi, x.DType())))
		return []*Var{g.Mul(New(inside.To(g.DType())))}
	})
}

// Square returns v*v.
func (v *Var) Square() *Var {
	return begin("Square", v).record(v.value.Square(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0]).MulScalar(2)}
	})
}

// Reciprocal returns 1/v.
func (v *Var) Reciprocal() *Var {
	s := begin("Reciprocal", v)
	out := v.value.Reciprocal()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, out *Var) []*Var {
		return []*Var{g.Mul(out.Mul(out)).Neg()}
	})
}

// Erf returns the error function.
func (v *Var) Erf() *Var {
	return begin("Erf", v).record(v.value.Erf(), []*Var{v}, saved(v), func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(in[0].Square().Neg().Exp()).MulScalar(2 / math.Sqrt(math.Pi))}
	})
}

// stepOp wraps a piecewise-constant function: its gradient is zero (also
// where the incoming gradient is Inf or NaN).
func (v *Var) stepOp(name string, kernel func(*tensor.Tensor) *tensor.Tensor) *Var {
	return begin(name, v).record(kernel(v.value), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{New(tensor.ZerosLike(in[0].value))}
	})
}

// Sign returns -1, 0 or 1 (zero gradient).
func (v *Var) Sign() *Var { return v.stepOp("Sign", (*tensor.Tensor).Sign) }

// Floor rounds down (zero gradient).
func (v *Var) Floor() *Var { return v.stepOp("Floor", (*tensor.Tensor).Floor) }

// Ceil rounds up (zero gradient).
func (v *Var) Ceil() *Var { return v.stepOp("Ceil", (*tensor.Tensor).Ceil) }

// Round rounds half to even (zero gradient).
func (v *Var) Round() *Var { return v.stepOp("Round", (*tensor.Tensor).Round) }

// Where returns a where cond is true and b elsewhere; the gradient flows to
// the chosen side.
func Where(cond *tensor.Tensor, a, b *Var) *Var {
	s := begin("Where", a, b)
	out := tensor.Where(cond, a.value, b.value)
	return s.recordAttrs(map[string]any{"cond": cond}, out, []*Var{a, b}, []*tensor.Tensor{cond}, func(g *Var, in []*Var, _ *Var) []*Var {
		zero := New(tensor.ZerosLike(g.value))
		return []*Var{Where(cond, g, zero).SumTo(in[0].Shape()), Where(cond, zero, g).SumTo(in[1].Shape())}
	})
}

// saved lists the values of vs for the in-place version check.
func saved(vs ...*Var) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		out[i] = v.value
	}
	return out
}
