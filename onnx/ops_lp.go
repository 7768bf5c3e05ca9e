package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Lp pooling and normalization: the p-norm of each pooling window
// (LpPool), of each whole spatial plane (GlobalLpPool), or along one axis
// (LpNormalization).

func lpOps() opTable {
	return opTable{
		// LpPool-1 took p as a float; every later version as an int.
		"LpPool":          {{since: 2, impl: opLpPool}},
		"GlobalLpPool":    {{since: 2, impl: opGlobalLpPool}},
		"LpNormalization": {{since: 1, impl: opLpNormalization}},
	}
}

// lpExponent reads the p attribute (default 2), which must be positive.
func (n *node) lpExponent() (float64, error) {
	p := n.attrInt("p", 2)
	if p <= 0 {
		return 0, fmt.Errorf("onnx: %v: p = %d must be positive", n, p)
	}
	return float64(p), nil
}

// opLpPool computes (Σ |x|^p)^(1/p) over each window. Padding adds zeros,
// which add nothing to the sum, so only the window's in-bounds elements
// are visited; ceil_mode (opset 18) adds a last, partial window on an axis
// when it still starts inside the input or its begin padding.
func opLpPool(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	pow, err := n.lpExponent()
	if err != nil {
		return nil, err
	}
	k := x.Dim() - 2
	if k < 1 {
		return nil, fmt.Errorf("onnx: %v: input %v has no spatial axes", n, x.Shape())
	}
	kernel := toInts(n.attrInts("kernel_shape"))
	if len(kernel) != k {
		return nil, fmt.Errorf("onnx: %v: kernel_shape %v must have %d entries", n, kernel, k)
	}
	xs := x.Shape()
	sp, err := n.spatialParams(xs[2:], kernel)
	if err != nil {
		return nil, err
	}
	if err := n.checkSizes(xs, xs[1], 0, sp, x.DType()); err != nil {
		return nil, err
	}
	ceil := n.attrInt("ceil_mode", 0) == 1
	outShape := []int{xs[0], xs[1]}
	for i := range k {
		span := xs[2+i] + sp.padBegin[i] + sp.padEnd[i] - sp.dilation[i]*(kernel[i]-1) - 1
		o := 0
		if span >= 0 {
			o = span/sp.stride[i] + 1
			if ceil && span%sp.stride[i] != 0 && o*sp.stride[i] < xs[2+i]+sp.padBegin[i] {
				o++
			}
		}
		outShape = append(outShape, o)
	}
	if err := n.checkShape(outShape, x.DType()); err != nil {
		return nil, err
	}
	src := x.Float64s()
	inPlane, outPlane := prod(xs[2:]), prod(outShape[2:])
	dst := make([]float64, xs[0]*xs[1]*outPlane)
	pos := make([]int, k) // output position
	tap := make([]int, k) // kernel offset
	taps := prod(kernel)
	var offsets []int
	for o := range outPlane {
		unravelInto(pos, o, outShape[2:])
		// Collect the in-bounds input offsets of this window once, then
		// sum them on every plane.
		offsets = offsets[:0]
	window:
		for t := range taps {
			unravelInto(tap, t, kernel)
			off := 0
			for i := range k {
				c := pos[i]*sp.stride[i] - sp.padBegin[i] + tap[i]*sp.dilation[i]
				if c < 0 || c >= xs[2+i] {
					continue window
				}
				off = off*xs[2+i] + c
			}
			offsets = append(offsets, off)
		}
		for plane := range xs[0] * xs[1] {
			base := src[plane*inPlane:]
			sum := 0.0
			for _, off := range offsets {
				sum += lpTerm(base[off], pow)
			}
			dst[plane*outPlane+o] = lpRoot(sum, pow)
		}
	}
	return one(tensor.FromSlice(dst, outShape...).To(x.DType()))
}

// lpTerm is |v|^p, with the common exponents exact and fast.
func lpTerm(v, p float64) float64 {
	switch p {
	case 1:
		return math.Abs(v)
	case 2:
		return v * v
	}
	return math.Pow(math.Abs(v), p)
}

// lpRoot is s^(1/p).
func lpRoot(s, p float64) float64 {
	switch p {
	case 1:
		return s
	case 2:
		return math.Sqrt(s)
	}
	return math.Pow(s, 1/p)
}

// opGlobalLpPool is the p-norm of each [N, C] plane over every spatial
// axis, keeping them as size-1 axes.
func opGlobalLpPool(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	pow, err := n.lpExponent()
	if err != nil {
		return nil, err
	}
	if x.Dim() < 3 {
		return nil, fmt.Errorf("onnx: %v: input %v has no spatial axes", n, x.Shape())
	}
	return one(lpNorm(x, pow, spatialAxes(x.Dim())))
}

// lpNorm is (Σ |x|^p)^(1/p) over axes, kept as size-1 axes, computed in
// float64 and returned in x's dtype.
func lpNorm(x *tensor.Tensor, p float64, axes []int) *tensor.Tensor {
	x64 := x.To(tensor.Float64)
	var s *tensor.Tensor
	switch p {
	case 1:
		s = x64.Abs().Sum(axes, true)
	case 2:
		s = x64.Mul(x64).Sum(axes, true).Sqrt()
	default:
		s = x64.Abs().PowScalar(p).Sum(axes, true).PowScalar(1 / p)
	}
	return s.To(x.DType())
}

// opLpNormalization divides x by its p-norm (p is 1 or 2) along axis. A
// lane whose norm is zero holds only zeros and stays zero (a plain
// division would make it NaN).
func opLpNormalization(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	p := n.attrInt("p", 2)
	if p != 1 && p != 2 {
		return nil, fmt.Errorf("onnx: %v: p = %d, want 1 or 2", n, p)
	}
	axis, err := n.normAxis(int(n.attrInt("axis", -1)), x.Dim())
	if err != nil {
		return nil, err
	}
	norm := lpNorm(x, float64(p), []int{axis})
	zero := norm.Eq(tensor.ZerosLike(norm))
	safe := tensor.Where(zero, tensor.OnesLike(norm), norm)
	return one(x.Div(safe))
}
