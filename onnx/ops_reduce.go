package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Reductions, arg-reductions and scans.

func reduceOps() opTable {
	return opTable{
		"ReduceSum":       {{since: 1, impl: reduce(13, (*tensor.Tensor).Sum)}},
		"ReduceMean":      {{since: 1, impl: reduce(18, (*tensor.Tensor).Mean)}},
		"ReduceMax":       {{since: 1, impl: reduce(18, extreme(true))}},
		"ReduceMin":       {{since: 1, impl: reduce(18, extreme(false))}},
		"ReduceProd":      {{since: 1, impl: reduce(18, (*tensor.Tensor).Prod)}},
		"ReduceL1":        {{since: 1, impl: reduce(18, reduceL1)}},
		"ReduceL2":        {{since: 1, impl: reduce(18, reduceL2)}},
		"ReduceSumSquare": {{since: 1, impl: reduce(18, reduceSumSquare)}},
		"ReduceLogSum":    {{since: 1, impl: reduce(18, reduceLogSum)}},
		"ReduceLogSumExp": {{since: 1, impl: reduce(18, (*tensor.Tensor).LogSumExp)}},
		"ArgMax":          {{since: 1, impl: argReduce(true)}},
		"ArgMin":          {{since: 1, impl: argReduce(false)}},
		"CumSum":          {{since: 11, impl: opCumSum}},
	}
}

func reduceL1(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
	return t.Abs().Sum(axes, keep)
}

func reduceL2(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
	return t.Mul(t).Sum(axes, keep).Sqrt()
}

func reduceSumSquare(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
	return t.Mul(t).Sum(axes, keep)
}

func reduceLogSum(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
	return t.Sum(axes, keep).Log()
}

// reduce adapts a reduction. Axes are an attribute before opset inputFrom
// and an optional input from it on; no axes means all axes unless
// noop_with_empty_axes is set, which makes the op the identity.
func reduce(inputFrom int64, f func(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		axes, _ := n.axesArg(in, 1, inputFrom)
		keep := n.attrInt("keepdims", 1) == 1
		if len(axes) == 0 {
			if n.attrInt("noop_with_empty_axes", 0) == 1 {
				return one(x)
			}
			axes = nil
		}
		for i, a := range axes {
			if axes[i], err = n.normAxis(a, x.Dim()); err != nil {
				return nil, err
			}
		}
		if axes == nil {
			axes = make([]int, x.Dim())
			for i := range axes {
				axes[i] = i
			}
		}
		if dt := x.DType(); dt == tensor.Float16 || dt == tensor.BFloat16 {
			// Storage dtypes reduce in float32 and round back once.
			return one(f(x.To(tensor.Float32), axes, keep).To(dt))
		}
		return one(f(x, axes, keep).To(x.DType()))
	}
}

// extreme is ReduceMax (max) or ReduceMin. Reducing an empty axis gives
// the reduction's identity, as ONNX specifies from opset 18: the lowest
// value of the dtype for ReduceMax (-Inf for floats, false for bool), the
// highest for ReduceMin. Bool reduces as 0 and 1.
func extreme(max bool) func(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
	return func(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor {
		shape := t.Shape()
		empty := false
		for _, a := range axes {
			empty = empty || shape[a] == 0
		}
		if empty {
			var out []int
			for i, d := range shape {
				switch {
				case !slices.Contains(axes, i):
					out = append(out, d)
				case keep:
					out = append(out, 1)
				}
			}
			return emptyReduction(t.DType(), out, max)
		}
		if t.DType() == tensor.Bool {
			return extreme(max)(t.To(tensor.Uint8), axes, keep).To(tensor.Bool)
		}
		if max {
			return t.Max(axes, keep)
		}
		return t.Min(axes, keep)
	}
}

// emptyReduction returns a tensor of shape filled with the identity of
// ReduceMax (max) or ReduceMin over dtype dt.
func emptyReduction(dt tensor.DType, shape []int, max bool) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	switch {
	case dt.IsFloat():
		v := math.Inf(1)
		if max {
			v = math.Inf(-1)
		}
		return tensor.Full(shape, v, dt)
	case dt == tensor.Bool:
		return tensor.Full(shape, boolToFloat(!max), dt)
	case dt == tensor.Uint64:
		v := make([]uint64, n)
		if !max {
			for i := range v {
				v[i] = math.MaxUint64
			}
		}
		return tensor.FromSlice(v, shape...)
	}
	lo, hi := dtypeIntRange(dt)
	v := make([]int64, n)
	for i := range v {
		v[i] = hi
		if max {
			v[i] = lo
		}
	}
	return tensor.FromSlice(v, shape...).To(dt)
}

// boolToFloat returns 1 for true and 0 for false.
func boolToFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// dtypeIntRange returns the least and greatest values of integer dtype dt
// (Uint64's greatest is not an int64 and is handled by the caller).
func dtypeIntRange(dt tensor.DType) (lo, hi int64) {
	switch dt {
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8
	case tensor.Uint8:
		return 0, math.MaxUint8
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16
	case tensor.Uint16:
		return 0, math.MaxUint16
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32
	case tensor.Uint32:
		return 0, math.MaxUint32
	}
	return math.MinInt64, math.MaxInt64
}

// argReduce is ArgMax (max) or ArgMin; select_last_index picks the last of
// equal extremes.
func argReduce(max bool) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
		if err != nil {
			return nil, err
		}
		keep := n.attrInt("keepdims", 1) == 1
		last := n.attrInt("select_last_index", 0) == 1
		if last {
			x = x.Flip(axis)
		}
		var idx *tensor.Tensor
		if max {
			idx = x.ArgMax(axis, keep)
		} else {
			idx = x.ArgMin(axis, keep)
		}
		if last {
			idx = idx.Neg().AddScalar(float64(x.Shape()[axis] - 1))
		}
		return one(idx.To(tensor.Int64))
	}
}

func opCumSum(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	at, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if at.Numel() != 1 {
		return nil, fmt.Errorf("onnx: %v: axis must be a scalar", n)
	}
	axis, err := n.normAxis(int(at.Reshape(-1).At(0)), x.Dim())
	if err != nil {
		return nil, err
	}
	reverse := n.attrInt("reverse", 0) == 1
	if reverse {
		x = x.Flip(axis)
	}
	y := x.CumSum(axis)
	if n.attrInt("exclusive", 0) == 1 {
		y = y.Sub(x)
	}
	if reverse {
		y = y.Flip(axis)
	}
	return one(y.To(x.DType()))
}
