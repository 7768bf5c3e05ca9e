package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Reductions, arg-reductions and scans.

func reduceOps() opTable {
	return opTable{
		"ReduceSum":       {{since: 1, impl: reduce(13, (*tensor.Tensor).Sum)}},
		"ReduceMean":      {{since: 1, impl: reduce(18, (*tensor.Tensor).Mean)}},
		"ReduceMax":       {{since: 1, impl: reduce(18, (*tensor.Tensor).Max)}},
		"ReduceMin":       {{since: 1, impl: reduce(18, (*tensor.Tensor).Min)}},
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
		return one(f(x, axes, keep).To(x.DType()))
	}
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
