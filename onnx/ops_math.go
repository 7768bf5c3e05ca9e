package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// More pointwise math and activations, computed elementwise in float64 on
// the host where tensor has no kernel (trigonometric and hyperbolic
// functions), plus NaN/Inf tests and CastLike.

func mathOps() opTable {
	return opTable{
		"Tan":             {{since: 7, impl: hostUnary(math.Tan)}},
		"Asin":            {{since: 7, impl: hostUnary(math.Asin)}},
		"Acos":            {{since: 7, impl: hostUnary(math.Acos)}},
		"Atan":            {{since: 7, impl: hostUnary(math.Atan)}},
		"Sinh":            {{since: 9, impl: hostUnary(math.Sinh)}},
		"Cosh":            {{since: 9, impl: hostUnary(math.Cosh)}},
		"Asinh":           {{since: 9, impl: hostUnary(math.Asinh)}},
		"Acosh":           {{since: 9, impl: hostUnary(math.Acosh)}},
		"Atanh":           {{since: 9, impl: hostUnary(math.Atanh)}},
		"Softsign":        {{since: 1, impl: floatUnary(func(x *tensor.Tensor) *tensor.Tensor { return x.Div(x.Abs().AddScalar(1)) })}},
		"ThresholdedRelu": {{since: 10, impl: opThresholdedRelu}},
		"Shrink":          {{since: 9, impl: opShrink}},
		"Celu":            {{since: 12, impl: halfLift(opCelu)}},
		"HardSwish":       {{since: 14, impl: floatUnary(func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(x.Affine(1.0/6, 0.5).Clamp(0, 1)) })}},
		"Mish":            {{since: 18, impl: floatUnary(func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(softplus(x).Tanh()) })}},
		"Gelu":            {{since: 20, impl: opGelu}},
		"PRelu":           {{since: 6, impl: opPRelu}},
		"IsNaN":           {{since: 9, impl: opIsNaN}},
		"IsInf":           {{since: 10, impl: opIsInf}},
		"CastLike":        {{since: 15, impl: opCastLike}},
	}
}

// hostUnary applies f to every element in float64 and returns the input's
// floating dtype.
func hostUnary(f func(float64) float64) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		if !x.DType().IsFloat() {
			return nil, fmt.Errorf("onnx: %v: input has type %s, want a floating type", n, x.DType())
		}
		v := x.Float64s()
		for i, e := range v {
			v[i] = f(e)
		}
		return one(tensor.FromSlice(v, x.Shape()...).To(x.DType()))
	}
}

func opThresholdedRelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	alpha := n.attrFloat("alpha", 1)
	return one(tensor.Where(x.Gt(tensor.FullLike(x, alpha)), x, tensor.ZerosLike(x)))
}

func opShrink(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	lambd, bias := n.attrFloat("lambd", 0.5), n.attrFloat("bias", 0)
	f := x.To(tensor.Float64)
	y := tensor.Where(f.Lt(tensor.FullLike(f, -lambd)), f.AddScalar(bias),
		tensor.Where(f.Gt(tensor.FullLike(f, lambd)), f.SubScalar(bias), tensor.ZerosLike(f)))
	return one(y.To(x.DType()))
}

func opCelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	alpha := n.attrFloat("alpha", 1)
	neg := x.DivScalar(alpha).Expm1().MulScalar(alpha).Clamp(math.Inf(-1), 0)
	return one(x.Relu().Add(neg))
}

func opPRelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	slope, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if err := n.checkBroadcast(x, slope); err != nil {
		return nil, err
	}
	if n.opset < 7 && slope.Dim() == 1 && x.Dim() > 2 && slope.Numel() == x.Shape()[1] {
		// Before opset 7 a 1-d slope is per channel (axis 1).
		slope = slope.Reshape(channelShape(slope.Numel(), x.Dim())...)
	}
	return one(tensor.Where(x.Lt(tensor.ZerosLike(x)), x.Mul(slope), x))
}

func opIsNaN(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(x.Ne(x))
}

func opIsInf(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	pos, neg := n.attrInt("detect_positive", 1) == 1, n.attrInt("detect_negative", 1) == 1
	v := x.Float64s()
	out := make([]bool, len(v))
	for i, e := range v {
		out[i] = (pos && math.IsInf(e, 1)) || (neg && math.IsInf(e, -1))
	}
	return one(tensor.FromSlice(out, x.Shape()...))
}

func opCastLike(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	like, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if t, ok := n.smallIn[1]; ok {
		// like is of a small type, held widened (see smalltypes.go).
		return one(castSmall(x, t, n.attrInt("saturate", 1) != 0, n.attrString("round_mode", "up")))
	}
	return one(x.To(like.DType()))
}

// opGelu is x·Φ(x), exactly (approximate "none", with erf) or with the tanh
// approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func opGelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	switch a := n.attrString("approximate", "none"); a {
	case "none":
		return one(x.Mul(x.MulScalar(1/math.Sqrt2).Erf().Affine(0.5, 0.5)))
	case "tanh":
		inner := x.Add(x.Mul(x).Mul(x).MulScalar(0.044715)).MulScalar(math.Sqrt(2 / math.Pi))
		return one(x.Mul(inner.Tanh().Affine(0.5, 0.5)))
	default:
		return nil, fmt.Errorf("onnx: %v: approximate %q, want none or tanh", n, a)
	}
}
