package autograd

import (
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Reductions. axes nil means every axis; keepDim keeps reduced axes as
// size 1. Gradients broadcast the output gradient back over reduced axes.

// normAxes returns the reduced axes of a d-dimensional value in ascending
// order (every axis when axes is empty).
func normAxes(axes []int, d int) []int {
	if len(axes) == 0 {
		out := make([]int, d)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += d
		}
		out[i] = a
	}
	slices.Sort(out)
	return out
}

// unreduce reshapes a gradient of a reduction without keepDim back to the
// keepDim shape, so it broadcasts against the input.
func unreduce(g *Var, inShape []int, axes []int, keepDim bool) *Var {
	if keepDim {
		return g
	}
	shape := slices.Clone(inShape)
	for _, a := range normAxes(axes, len(inShape)) {
		shape[a] = 1
	}
	return g.Reshape(shape...)
}

// Sum sums over axes.
func (v *Var) Sum(axes []int, keepDim bool) *Var {
	return begin("Sum", v).recordAttrs(map[string]any{"axes": axes, "keepDim": keepDim}, v.value.Sum(axes, keepDim), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		s := in[0].Shape()
		return []*Var{unreduce(g, s, axes, keepDim).Expand(s...)}
	})
}

// Mean averages over axes.
func (v *Var) Mean(axes []int, keepDim bool) *Var {
	sum := v.Sum(axes, keepDim) // validates axes
	n := 1
	s := v.Shape()
	for _, a := range normAxes(axes, len(s)) {
		n *= s[a]
	}
	return sum.DivScalar(float64(n))
}

// Prod multiplies over axes. The gradient is exact when inputs contain
// zeros: it is the product of the other elements.
func (v *Var) Prod(axes []int, keepDim bool) *Var {
	s := begin("Prod", v)
	out := v.value.Prod(axes, keepDim)
	return s.recordAttrs(map[string]any{"axes": axes, "keepDim": keepDim}, out, []*Var{v}, saved(v), func(g *Var, in []*Var, o *Var) []*Var {
		x := in[0]
		s := x.Shape()
		gk := unreduce(g, s, axes, keepDim)
		zero := x.value.Eq(tensor.ZerosLike(x.value))
		if zero.Sum(nil, false).Item() == 0 {
			ok := unreduce(o, s, axes, keepDim)
			return []*Var{gk.Mul(ok).Div(x)}
		}
		// With zeros, compute each element's product of the others directly
		// by replacing it with one; O(n) reductions but only on this path.
		return []*Var{prodOthers(x, axes).Mul(gk)}
	})
}

// prodOthers returns, for each element, the product over its reduction lane
// of all other elements, without dividing (so zeros are fine): the reduced
// axes are moved last and flattened into lanes, and each element gets the
// product of the exclusive prefix and the exclusive suffix of its lane. It
// is written in Var operations, so it can be differentiated again.
func prodOthers(x *Var, axes []int) *Var {
	shape := x.Shape()
	red := normAxes(axes, len(shape))
	isRed := make([]bool, len(shape))
	for _, a := range red {
		isRed[a] = true
	}
	var perm, lane []int
	n := 1
	for i, d := range shape {
		if !isRed[i] {
			perm = append(perm, i)
			lane = append(lane, d)
		}
	}
	for _, a := range red {
		perm = append(perm, a)
		n *= shape[a]
	}
	if n <= 1 {
		return New(tensor.OnesLike(x.value))
	}
	inv := make([]int, len(perm))
	for i, a := range perm {
		inv[a] = i
	}
	xp := x.Permute(perm...)
	permShape := xp.Shape()
	last := len(lane)
	l := xp.Reshape(append(slices.Clone(lane), n)...)
	onesShape := append(slices.Clone(lane), 1)
	ones := New(tensor.OnesOn(x.value.Device(), onesShape, x.DType()))
	// prefix[i] = x[0]·…·x[i-1], suffix[i] = x[i+1]·…·x[n-1].
	prefix := Concat([]*Var{ones, l.Narrow(last, 0, n-1).CumProd(last)}, last)
	suffix := Concat([]*Var{l.Flip(last).Narrow(last, 0, n-1).CumProd(last), ones}, last)
	suffix = Concat([]*Var{suffix.Narrow(last, 0, n-1).Flip(last), ones}, last)
	return prefix.Mul(suffix).Reshape(permShape...).Permute(inv...)
}

// Max returns the maximum over axes; the gradient is split evenly among
// tied maxima.
func (v *Var) Max(axes []int, keepDim bool) *Var { return v.extreme("Max", true, axes, keepDim) }

// Min returns the minimum over axes; the gradient is split evenly among
// tied minima.
func (v *Var) Min(axes []int, keepDim bool) *Var { return v.extreme("Min", false, axes, keepDim) }

func (v *Var) extreme(name string, isMax bool, axes []int, keepDim bool) *Var {
	s := begin(name, v)
	var out *tensor.Tensor
	if isMax {
		out = v.value.Max(axes, keepDim)
	} else {
		out = v.value.Min(axes, keepDim)
	}
	return s.recordAttrs(map[string]any{"axes": axes, "keepDim": keepDim}, out, []*Var{v}, saved(v), func(g *Var, in []*Var, o *Var) []*Var {
		x := in[0]
		s := x.Shape()
		w := New(evenShare(x.value, unreduce(o, s, axes, keepDim).value, axes))
		return []*Var{unreduce(g, s, axes, keepDim).Mul(w)}
	})
}

// evenShare returns weights that split a reduction's gradient evenly among
// the elements of x equal to the (keepDim) extreme ext of their lane; a NaN
// extreme goes to the lane's NaNs, as in PyTorch.
func evenShare(x, ext *tensor.Tensor, axes []int) *tensor.Tensor {
	hit := x.Eq(ext).LogicalOr(x.Ne(x).LogicalAnd(ext.Ne(ext))).To(x.DType())
	return hit.Div(hit.Sum(axes, true))
}

// Var returns the variance over axes with the given correction (1 =
// unbiased).
func (v *Var) Var(axes []int, correction int, keepDim bool) *Var {
	s := v.Shape()
	n := 1
	for _, a := range normAxes(axes, len(s)) {
		n *= s[a]
	}
	d := v.Sub(v.Mean(axes, true))
	return d.Mul(d).Sum(axes, keepDim).DivScalar(float64(max(n-correction, 0)))
}

// Std returns the standard deviation over axes. Where the deviation is zero
// (a constant lane) its gradient is zero, as in PyTorch, rather than the
// infinite slope of the square root times a zero (NaN).
func (v *Var) Std(axes []int, correction int, keepDim bool) *Var {
	return v.Var(axes, correction, keepDim).stdRoot()
}

// stdRoot is Sqrt (recorded as the op "Sqrt": its value is the square root)
// whose gradient is zero where the root is zero, PyTorch's std_backward. The
// rule is written in Var operations, so higher-order gradients still work.
func (v *Var) stdRoot() *Var {
	s := begin("Sqrt", v)
	out := v.value.Sqrt()
	return s.record(out, []*Var{v}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, root *Var) []*Var {
		zero := root.value.Eq(tensor.ZerosLike(root.value))
		return []*Var{g.Div(root.Where0(zero).MulScalar(2)).MaskedZero(zero)}
	})
}

// LogSumExp returns log(sum(exp(v))) over axes, computed stably; its
// gradient is the softmax over the same axes.
func (v *Var) LogSumExp(axes []int, keepDim bool) *Var {
	s := begin("LogSumExp", v)
	out := v.value.LogSumExp(axes, keepDim)
	return s.recordAttrs(map[string]any{"axes": axes, "keepDim": keepDim}, out, []*Var{v}, saved(v), func(g *Var, in []*Var, o *Var) []*Var {
		s := in[0].Shape()
		sm := in[0].Sub(unreduce(o, s, axes, keepDim)).Exp()
		return []*Var{unreduce(g, s, axes, keepDim).Mul(sm)}
	})
}

// Norm returns the p-norm over axes (p = 2 gives the Euclidean norm; the
// gradient at a zero vector is zero).
func (v *Var) Norm(p float64, axes []int, keepDim bool) *Var {
	s := begin("Norm", v)
	out := v.value.Norm(p, axes, keepDim)
	return s.record(out, []*Var{v}, saved(v), func(g *Var, in []*Var, o *Var) []*Var {
		x := in[0]
		s := x.Shape()
		gk := unreduce(g, s, axes, keepDim)
		ok := unreduce(o, s, axes, keepDim)
		switch {
		case p == 0:
			return []*Var{New(tensor.ZerosLike(x.value))}
		case p == 1:
			return []*Var{gk.Mul(x.Sign())}
		case math.IsInf(p, 1):
			// The max of |x|: split evenly among the lane's maxima.
			w := evenShare(x.value.Abs(), ok.value, axes)
			return []*Var{gk.Mul(x.Sign()).Mul(New(w))}
		}
		zero := ok.value.Eq(tensor.ZerosLike(ok.value))
		safe := ok.Where0(zero)
		switch p {
		case 2:
			return []*Var{gk.Mul(x).Div(safe).MaskedZero(zero.Expand(s...))}
		}
		// |x|**(p-1) * sign(x) / norm**(p-1)
		r := x.Abs().PowScalar(p - 1).Mul(x.Sign()).Div(safe.PowScalar(p - 1))
		return []*Var{gk.Mul(r).MaskedZero(zero.Expand(s...))}
	})
}

// CumSum returns the running sum along axis.
func (v *Var) CumSum(axis int) *Var {
	return begin("CumSum", v).recordAttrs(map[string]any{"axis": axis}, v.value.CumSum(axis), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		// The adjoint of a prefix sum is a suffix sum.
		return []*Var{g.Flip(axis).CumSum(axis).Flip(axis)}
	})
}

// CumProd returns the running product along axis (inputs without zeros
// have the exact gradient; zeros are handled by the generic rule).
func (v *Var) CumProd(axis int) *Var {
	s := begin("CumProd", v)
	out := v.value.CumProd(axis)
	return s.recordAttrs(map[string]any{"axis": axis}, out, []*Var{v}, saved(v), func(g *Var, in []*Var, o *Var) []*Var {
		x := in[0]
		zero := x.value.Eq(tensor.ZerosLike(x.value))
		if zero.Sum(nil, false).Item() == 0 {
			// d out_j / d x_i = out_j / x_i for j >= i.
			return []*Var{g.Mul(o).Flip(axis).CumSum(axis).Flip(axis).Div(x)}
		}
		return []*Var{cumprodGradZeros(g, x, axis)}
	})
}

// cumprodGradZeros is the O(n²) gradient of a cumulative product along an
// axis whose lanes may contain zeros: for each i it differentiates the
// products with x_i replaced by one.
func cumprodGradZeros(g, x *Var, axis int) *Var {
	shape := x.Shape()
	a := axis
	if a < 0 {
		a += len(shape)
	}
	n := shape[a]
	var parts []*Var
	for i := range n {
		// out_j for j >= i without the factor x_i: cumprod of x with x_i
		// set to one, times the mask j >= i.
		oneAt := make([]bool, n)
		oneAt[i] = true
		mshape := make([]int, len(shape))
		for k := range mshape {
			mshape[k] = 1
		}
		mshape[a] = n
		m := tensor.FromSlice(oneAt, mshape...).ToDeviceOf(x.value).Expand(shape...)
		c := x.Where0(m).value.CumProd(a)
		after := make([]bool, n)
		for j := i; j < n; j++ {
			after[j] = true
		}
		am := tensor.FromSlice(after, mshape...).To(c.DType()).ToDeviceOf(c)
		parts = append(parts, g.Mul(New(c.Mul(am))).Sum([]int{a}, true))
	}
	return Concat(parts, a)
}
