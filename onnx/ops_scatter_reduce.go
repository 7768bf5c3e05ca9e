package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// scatterElementsReduce is ScatterElements with reduction "mul", "max" or
// "min" (opsets 16 and 18): a copy of x in which each element of src is
// combined with the element of x that indices (already wrapped to be
// non-negative) point at along axis, in the order of src's elements. Floats
// combine in float64, integers in int64 (wrapping, as the dtype's own
// arithmetic would).
func scatterElementsReduce(n *node, x, idx, src *tensor.Tensor, axis int, reduction string) (*tensor.Tensor, error) {
	xs, is := x.Shape(), idx.Shape()
	if len(is) != len(xs) || fmt.Sprint(is) != fmt.Sprint(src.Shape()) {
		return nil, fmt.Errorf("onnx: %v: indices %v and updates %v must have the same shape and data %v's rank", n, is, src.Shape(), xs)
	}
	for a := range is {
		if a != axis && is[a] > xs[a] {
			return nil, fmt.Errorf("onnx: %v: indices %v exceed data %v on axis %d", n, is, xs, a)
		}
	}
	where := idx.Int64s()
	dst := make([]int, len(where))
	coord := make([]int, len(is))
	for k, at := range where {
		if at < 0 || at >= int64(xs[axis]) {
			return nil, fmt.Errorf("onnx: %v: index %d is outside axis %d of size %d", n, at, axis, xs[axis])
		}
		flat := 0
		for a := range xs {
			c := coord[a]
			if a == axis {
				c = int(at)
			}
			flat = flat*xs[a] + c
		}
		dst[k] = flat
		for a := len(coord) - 1; a >= 0; a-- { // next coordinate of idx
			coord[a]++
			if coord[a] < is[a] {
				break
			}
			coord[a] = 0
		}
	}
	if x.DType().IsFloat() {
		out, upd := x.Float64s(), src.Float64s()
		if err := combine(out, upd, dst, reduction); err != nil {
			return nil, fmt.Errorf("onnx: %v: %w", n, err)
		}
		return tensor.FromSlice(out, xs...).To(x.DType()), nil
	}
	if x.DType() == tensor.Uint64 {
		out, upd := x.Uint64s(), src.Uint64s()
		if err := combine(out, upd, dst, reduction); err != nil {
			return nil, fmt.Errorf("onnx: %v: %w", n, err)
		}
		return tensor.FromSlice(out, xs...), nil
	}
	out, upd := x.Int64s(), src.Int64s()
	if err := combine(out, upd, dst, reduction); err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	return tensor.FromSlice(out, xs...).To(x.DType()), nil
}

// combine folds upd[k] into out[dst[k]] with the reduction.
func combine[T int64 | uint64 | float64](out, upd []T, dst []int, reduction string) error {
	for k, d := range dst {
		switch reduction {
		case "mul":
			out[d] *= upd[k]
		case "max":
			out[d] = max(out[d], upd[k])
		case "min":
			out[d] = min(out[d], upd[k])
		default:
			return fmt.Errorf("unknown reduction %q", reduction)
		}
	}
	return nil
}
