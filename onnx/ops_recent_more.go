package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Operators of opsets 24 to 28 that are one small kernel each: Swish,
// SwiGLU, CumProd, BitCast and TensorScatter.

// recentMoreOps registers them.
func recentMoreOps() opTable {
	return opTable{
		"Swish":         {{since: 24, impl: opSwish}},
		"SwiGLU":        {{since: 28, impl: opSwiGLU}},
		"CumProd":       {{since: 26, impl: opCumProd}},
		"BitCast":       {{since: 26, impl: opBitCast}},
		"TensorScatter": {{since: 24, impl: opTensorScatter}},
	}
}

// swish is x·sigmoid(alpha·x), computed in float32 (float64 for double)
// and returned in x's dtype.
func swish(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	c := x
	if x.DType() != tensor.Float64 {
		c = x.To(tensor.Float32)
	}
	return c.Mul(c.MulScalar(alpha).Sigmoid()).To(x.DType())
}

// opSwish is Swish 24: x·sigmoid(alpha·x) (alpha defaults to 1).
func opSwish(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	return one(swish(x, n.attrFloat("alpha", 1)))
}

// opSwiGLU is SwiGLU 28: Swish(a, alpha)·b, the gated unit of LLaMA-style
// feed-forward blocks; a and b broadcast.
func opSwiGLU(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.needFloat(in, 1)
	if err != nil {
		return nil, err
	}
	if a.DType() != b.DType() {
		return nil, fmt.Errorf("onnx: %v: inputs have dtypes %s and %s; they must match", n, a.DType(), b.DType())
	}
	g := swish(a, n.attrFloat("alpha", 1))
	if a.DType() == tensor.Float64 {
		return one(g.Mul(b))
	}
	return one(g.To(tensor.Float32).Mul(b.To(tensor.Float32)).To(a.DType()))
}

// opCumProd is CumProd 26: running products along an axis (a scalar
// input), optionally exclusive (each product leaves its own element out,
// starting from 1) and reversed. Floats multiply in float64, integers in
// int64 with wrapping.
func opCumProd(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	at, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if at.Numel() != 1 || at.DType().IsFloat() {
		return nil, fmt.Errorf("onnx: %v: axis must be an integer scalar", n)
	}
	axis, err := n.normAxis(int(at.Int64s()[0]), x.Dim())
	if err != nil {
		return nil, err
	}
	if x.DType() == tensor.Bool {
		return nil, fmt.Errorf("onnx: %v: bool input; CumProd takes numbers", n)
	}
	shape := x.Shape()
	outer, length, inner := 1, shape[axis], 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	exclusive, reverse := n.attrInt("exclusive", 0) == 1, n.attrInt("reverse", 0) == 1
	if x.DType().IsFloat() {
		v := x.Float64s()
		cumProd(v, outer, length, inner, exclusive, reverse)
		return one(tensor.FromSlice(v, shape...).To(x.DType()))
	}
	v := x.Int64s()
	cumProd(v, outer, length, inner, exclusive, reverse)
	return one(tensor.FromSlice(v, shape...).To(x.DType()))
}

// cumProd replaces v, laid out [outer, length, inner], by its running
// products along the middle axis.
func cumProd[T int64 | float64](v []T, outer, length, inner int, exclusive, reverse bool) {
	for o := range outer {
		for i := range inner {
			acc := T(1)
			for s := range length {
				k := s
				if reverse {
					k = length - 1 - s
				}
				p := &v[(o*length+k)*inner+i]
				if exclusive {
					acc, *p = acc**p, acc
				} else {
					acc *= *p
					*p = acc
				}
			}
		}
	}
}

// opBitCast is BitCast 26: the input's bytes reinterpreted as the element
// type "to", which must have the same size.
func opBitCast(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if !n.has("to") {
		return nil, fmt.Errorf("onnx: %v: attribute \"to\" is required", n)
	}
	dt, err := n.dtypeAttr("to", 0)
	if err != nil {
		return nil, err
	}
	if dt.Size() != x.DType().Size() {
		return nil, fmt.Errorf("onnx: %v: cannot reinterpret %s (%d bytes) as %s (%d bytes)", n, x.DType(), x.DType().Size(), dt, dt.Size())
	}
	if dt == tensor.Bool {
		// A bool byte other than 0 or 1 is not a bool ONNX can hold.
		for _, b := range x.LittleEndianBytes() {
			if b > 1 {
				return nil, fmt.Errorf("onnx: %v: byte %d is not a bool (0 or 1)", n, b)
			}
		}
	}
	y, err := tensor.FromLittleEndian(dt, x.LittleEndianBytes(), x.Shape()...)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	return one(y)
}

// opTensorScatter is TensorScatter 24: a copy of past_cache with update
// written along axis (default -2, never the batch axis) from each batch's
// write index on (write_indices, default 0); mode "circular" wraps writes
// past the cache's end to its start, "linear" (the default) refuses them.
func opTensorScatter(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	past, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	upd, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if upd.DType() != past.DType() {
		return nil, fmt.Errorf("onnx: %v: update has dtype %s, past_cache %s", n, upd.DType(), past.DType())
	}
	ps, us := past.Shape(), upd.Shape()
	axis, err := n.normAxis(int(n.attrInt("axis", -2)), len(ps))
	if err != nil {
		return nil, err
	}
	if axis == 0 || len(us) != len(ps) {
		return nil, fmt.Errorf("onnx: %v: past_cache %v, update %v and axis %d: the axis must not be the batch axis and the ranks must match", n, ps, us, axis)
	}
	for i := range ps {
		if i != axis && ps[i] != us[i] || i == axis && us[i] > ps[i] {
			return nil, fmt.Errorf("onnx: %v: update %v does not fit past_cache %v along axis %d", n, us, ps, axis)
		}
	}
	mode := n.attrString("mode", "linear")
	if mode != "linear" && mode != "circular" {
		return nil, fmt.Errorf("onnx: %v: mode %q, want linear or circular", n, mode)
	}
	batch := ps[0]
	starts := make([]int64, batch)
	if w := arg(in, 2); w != nil {
		if w.DType().IsFloat() || w.Numel() != batch {
			return nil, fmt.Errorf("onnx: %v: write_indices %s %v must hold one integer per batch (%d)", n, w.DType(), w.Shape(), batch)
		}
		starts = w.Int64s()
	}
	size := past.DType().Size()
	inner := size
	for _, d := range ps[axis+1:] {
		inner *= d
	}
	perBatch := 1
	for _, d := range ps[1:axis] {
		perBatch *= d
	}
	maxLen, seqLen := ps[axis], us[axis]
	dst := past.LittleEndianBytes()
	src := upd.LittleEndianBytes()
	for b := range batch {
		for s := range seqLen {
			pos := starts[b] + int64(s)
			if mode == "circular" && maxLen > 0 {
				pos = (pos%int64(maxLen) + int64(maxLen)) % int64(maxLen)
			}
			if pos < 0 || pos >= int64(maxLen) || pos > math.MaxInt32 {
				return nil, fmt.Errorf("onnx: %v: batch %d writes position %d outside the cache's %d", n, b, pos, maxLen)
			}
			for p := range perBatch {
				row := b*perBatch + p
				copy(dst[(row*maxLen+int(pos))*inner:][:inner], src[(row*seqLen+s)*inner:][:inner])
			}
		}
	}
	y, err := tensor.FromLittleEndian(past.DType(), dst, ps...)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	return one(y)
}
