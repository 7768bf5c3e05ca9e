package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Elementwise operators: arithmetic, comparisons, logic, unary math and the
// pointwise activations.

func elementwiseOps() opTable {
	return opTable{
		"Add": {{since: 1, impl: arith((*tensor.Tensor).Add)}},
		"Sub": {{since: 1, impl: arith((*tensor.Tensor).Sub)}},
		"Mul": {{since: 1, impl: arith((*tensor.Tensor).Mul)}},
		"Div": {{since: 1, impl: opDiv}},
		"Pow": {{since: 1, impl: opPow}},
		"Mod": {{since: 10, impl: opMod}},

		"BitShift":   {{since: 11, impl: opBitShift}},
		"BitwiseAnd": {{since: 18, impl: bitwise(func(a, b int64) int64 { return a & b })}},
		"BitwiseOr":  {{since: 18, impl: bitwise(func(a, b int64) int64 { return a | b })}},
		"BitwiseXor": {{since: 18, impl: bitwise(func(a, b int64) int64 { return a ^ b })}},
		"BitwiseNot": {{since: 18, impl: opBitwiseNot}},

		"Equal":          {{since: 1, impl: compare((*tensor.Tensor).Eq)}},
		"Less":           {{since: 1, impl: compare((*tensor.Tensor).Lt)}},
		"Greater":        {{since: 1, impl: compare((*tensor.Tensor).Gt)}},
		"LessOrEqual":    {{since: 12, impl: compare((*tensor.Tensor).Le)}},
		"GreaterOrEqual": {{since: 12, impl: compare((*tensor.Tensor).Ge)}},
		"And":            {{since: 1, impl: compare((*tensor.Tensor).LogicalAnd)}},
		"Or":             {{since: 1, impl: compare((*tensor.Tensor).LogicalOr)}},
		"Xor":            {{since: 1, impl: compare((*tensor.Tensor).LogicalXor)}},
		"Not":            {{since: 1, impl: unary((*tensor.Tensor).LogicalNot)}},
		"Where":          {{since: 9, impl: opWhere}},

		"Max":  {{since: 1, impl: variadic((*tensor.Tensor).Maximum, false)}},
		"Min":  {{since: 1, impl: variadic((*tensor.Tensor).Minimum, false)}},
		"Sum":  {{since: 1, impl: variadic((*tensor.Tensor).Add, false)}},
		"Mean": {{since: 1, impl: variadic((*tensor.Tensor).Add, true)}},

		"Neg":        {{since: 1, impl: unary((*tensor.Tensor).Neg)}},
		"Abs":        {{since: 1, impl: unary((*tensor.Tensor).Abs)}},
		"Sign":       {{since: 9, impl: unary((*tensor.Tensor).Sign)}},
		"Exp":        {{since: 1, impl: floatUnary((*tensor.Tensor).Exp)}},
		"Log":        {{since: 1, impl: floatUnary((*tensor.Tensor).Log)}},
		"Sqrt":       {{since: 1, impl: floatUnary((*tensor.Tensor).Sqrt)}},
		"Reciprocal": {{since: 1, impl: floatUnary((*tensor.Tensor).Reciprocal)}},
		"Relu":       {{since: 1, impl: unary((*tensor.Tensor).Relu)}},
		"Sigmoid":    {{since: 1, impl: floatUnary((*tensor.Tensor).Sigmoid)}},
		"Tanh":       {{since: 1, impl: floatUnary((*tensor.Tensor).Tanh)}},
		"Erf":        {{since: 9, impl: floatUnary((*tensor.Tensor).Erf)}},
		"Floor":      {{since: 1, impl: floatUnary((*tensor.Tensor).Floor)}},
		"Ceil":       {{since: 1, impl: floatUnary((*tensor.Tensor).Ceil)}},
		"Round":      {{since: 11, impl: floatUnary((*tensor.Tensor).Round)}},
		"Sin":        {{since: 7, impl: floatUnary((*tensor.Tensor).Sin)}},
		"Cos":        {{since: 7, impl: floatUnary((*tensor.Tensor).Cos)}},

		"Cast":        {{since: 1, impl: opCast}},
		"Clip":        {{since: 1, until: 10, impl: opClipAttr}, {since: 11, impl: opClipInputs}},
		"LeakyRelu":   {{since: 1, impl: opLeakyRelu}},
		"Elu":         {{since: 1, impl: halfLift(opElu)}},
		"Selu":        {{since: 1, impl: opSelu}},
		"HardSigmoid": {{since: 1, impl: opHardSigmoid}},
		"Softplus":    {{since: 1, impl: opSoftplus}},
	}
}

// unary adapts a one-input tensor method.
func unary(f func(*tensor.Tensor) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		return one(f(x))
	}
}

// floatUnary adapts a unary method defined for floating inputs; the ONNX
// result keeps the input's type.
func floatUnary(f func(*tensor.Tensor) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		if !x.DType().IsFloat() {
			return nil, fmt.Errorf("onnx: %v: input has type %s, want a floating type", n, x.DType())
		}
		return one(f(x))
	}
}

// sameType checks that two operands of an elementwise op share a dtype, as
// ONNX's type constraints require, and that their broadcast fits the
// element limit.
func (n *node) sameType(a, b *tensor.Tensor) error {
	if a.DType() != b.DType() {
		return fmt.Errorf("onnx: %v: operand types %s and %s differ", n, a.DType(), b.DType())
	}
	return n.checkBroadcast(a, b)
}

// arith adapts a broadcasting two-input method whose result keeps the
// operand type.
func arith(f func(a, b *tensor.Tensor) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		b, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		if err := n.sameType(a, b); err != nil {
			return nil, err
		}
		return one(f(a, b).To(a.DType()))
	}
}

// compare adapts a comparison or logical method giving Bool.
func compare(f func(a, b *tensor.Tensor) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		b, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		if err := n.sameType(a, b); err != nil {
			return nil, err
		}
		return one(f(a, b).To(tensor.Bool))
	}
}

// variadic folds f over one or more broadcasting inputs; mean divides the
// result by their count.
func variadic(f func(a, b *tensor.Tensor) *tensor.Tensor, mean bool) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return nil, fmt.Errorf("onnx: %v needs at least one input", n)
		}
		acc := in[0]
		for _, t := range in[1:] {
			if t == nil {
				return nil, fmt.Errorf("onnx: %v: inputs must all be present", n)
			}
			if err := n.sameType(acc, t); err != nil {
				return nil, err
			}
			acc = f(acc, t)
		}
		if len(in) == 1 {
			acc = acc.Clone()
		}
		if mean {
			acc = acc.DivScalar(float64(len(in)))
		}
		return one(acc.To(in[0].DType()))
	}
}

// opDiv divides; integer division truncates toward zero as in C
// (tensor.TruncDiv, exact in the operands' own type). A zero integer
// divisor, which ONNX leaves undefined, is an error.
func opDiv(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b, err := n.binaryOperands(in)
	if err != nil {
		return nil, err
	}
	if a.DType().IsFloat() {
		return one(a.Div(b).To(a.DType())) // storage dtypes divide in float32
	}
	return intResult(n, tensor.TruncDiv, a, b)
}

// opMod is the remainder: with fmod=1 it takes the dividend's sign (C
// fmod, tensor.TruncRem for integers), else the divisor's (Python %,
// tensor.FloorRem); the two agree on unsigned values. A zero integer
// divisor is an error.
func opMod(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b, err := n.binaryOperands(in)
	if err != nil {
		return nil, err
	}
	fmod := n.attrInt("fmod", 0) == 1
	if a.DType().IsFloat() {
		if !fmod {
			return nil, fmt.Errorf("onnx: %v: fmod must be 1 for floating inputs", n)
		}
		fa, fb := a.To(tensor.Float64), b.To(tensor.Float64)
		q := fa.Div(fb)
		q = q.Abs().Floor().Mul(q.Sign())
		return one(fa.Sub(q.Mul(fb)).To(a.DType()))
	}
	if fmod {
		return intResult(n, tensor.TruncRem, a, b)
	}
	return intResult(n, tensor.FloorRem, a, b)
}

// binaryOperands returns the two inputs of a binary node, which must share
// a type.
func (n *node) binaryOperands(in []*tensor.Tensor) (a, b *tensor.Tensor, err error) {
	if a, err = n.need(in, 0); err != nil {
		return nil, nil, err
	}
	if b, err = n.need(in, 1); err != nil {
		return nil, nil, err
	}
	if err := n.sameType(a, b); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// intResult runs an integer division op of package tensor, naming the node
// in its error.
func intResult(n *node, f func(a, b *tensor.Tensor) (*tensor.Tensor, error), a, b *tensor.Tensor) ([]*tensor.Tensor, error) {
	out, err := f(a, b)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	return one(out)
}

// isUnsigned reports whether dt is an unsigned integer type.
func isUnsigned(dt tensor.DType) bool {
	return dt == tensor.Uint8 || dt == tensor.Uint16 || dt == tensor.Uint32 || dt == tensor.Uint64
}

// opBitShift shifts the bits of unsigned integers left or right by the
// second input's amounts (broadcast). Bits shifted out are lost; shifts by
// the width or more give 0. UINT8, UINT16, UINT32 and UINT64 are the
// unsigned types Ember holds.
func opBitShift(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if err := n.sameType(a, b); err != nil {
		return nil, err
	}
	dt := a.DType()
	if !isUnsigned(dt) {
		return nil, fmt.Errorf("onnx: %v: input of type %s, want an unsigned integer type", n, dt)
	}
	left := false
	switch dir := n.attrString("direction", ""); dir {
	case "LEFT":
		left = true
	case "RIGHT":
	default:
		return nil, fmt.Errorf("onnx: %v: direction %q, want LEFT or RIGHT", n, dir)
	}
	shape := tensor.BroadcastShapes("BitShift", a.Shape(), b.Shape())
	x, s := a.Expand(shape...).Uint64s(), b.Expand(shape...).Uint64s()
	for i, v := range x {
		// Go gives 0 for shifts of 64 or more; converting back to dt drops
		// the bits shifted past its width.
		if left {
			x[i] = v << s[i]
		} else {
			x[i] = v >> s[i]
		}
	}
	return one(tensor.FromSlice(x, shape...).To(dt))
}

// opPow raises the base to the exponent; the result has the base's type.
func opPow(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if err := n.checkBroadcast(a, b); err != nil {
		return nil, err
	}
	if a.DType() == b.DType() && a.DType().IsFloat() {
		return one(a.Pow(b))
	}
	return one(a.To(tensor.Float64).Pow(b.To(tensor.Float64)).To(a.DType()))
}

func opWhere(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	c, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	a, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 2)
	if err != nil {
		return nil, err
	}
	if c.DType() != tensor.Bool {
		return nil, fmt.Errorf("onnx: %v: condition has type %s, want bool", n, c.DType())
	}
	if err := n.checkBroadcast(c, a, b); err != nil {
		return nil, err
	}
	if err := n.sameType(a, b); err != nil {
		return nil, err
	}
	return one(tensor.Where(c, a, b))
}

func opCast(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if !n.has("to") {
		return nil, fmt.Errorf("onnx: %v: attribute \"to\" is required", n)
	}
	if to := n.attrInt("to", 0); isSmallType(to) {
		return one(castSmall(x, to, n.attrInt("saturate", 1) != 0, n.attrString("round_mode", "up")))
	}
	dt, err := dtypeFromONNX(n.attrInt("to", 0))
	if err != nil {
		return nil, fmt.Errorf("%v: %w", n, err)
	}
	return one(x.To(dt))
}

// clip clamps x to [lo, hi] keeping its type.
func clip(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	if x.DType().IsFloat() {
		return x.Clamp(lo, hi)
	}
	return x.To(tensor.Float64).Clamp(lo, hi).To(x.DType())
}

// clipInt clamps the integer x to the one-element bounds lo and hi (either
// may be nil) in x's own type, so that INT64 and UINT64 bounds beyond 2^53
// stay exact. As for floats, min > max sets every element to max.
func clipInt(x, lo, hi *tensor.Tensor) *tensor.Tensor {
	if lo != nil {
		lo = lo.Reshape().To(x.DType())
	}
	if hi != nil {
		hi = hi.Reshape().To(x.DType())
		if lo != nil && lo.Gt(hi).Item() != 0 {
			return hi.Expand(x.Shape()...).Contiguous()
		}
	}
	if lo != nil {
		x = x.Maximum(lo)
	}
	if hi != nil {
		x = x.Minimum(hi)
	}
	return x
}

func opClipAttr(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(clip(x, n.attrFloat("min", math.Inf(-1)), n.attrFloat("max", math.Inf(1))))
}

func opClipInputs(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if !x.DType().IsFloat() {
		return one(clipInt(x, arg(in, 1), arg(in, 2)))
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if t := arg(in, 1); t != nil {
		lo = t.Item()
	}
	if t := arg(in, 2); t != nil {
		hi = t.Item()
	}
	if lo > hi {
		// ONNX (like numpy.clip) sets every element to max when min > max.
		return one(tensor.FullLike(x, hi))
	}
	return one(clip(x, lo, hi))
}

// negPart returns where(x < 0, f(x), x).
func negPart(x *tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	return tensor.Where(x.Lt(tensor.ZerosLike(x)), f(x), x)
}

func opLeakyRelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	alpha := n.attrFloat("alpha", 0.01)
	return one(negPart(x, func(t *tensor.Tensor) *tensor.Tensor { return t.MulScalar(alpha) }))
}

func opElu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	alpha := n.attrFloat("alpha", 1)
	return one(negPart(x, func(t *tensor.Tensor) *tensor.Tensor { return t.Expm1().MulScalar(alpha) }))
}

func opSelu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	alpha := n.attrFloat("alpha", 1.67326319217681884765625)
	gamma := n.attrFloat("gamma", 1.05070102214813232421875)
	y := tensor.Where(x.Le(tensor.ZerosLike(x)), x.Exp().MulScalar(alpha).SubScalar(alpha), x)
	return one(y.MulScalar(gamma))
}

func opHardSigmoid(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(x.Affine(n.attrFloat("alpha", 0.2), n.attrFloat("beta", 0.5)).Clamp(0, 1))
}

// opSoftplus is log(1+exp(x)), computed as relu(x) + log1p(exp(-|x|)).
func opSoftplus(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(softplus(x))
}

// softplus is log(1 + exp(x)), written to neither overflow nor lose small
// values: max(x, 0) + log1p(exp(-|x|)).
func softplus(x *tensor.Tensor) *tensor.Tensor {
	return x.Relu().Add(x.Abs().Neg().Exp().Log1p())
}

// bitwise returns an elementwise bitwise operator on integer tensors of one
// dtype. The values are sign- or zero-extended to int64, combined and
// narrowed back, which keeps exactly the dtype's bits.
func bitwise(f func(a, b int64) int64) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		ab, err := n.needFirst(in, 2)
		if err != nil {
			return nil, err
		}
		a, b := ab[0], ab[1]
		if !a.DType().IsInt() || a.DType() != b.DType() {
			return nil, fmt.Errorf("onnx: %v: inputs of types %s and %s, want one integer type", n, a.DType(), b.DType())
		}
		if err := n.checkBroadcast(a, b); err != nil {
			return nil, err
		}
		shape := tensor.BroadcastShapes(n.opType, a.Shape(), b.Shape())
		x, y := a.Expand(shape...).Int64s(), b.Expand(shape...).Int64s()
		for i := range x {
			x[i] = f(x[i], y[i])
		}
		return one(tensor.FromSlice(x, shape...).To(a.DType()))
	}
}

func opBitwiseNot(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if !a.DType().IsInt() {
		return nil, fmt.Errorf("onnx: %v: input of type %s, want an integer type", n, a.DType())
	}
	x := a.Int64s()
	for i, v := range x {
		x[i] = ^v
	}
	return one(tensor.FromSlice(x, a.Shape()...).To(a.DType()))
}
