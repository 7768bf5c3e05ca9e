package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Quantization operators: linear (de)quantization, dynamic quantization and
// the integer and quantized matrix products and convolutions. Scales and
// zero points are per tensor (one element) or per axis (1-d along an axis).
// Arithmetic follows the ONNX reference: the quotient x/scale and the
// requantization multiplier are computed in float32, rounding is half to
// even, and results saturate to the output type's range.

func quantOps() opTable {
	return opTable{
		"QuantizeLinear":        {{since: 10, impl: opQuantizeLinear}},
		"DequantizeLinear":      {{since: 10, impl: opDequantizeLinear}},
		"DynamicQuantizeLinear": {{since: 11, impl: opDynamicQuantizeLinear}},
		"MatMulInteger":         {{since: 10, impl: opMatMulInteger}},
		"ConvInteger":           {{since: 10, impl: opConvInteger}},
		"QLinearMatMul":         {{since: 10, impl: opQLinearMatMul}},
		"QLinearConv":           {{since: 10, impl: opQLinearConv}},
	}
}

// quantRange returns the range a quantized dtype saturates to.
func quantRange(n *node, dt tensor.DType) (lo, hi float64, err error) {
	switch dt {
	case tensor.Uint8:
		return 0, math.MaxUint8, nil
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8, nil
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16, nil
	case tensor.Uint16:
		return 0, math.MaxUint16, nil
	}
	return 0, 0, fmt.Errorf("onnx: %v: quantized type %s is not supported (want uint8, int8, uint16 or int16)", n, dt)
}

// alongAxis returns the scale or zero point p as a tensor that broadcasts
// against a tensor of shape xs: a one-element p as a scalar, a 1-d p as a
// vector on axis (possibly negative), whose length it must match.
func alongAxis(n *node, p *tensor.Tensor, xs []int, axis int) (*tensor.Tensor, error) {
	if p.Numel() == 1 && p.Dim() <= 1 {
		return p.Reshape(), nil
	}
	a, err := n.normAxis(axis, len(xs))
	if err != nil {
		return nil, err
	}
	if p.Dim() != 1 || p.Shape()[0] != xs[a] {
		return nil, fmt.Errorf("onnx: %v: scale or zero point of shape %v, want one element or %d along axis %d of %v", n, p.Shape(), xs[a], a, xs)
	}
	shape := make([]int, len(xs))
	for i := range shape {
		shape[i] = 1
	}
	shape[a] = xs[a]
	return p.Reshape(shape...), nil
}

// quantParam shapes a scale or zero point p to broadcast against an input
// of shape xs: one value for the whole tensor, one per index of the axis
// attribute (opset 13), or with block_size (opset 21) one per block of
// block_size consecutive indices along that axis — p then has xs's shape
// except ceil(xs[axis]/block_size) along the axis, each value repeated
// over its block.
func (n *node) quantParam(p *tensor.Tensor, xs []int) (*tensor.Tensor, error) {
	axis := int(n.attrInt("axis", 1))
	bs := int(n.attrInt("block_size", 0))
	if bs < 0 {
		return nil, fmt.Errorf("onnx: %v: block_size %d is negative", n, bs)
	}
	if bs == 0 {
		return alongAxis(n, p, xs, axis)
	}
	a, err := n.normAxis(axis, len(xs))
	if err != nil {
		return nil, err
	}
	ps := p.Shape()
	blocks := (xs[a] + bs - 1) / bs
	ok := len(ps) == len(xs)
	for i := 0; ok && i < len(xs); i++ {
		ok = (i == a && ps[i] == blocks) || (i != a && ps[i] == xs[i])
	}
	if !ok {
		return nil, fmt.Errorf("onnx: %v: scale or zero point of shape %v does not block %v by %d along axis %d", n, ps, xs, bs, a)
	}
	// [.., blocks, ..] → [.., blocks, bs, ..] → [.., blocks·bs, ..], cut to xs[a].
	wide := append(append(append([]int{}, ps[:a+1]...), bs), ps[a+1:]...)
	merged := append(append(append([]int{}, ps[:a]...), blocks*bs), ps[a+1:]...)
	return p.Unsqueeze(a+1).Expand(wide...).Reshape(merged...).Narrow(a, 0, xs[a]), nil
}

// quantize returns saturate(round(q) + zp) as dt, for q in float32.
func quantize(n *node, q, zp *tensor.Tensor, dt tensor.DType) (*tensor.Tensor, error) {
	lo, hi, err := quantRange(n, dt)
	if err != nil {
		return nil, err
	}
	y := q.Round()
	if zp != nil {
		y = y.Add(zp.To(tensor.Float32))
	}
	return y.Clamp(lo, hi).To(dt), nil
}

func opQuantizeLinear(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	scale, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	zp := arg(in, 2)
	dt := tensor.Uint8
	switch {
	case zp != nil:
		dt = zp.DType()
	case n.attrInt("output_dtype", 0) != 0:
		if dt, err = dtypeFromONNX(n.attrInt("output_dtype", 0)); err != nil {
			return nil, err
		}
	}
	if scale, err = n.quantParam(scale, x.Shape()); err != nil {
		return nil, err
	}
	if zp != nil {
		if zp, err = n.quantParam(zp, x.Shape()); err != nil {
			return nil, err
		}
	}
	q := x.To(tensor.Float32).Div(scale.To(tensor.Float32))
	if t, ok := quantSmallType(n, zp != nil); ok {
		return one(quantizeSmall(n, q, zp, t))
	}
	y, err := quantize(n, q, zp, dt)
	if err != nil {
		return nil, err
	}
	return one(y)
}

// quantSmallType returns the small type (see smalltypes.go) QuantizeLinear
// produces: its zero point's declared type, or else output_dtype.
func quantSmallType(n *node, hasZP bool) (int64, bool) {
	if hasZP {
		t, ok := n.smallIn[2]
		return t, ok
	}
	t := n.attrInt("output_dtype", 0)
	return t, isSmallType(t)
}

// quantizeSmall returns q + zp in small type t: for the integers rounded
// half to even and saturated to their range, for the floats rounded to
// their grid, saturating unless the saturate attribute is 0.
func quantizeSmall(n *node, q, zp *tensor.Tensor, t int64) *tensor.Tensor {
	if lo, hi, ok := smallIntRange(t); ok {
		y := q.Round()
		if zp != nil {
			y = y.Add(zp.To(tensor.Float32))
		}
		return y.Clamp(float64(lo), float64(hi)).To(smallHolder(t))
	}
	if zp != nil {
		q = q.Add(zp.To(tensor.Float32))
	}
	return castSmall(q, t, n.attrInt("saturate", 1) != 0, "up")
}

func opDequantizeLinear(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	scale, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	zp := arg(in, 2)
	if zp != nil && zp.DType() != x.DType() {
		return nil, fmt.Errorf("onnx: %v: zero point of type %s for input of type %s", n, zp.DType(), x.DType())
	}
	if scale, err = n.quantParam(scale, x.Shape()); err != nil {
		return nil, err
	}
	y := x.To(tensor.Float32)
	if zp != nil {
		if zp, err = n.quantParam(zp, x.Shape()); err != nil {
			return nil, err
		}
		y = y.Sub(zp.To(tensor.Float32))
	}
	return one(y.Mul(scale.To(tensor.Float32)).To(scale.DType()))
}

func opDynamicQuantizeLinear(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if x.DType() != tensor.Float32 {
		return nil, fmt.Errorf("onnx: %v: input has type %s, want float32", n, x.DType())
	}
	// The range always includes 0, so that 0 is exactly representable.
	var lo, hi float32
	for _, v := range x.Float32s() {
		lo, hi = min(lo, v), max(hi, v)
	}
	span := hi - lo
	if span == 0 {
		span = 1
	}
	scale := span / 255
	zp := float32(math.RoundToEven(float64(min(max(-lo/scale, 0), 255))))
	s := tensor.FromSlice([]float32{scale}).Reshape()
	z := tensor.FromSlice([]uint8{uint8(zp)}).Reshape()
	y, err := quantize(n, x.Div(s), z, tensor.Uint8)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, s, z}, nil
}

// centered returns x - zp in Int32, the zero point broadcast along axis of
// x (per-row or per-column parameters) or as a scalar.
func centered(n *node, x, zp *tensor.Tensor, axis int) (*tensor.Tensor, error) {
	if x.DType() != tensor.Uint8 && x.DType() != tensor.Int8 {
		return nil, fmt.Errorf("onnx: %v: input of type %s, want uint8 or int8", n, x.DType())
	}
	xi := x.To(tensor.Int32)
	if zp == nil {
		return xi, nil
	}
	if zp.DType() != x.DType() {
		return nil, fmt.Errorf("onnx: %v: zero point of type %s for input of type %s", n, zp.DType(), x.DType())
	}
	z, err := alongAxis(n, zp, x.Shape(), axis)
	if err != nil {
		return nil, err
	}
	return xi.Sub(z.To(tensor.Int32)), nil
}

// integerMatMul returns (a - azp) @ (b - bzp) in Int32; azp may hold one
// value per row of a, bzp one per column of b.
func integerMatMul(n *node, a, azp, b, bzp *tensor.Tensor) (*tensor.Tensor, error) {
	ac, err := centered(n, a, azp, -2)
	if err != nil {
		return nil, err
	}
	bc, err := centered(n, b, bzp, -1)
	if err != nil {
		return nil, err
	}
	return ac.MatMul(bc), nil
}

func opMatMulInteger(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	y, err := integerMatMul(n, a, arg(in, 2), b, arg(in, 3))
	if err != nil {
		return nil, err
	}
	return one(y)
}

// integerConv returns conv(x - xzp, w - wzp) (+ bias) in Int32, wzp per
// output channel or scalar. It runs the float64 convolution: im2col and
// GEMM sum 8-bit products exactly below 2^53, and the rounding before the
// conversion keeps the result exact should the kernel pick an algorithm
// (such as Winograd) that is only accurate to a few ulps.
func integerConv(n *node, x, xzp, w, wzp, bias *tensor.Tensor) (*tensor.Tensor, error) {
	xc, err := centered(n, x, xzp, 0)
	if err != nil {
		return nil, err
	}
	if xzp != nil && xzp.Numel() != 1 {
		return nil, fmt.Errorf("onnx: %v: input zero point of shape %v, want one element", n, xzp.Shape())
	}
	wc, err := centered(n, w, wzp, 0)
	if err != nil {
		return nil, err
	}
	var b *tensor.Tensor
	if bias != nil {
		b = bias.To(tensor.Float64)
	}
	ys, err := conv(n, []*tensor.Tensor{xc.To(tensor.Float64), wc.To(tensor.Float64), b}, convEpilogue{}, nil)
	if err != nil {
		return nil, err
	}
	return ys[0].Round().To(tensor.Int32), nil
}

func opConvInteger(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	w, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	y, err := integerConv(n, x, arg(in, 2), w, arg(in, 3), nil)
	if err != nil {
		return nil, err
	}
	return one(y)
}

// requantize returns saturate(round(acc * as*bs/ys) + yzp): acc is the
// Int32 accumulator, the scales broadcast against it.
func requantize(n *node, acc, as, bs, ys, yzp *tensor.Tensor) (*tensor.Tensor, error) {
	f := tensor.Float32
	mult := as.To(f).Mul(bs.To(f)).Div(ys.To(f))
	return quantize(n, acc.To(f).Mul(mult), yzp, yzp.DType())
}

func opQLinearMatMul(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 8)
	if err != nil {
		return nil, err
	}
	a, as, azp, b, bs, bzp, ys, yzp := args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]
	acc, err := integerMatMul(n, a, azp, b, bzp)
	if err != nil {
		return nil, err
	}
	// Per-row a scales and per-column b scales, like the zero points.
	if as, err = alongAxis(n, as, acc.Shape(), -2); err != nil {
		return nil, err
	}
	if bs, err = alongAxis(n, bs, acc.Shape(), -1); err != nil {
		return nil, err
	}
	y, err := requantize(n, acc, as, bs, ys.Reshape(), yzp.Reshape())
	if err != nil {
		return nil, err
	}
	return one(y)
}

func opQLinearConv(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 8)
	if err != nil {
		return nil, err
	}
	x, xs, xzp, w, ws, wzp, ys, yzp := args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]
	acc, err := integerConv(n, x, xzp, w, wzp, arg(in, 8))
	if err != nil {
		return nil, err
	}
	// Per-output-channel weight scales apply along the output's axis 1.
	if ws, err = alongAxis(n, ws, acc.Shape(), 1); err != nil {
		return nil, err
	}
	y, err := requantize(n, acc, xs.Reshape(), ws, ys.Reshape(), yzp.Reshape())
	if err != nil {
		return nil, err
	}
	return one(y)
}
