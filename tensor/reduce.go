package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor/internal/parallel"
	"github.com/emberml/ember/tensor/internal/vec"
)

// reduceAxes normalizes axes (nil or empty means every axis) into a sorted
// set of distinct axes. A 0-d tensor accepts axis 0 or -1, as in PyTorch.
func (t *Tensor) reduceAxes(op string, axes []int) []bool {
	red := make([]bool, t.Dim())
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
		return red
	}
	if t.Dim() == 0 {
		for _, a := range axes {
			normAxis(op, a, 1)
		}
		return red
	}
	for _, a := range axes {
		a = normAxis(op, a, t.Dim())
		if red[a] {
			panic(fmt.Sprintf("tensor.%s: axis %d repeated in %v", op, a, axes))
		}
		red[a] = true
	}
	return red
}

// reducedShape returns the output shape for the reduced axes.
func (t *Tensor) reducedShape(red []bool, keepDim bool) []int {
	var shape []int
	for i, d := range t.shape {
		switch {
		case !red[i]:
			shape = append(shape, d)
		case keepDim:
			shape = append(shape, 1)
		}
	}
	return shape
}

// reduce runs a backend reduction over the given axes.
func (t *Tensor) reduce(name string, op ReduceOp, axes []int, keepDim bool) *Tensor {
	if t.dtype == Float16 || t.dtype == BFloat16 {
		panic(fmt.Sprintf("tensor.%s: %s is a storage dtype; call To(Float32) first", name, t.dtype))
	}
	src := t
	if src.dtype == Bool {
		src = src.To(Int64) // any / all run as max / min over 0 and 1
	}
	if op == ReduceSum || op == ReduceProd {
		src = src.To(accumDType(src.dtype)) // see accumDType
	}
	red := t.reduceAxes(name, axes)
	var perm []int
	outer, n := 1, 1
	for i, r := range red {
		if !r {
			perm = append(perm, i)
			outer *= t.shape[i]
		}
	}
	for i, r := range red {
		if r {
			perm = append(perm, i)
			n *= t.shape[i]
		}
	}
	if n == 0 && (op == ReduceMax || op == ReduceMin) {
		panic(fmt.Sprintf("tensor.%s: reducing an empty axis of shape %v has no identity", name, t.shape))
	}
	if op == ReduceSum && src.dtype == Float32 {
		if out, ok := leadingSumF32(src, red, keepDim); ok {
			return out
		}
	}
	// The kernel reads its buffer from element 0.
	c, release := scratchContiguous(src.Permute(perm...))
	b := t.st.backend
	out := empty(b, src.dtype, t.reducedShape(red, keepDim))
	b.Reduce(op, out.st.buf, c.st.buf, outer, n)
	release()
	if t.dtype == Bool && (op == ReduceMax || op == ReduceMin) {
		out = out.To(Bool) // any / all
	}
	return out
}

// Sum sums over axes (every axis when axes is nil); keepDim keeps them as
// size 1. Bool and integer tensors sum as Int64, except Uint32 and Uint64,
// which sum as Uint64 (see accumDType).
func (t *Tensor) Sum(axes []int, keepDim bool) *Tensor {
	return t.reduce("Sum", ReduceSum, axes, keepDim)
}

// Prod multiplies over axes, in the dtype Sum computes in.
func (t *Tensor) Prod(axes []int, keepDim bool) *Tensor {
	return t.reduce("Prod", ReduceProd, axes, keepDim)
}

// Max returns the maximum over axes (NaN propagates).
func (t *Tensor) Max(axes []int, keepDim bool) *Tensor {
	return t.reduce("Max", ReduceMax, axes, keepDim)
}

// Min returns the minimum over axes (NaN propagates).
func (t *Tensor) Min(axes []int, keepDim bool) *Tensor {
	return t.reduce("Min", ReduceMin, axes, keepDim)
}

// reducedCount is the number of elements each output of a reduction over
// axes combines.
func (t *Tensor) reducedCount(axes []int) int {
	n := 1
	for i, r := range t.reduceAxes("reduce", axes) {
		if r {
			n *= t.shape[i]
		}
	}
	return n
}

// floatOrF32 returns t if it is float, else t as Float32.
func (t *Tensor) floatOrF32() *Tensor {
	if t.dtype.IsFloat() {
		return t
	}
	return t.To(Float32)
}

// Mean averages over axes; integer tensors average as Float32.
func (t *Tensor) Mean(axes []int, keepDim bool) *Tensor {
	f := t.floatOrF32()
	return f.Sum(axes, keepDim).DivScalar(float64(t.reducedCount(axes)))
}

// Var returns the variance over axes with the given correction (1 for the
// unbiased estimator, PyTorch's default; 0 for the population variance).
func (t *Tensor) Var(axes []int, correction int, keepDim bool) *Tensor {
	f := t.floatOrF32()
	mean := f.Mean(axes, true)
	d := f.Sub(mean)
	n := t.reducedCount(axes) - correction
	return d.Mul(d).Sum(axes, keepDim).DivScalar(float64(max(n, 0)))
}

// Std returns the standard deviation over axes (see Var for correction).
func (t *Tensor) Std(axes []int, correction int, keepDim bool) *Tensor {
	return t.Var(axes, correction, keepDim).Sqrt()
}

// LogSumExp returns log(sum(exp(t))) over axes, computed stably.
func (t *Tensor) LogSumExp(axes []int, keepDim bool) *Tensor {
	f := t.floatOrF32()
	if t.reducedCount(axes) == 0 {
		// log(0): an empty sum.
		return f.Sum(axes, keepDim).AddScalar(math.Inf(-1))
	}
	m := f.Max(axes, true)
	// An all -Inf (or +Inf) lane would give NaN from Inf-Inf; shift by 0.
	m = Where(m.Abs().Eq(ScalarOf(math.Inf(1), m.dtype)), ZerosLike(m), m)
	s := f.Sub(m).Exp().Sum(axes, true).Log().Add(m)
	if !keepDim {
		s = s.Squeeze(t.sortedAxes(axes)...)
	}
	return s
}

// Norm returns the p-norm over axes: (sum |t|**p)**(1/p); p may be +Inf
// (max |t|), 0 (count of non-zeros), 1 or 2 or any positive number.
func (t *Tensor) Norm(p float64, axes []int, keepDim bool) *Tensor {
	a := t.floatOrF32().Abs()
	switch {
	case math.IsInf(p, 1):
		return a.Max(axes, keepDim)
	case p == 0:
		return a.Ne(ZerosLike(a)).To(a.dtype).Sum(axes, keepDim)
	case p == 1:
		return a.Sum(axes, keepDim)
	case p == 2:
		return a.Mul(a).Sum(axes, keepDim).Sqrt()
	case p > 0:
		return a.PowScalar(p).Sum(axes, keepDim).PowScalar(1 / p)
	}
	panic(fmt.Sprintf("tensor.Norm: p must be positive, 0 or +Inf, got %v", p))
}

// sortedAxes returns axes normalized and sorted descending (every axis when
// empty), convenient for Squeeze after a keepDim reduction.
func (t *Tensor) sortedAxes(axes []int) []int {
	var out []int
	for i, r := range t.reduceAxes("reduce", axes) {
		if r {
			out = append(out, i)
		}
	}
	slices.Reverse(out)
	return out
}

// aroundAxis is a helper for axis-wise kernels: it returns t as a
// contiguous [outer, n, inner] block around axis.
func (t *Tensor) aroundAxis(axis int) (c *Tensor, outer, n, inner int) {
	a := axis
	c = t.Contiguous()
	outer, inner = 1, 1
	for i := range a {
		outer *= t.shape[i]
	}
	for i := a + 1; i < t.Dim(); i++ {
		inner *= t.shape[i]
	}
	return c, outer, t.shape[a], inner
}

// argReduce finds the index of the extreme value along axis.
func (t *Tensor) argReduce(name string, max bool, axis int, keepDim bool) *Tensor {
	if t.Dim() == 0 {
		normAxis(name, axis, 1)
		return t.Reshape(1).argReduce(name, max, 0, false).Reshape()
	}
	src := t
	if src.dtype == Bool {
		src = src.To(Int64)
	}
	a := normAxis(name, axis, t.Dim())
	if t.shape[a] == 0 {
		panic(fmt.Sprintf("tensor.%s: axis %d of shape %v is empty", name, axis, t.shape))
	}
	c, outer, n, inner := src.aroundAxis(a)
	if c.offset != 0 { // the kernel reads its buffer from element 0
		c = c.Clone()
	}
	shape := slices.Clone(t.shape)
	if keepDim {
		shape[a] = 1
	} else {
		shape = slices.Delete(shape, a, a+1)
	}
	b := t.st.backend
	out := empty(b, Int64, shape)
	b.ArgReduce(max, out.st.buf, c.st.buf, outer, n, inner)
	return out
}

// ArgMax returns the Int64 index of the first maximum along axis.
func (t *Tensor) ArgMax(axis int, keepDim bool) *Tensor {
	return t.argReduce("ArgMax", true, axis, keepDim)
}

// ArgMin returns the Int64 index of the first minimum along axis.
func (t *Tensor) ArgMin(axis int, keepDim bool) *Tensor {
	return t.argReduce("ArgMin", false, axis, keepDim)
}

// ArgMaxAll returns the index of the first maximum of the flattened tensor.
func (t *Tensor) ArgMaxAll() *Tensor { return t.Reshape(-1).ArgMax(0, false) }

// ArgMinAll returns the index of the first minimum of the flattened tensor.
func (t *Tensor) ArgMinAll() *Tensor { return t.Reshape(-1).ArgMin(0, false) }

// MaxAxis returns the maxima along axis and their Int64 indices.
func (t *Tensor) MaxAxis(axis int, keepDim bool) (values, indices *Tensor) {
	return t.Max([]int{axis}, keepDim), t.ArgMax(axis, keepDim)
}

// MinAxis returns the minima along axis and their Int64 indices.
func (t *Tensor) MinAxis(axis int, keepDim bool) (values, indices *Tensor) {
	return t.Min([]int{axis}, keepDim), t.ArgMin(axis, keepDim)
}

func (t *Tensor) scan(name string, prod bool, axis int) *Tensor {
	if t.Dim() == 0 {
		normAxis(name, axis, 1)
		return t.Reshape(1).scan(name, prod, 0).Reshape()
	}
	src := t
	src = src.To(accumDType(src.dtype))
	a := normAxis(name, axis, t.Dim())
	c, outer, n, inner := src.aroundAxis(a)
	if c.offset != 0 { // the kernel reads its buffer from element 0
		c = c.Clone()
	}
	b := t.st.backend
	out := empty(b, src.dtype, t.shape)
	b.Scan(prod, out.st.buf, c.st.buf, outer, n, inner)
	return out
}

// CumSum returns the running sum along axis, in the dtype Sum computes in
// (Int64 for bool and integers, Uint64 for Uint32 and Uint64).
func (t *Tensor) CumSum(axis int) *Tensor { return t.scan("CumSum", false, axis) }

// CumProd returns the running product along axis, in CumSum's dtype.
func (t *Tensor) CumProd(axis int) *Tensor { return t.scan("CumProd", true, axis) }

// leadingSumF32 sums a contiguous float32 CPU tensor over a leading run of
// its axes (a bias gradient: [rows, cols] summed to [cols]) by adding whole
// rows into float64 accumulators, instead of transposing it first. Like the
// row kernel it accumulates in float64 and rounds once.
func leadingSumF32(t *Tensor, red []bool, keepDim bool) (*Tensor, bool) {
	if _, cpu := t.st.backend.(cpuBackend); !cpu || !t.IsContiguous() {
		return nil, false
	}
	lead := 0
	for lead < len(red) && red[lead] {
		lead++
	}
	if lead == 0 || lead == len(red) {
		return nil, false
	}
	for _, r := range red[lead:] {
		if r {
			return nil, false
		}
	}
	rows, cols := numel(t.shape[:lead]), numel(t.shape[lead:])
	if cols < 2 || rows < 2 {
		return nil, false
	}
	src := t.st.buf.(*cpuBuffer).data.([]float32)[t.offset : t.offset+rows*cols]
	out := emptyOut(t.st.backend, Float32, t.reducedShape(red, keepDim))
	dst := out.st.buf.(*cpuBuffer).data.([]float32)
	// Columns are split across threads (in runs of 16, when there is enough
	// work in all) and summed in blocks that stay in the L1 cache.
	const block = 512
	parts := 1
	if rows*cols >= parallelMin {
		parts = min(NumThreads(), (cols+15)/16)
	}
	per := ((cols+parts-1)/parts + 15) / 16 * 16
	parallel.Run((cols+per-1)/per, func(i int) {
		sumColumns(dst, src, rows, cols, i*per, min((i+1)*per, cols), block)
	})
	return out, true
}

// sumColumns writes the float64 sums of columns [lo, hi) of the rows×cols
// matrix src into dst, block columns at a time.
func sumColumns(dst, src []float32, rows, cols, lo, hi, block int) {
	acc := make([]float64, min(block, hi-lo))
	for c0 := lo; c0 < hi; c0 += block {
		c1 := min(c0+block, hi)
		a := acc[:c1-c0]
		clear(a)
		for r := range rows {
			vec.AddWiden(a, src[r*cols+c0:r*cols+c1])
		}
		for j, v := range a {
			dst[c0+j] = float32(v)
		}
	}
}
