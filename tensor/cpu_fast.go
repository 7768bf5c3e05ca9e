package tensor

import (
	"math"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/emberml/ember/tensor/internal/parallel"
	"github.com/emberml/ember/tensor/internal/strided"
	"github.com/emberml/ember/tensor/internal/vec"
)

// The float32 fast paths of the CPU backend: contiguous (and broadcast
// scalar or broadcast row) operands go to the SIMD kernels of
// tensor/internal/vec, split across NumThreads goroutines when large.
// Each returns false when it does not apply, and the backend falls back to
// its generic strided kernels.

// unaryF32Fast computes op over the view l of src into dst.
func unaryF32Fast(op UnaryOp, dst, src []float32, l Layout) bool {
	n := len(dst)
	if n == 0 {
		return false
	}
	contiguous := strided.IsContiguous(l.Shape, l.Strides)
	last := len(l.Shape) - 1
	if !contiguous && (last < 0 || l.Shape[last] < minRowBlock || l.Strides[last] != 1) {
		return false
	}
	var f func(d, s []float32)
	switch op.Kind {
	case OpRelu:
		f = vec.Relu
	case OpExp:
		f = vec.Exp
	case OpSigmoid:
		f = vec.Sigmoid
	case OpTanh:
		f = vec.Tanh
	case OpLog:
		f = vec.Log
	case OpNeg:
		f = vec.Neg
	case OpAbs:
		f = vec.Abs
	case OpSqrt:
		f = vec.Sqrt
	case OpRsqrt:
		f = func(d, s []float32) {
			vec.Sqrt(d, s)
			vec.ConstDiv(d, d, 1)
		}
	case OpRecip:
		f = func(d, s []float32) { vec.ConstDiv(d, s, 1) }
	case OpClamp:
		lo, hi := float32(op.A), float32(op.B)
		f = func(d, s []float32) { vec.Clamp(d, s, lo, hi) }
	case OpSquare:
		f = func(d, s []float32) { vec.Mul(d, s, s) }
	case OpAffine:
		a, b := float32(op.A), float32(op.B)
		if a == 1 {
			f = func(d, s []float32) { vec.AddConst(d, s, b) }
		} else {
			f = func(d, s []float32) { vec.Affine(d, s, a, b) }
		}
	default:
		return false
	}
	if contiguous {
		src = src[l.Offset : l.Offset+n]
		parallelFor(n, 16, func(lo, hi int) { f(dst[lo:hi], src[lo:hi]) })
		return true
	}
	// Contiguous rows of a strided view (column slices): f row by row.
	i := 0
	strided.Walk(l.Shape, [][]int{l.Strides}, []int{l.Offset}, func(offs []int, m int, inc []int) {
		o := offs[0]
		if inc[0] == 1 {
			f(dst[i:i+m], src[o:o+m])
		} else {
			for j := range m {
				f(dst[i+j:i+j+1], src[o+j*inc[0]:o+j*inc[0]+1])
			}
		}
		i += m
	})
	return true
}

// repeatedBlock reports whether the view (shape, strides) is one contiguous
// block of the trailing axes repeated along the leading ones (stride 0), as
// a broadcast scalar (block 1), a broadcast row, or a contiguous tensor
// (block = numel) are; block is the block's length.
func repeatedBlock(shape, strides []int) (block int, ok bool) {
	block = 1
	i := len(shape) - 1
	for ; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != block {
			break
		}
		block *= shape[i]
	}
	for ; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != 0 {
			return 0, false
		}
	}
	return block, true
}

// blockOrNone returns repeatedBlock's block length, or -1 when the view is
// not a repeated block.
func blockOrNone(shape, strides []int) int {
	if b, ok := repeatedBlock(shape, strides); ok {
		return b
	}
	return -1
}

// minRowBlock is the shortest broadcast row the row-wise fast path takes;
// shorter rows are faster through the generic kernel.
const minRowBlock = 8

// binaryF32Fast computes a op b into dst for the arithmetic ops when both
// operands are contiguous or repeated blocks (see repeatedBlock).
func binaryF32Fast(op BinaryOp, dst []float32, shape []int, a []float32, la Layout, b []float32, lb Layout) bool {
	var vv func(d, x, y []float32)
	switch op {
	case OpAdd:
		vv = vec.Add
	case OpSub:
		vv = vec.Sub
	case OpMul:
		vv = vec.Mul
	case OpDiv:
		vv = vec.Div
	default:
		return false
	}
	n := len(dst)
	if n == 0 {
		return false
	}
	ba, bb := blockOrNone(shape, la.Strides), blockOrNone(shape, lb.Strides)
	switch {
	case ba == n && bb == n:
		a, b = a[la.Offset:la.Offset+n], b[lb.Offset:lb.Offset+n]
		parallelFor(n, 16, func(lo, hi int) { vv(dst[lo:hi], a[lo:hi], b[lo:hi]) })
	case ba == n && bb == 1:
		a, c := a[la.Offset:la.Offset+n], b[lb.Offset]
		var f func(d, x []float32, c float32)
		switch op {
		case OpAdd:
			f = vec.AddConst
		case OpSub:
			f = vec.SubConst
		case OpMul:
			f = vec.MulConst
		default:
			f = vec.DivConst
		}
		parallelFor(n, 16, func(lo, hi int) { f(dst[lo:hi], a[lo:hi], c) })
	case ba == 1 && bb == n:
		c, b := a[la.Offset], b[lb.Offset:lb.Offset+n]
		var f func(d, x []float32, c float32)
		switch op {
		case OpAdd:
			f = vec.AddConst
		case OpSub:
			f = vec.ConstSub
		case OpMul:
			f = vec.MulConst
		default:
			f = vec.ConstDiv
		}
		parallelFor(n, 16, func(lo, hi int) { f(dst[lo:hi], b[lo:hi], c) })
	case (ba == n && bb >= minRowBlock) || (bb == n && ba >= minRowBlock):
		row := min(ba, bb) // the repeated operand's block; n is a multiple of it
		a, b = a[la.Offset:la.Offset+ba], b[lb.Offset:lb.Offset+bb]
		parallelFor(n, row, func(lo, hi int) {
			for r := lo; r < hi; r += row {
				x, y := a[r%ba:r%ba+row], b[r%bb:r%bb+row]
				vv(dst[r:r+row], x, y)
			}
		})
	case ba == n && columnBroadcast(shape, lb.Strides):
		// One b value per row of a: x op c row by row.
		row := shape[len(shape)-1]
		a = a[la.Offset : la.Offset+n]
		var f func(d, x []float32, c float32)
		switch op {
		case OpAdd:
			f = vec.AddConst
		case OpSub:
			f = vec.SubConst
		case OpMul:
			f = vec.MulConst
		default:
			f = vec.DivConst
		}
		parallelFor(n, row, func(lo, hi int) {
			for r := lo; r < hi; r += row {
				f(dst[r:r+row], a[r:r+row], b[lb.Offset+r/row])
			}
		})
	case bb == n && columnBroadcast(shape, la.Strides):
		row := shape[len(shape)-1]
		b = b[lb.Offset : lb.Offset+n]
		var f func(d, x []float32, c float32)
		switch op {
		case OpAdd:
			f = vec.AddConst
		case OpSub:
			f = vec.ConstSub
		case OpMul:
			f = vec.MulConst
		default:
			f = vec.ConstDiv
		}
		parallelFor(n, row, func(lo, hi int) {
			for r := lo; r < hi; r += row {
				f(dst[r:r+row], b[r:r+row], a[la.Offset+r/row])
			}
		})
	default:
		return binaryF32Rows(vv, dst, shape, a, la, b, lb)
	}
	return true
}

// binaryF32Rows handles operands whose rows (innermost runs in row-major
// order) are contiguous and at least minRowBlock long, such as column
// slices of a wider matrix (the gates of a recurrent cell): vv runs on each
// row.
func binaryF32Rows(vv func(d, x, y []float32), dst []float32, shape []int, a []float32, la Layout, b []float32, lb Layout) bool {
	last := len(shape) - 1
	if last < 0 || shape[last] < minRowBlock || la.Strides[last] != 1 || lb.Strides[last] != 1 {
		return false
	}
	i := 0
	strided.Walk(shape, [][]int{la.Strides, lb.Strides}, []int{la.Offset, lb.Offset}, func(offs []int, n int, inc []int) {
		oa, ob := offs[0], offs[1]
		if inc[0] == 1 && inc[1] == 1 {
			vv(dst[i:i+n], a[oa:oa+n], b[ob:ob+n])
		} else {
			// Rows merged with an axis of another stride: one element at a
			// time through the same kernel, so results are identical.
			for j := range n {
				vv(dst[i+j:i+j+1], a[oa+j*inc[0]:oa+j*inc[0]+1], b[ob+j*inc[1]:ob+j*inc[1]+1])
			}
		}
		i += n
	})
	return true
}

// columnBroadcast reports whether the view (shape, strides) holds one value
// per row, broadcast along a last axis of at least minRowBlock elements,
// with the values of consecutive rows adjacent in storage (a contiguous
// [..., 1] tensor expanded along its last axis).
func columnBroadcast(shape, strides []int) bool {
	last := len(shape) - 1
	if last < 0 || shape[last] < minRowBlock || strides[last] != 0 {
		return false
	}
	return strided.IsContiguous(shape[:last], strides[:last])
}

// reduceF32Fast sums or maxes each of the outer rows of n elements of the
// contiguous src into dst.
func reduceF32Fast(op ReduceOp, dst, src []float32, outer, n int) bool {
	switch {
	case op == ReduceSum && outer == 1 && n >= parallelMin:
		// One long row: partial sums over fixed chunks (so the result does
		// not depend on the thread count), added in order.
		const chunk = parallelMin / 4
		parts := make([]float64, (n+chunk-1)/chunk)
		parallelFor(len(parts), 1, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				parts[p] = vec.Sum(src[p*chunk : min((p+1)*chunk, n)])
			}
		})
		var s float64
		for _, p := range parts {
			s += p
		}
		dst[0] = float32(s)
	case op == ReduceSum:
		parallelRows(outer, n, func(r int) { dst[r] = float32(vec.Sum(src[r*n : r*n+n])) })
	case op == ReduceMax && n > 0:
		parallelRows(outer, n, func(r int) { dst[r] = vec.Max(src[r*n : r*n+n]) })
	default:
		return false
	}
	return true
}

// parallelRows calls f for each of rows rows of n elements, split across
// goroutines when the rows hold parallelMin elements or more in all.
func parallelRows(rows, n int, f func(r int)) {
	if rows*n < parallelMin || rows < 2 {
		for r := range rows {
			f(r)
		}
		return
	}
	parallelEach(rows, f)
}

// parallelEach calls f(0) … f(count-1), in contiguous runs on up to
// NumThreads goroutines.
func parallelEach(count int, f func(i int)) {
	threads := min(NumThreads(), count)
	if threads <= 1 {
		for i := range count {
			f(i)
		}
		return
	}
	per := (count + threads - 1) / threads
	parallel.Run((count+per-1)/per, func(t int) {
		for i := t * per; i < min((t+1)*per, count); i++ {
			f(i)
		}
	})
}

// compareF32Fast computes the comparison a op b into the bool dst when both
// operands are contiguous or repeated blocks (see repeatedBlock).
func compareF32Fast(op BinaryOp, dst []bool, shape []int, a []float32, la Layout, b []float32, lb Layout) bool {
	if !op.isComparison() {
		return false
	}
	c := vec.CmpOp(op - OpEq) // same order: Eq, Ne, Lt, Le, Gt, Ge
	n := len(dst)
	ba, okA := repeatedBlock(shape, la.Strides)
	bb, okB := repeatedBlock(shape, lb.Strides)
	if n == 0 || !okA || !okB {
		return false
	}
	switch {
	case ba == n && bb == n:
		a, b = a[la.Offset:la.Offset+n], b[lb.Offset:lb.Offset+n]
		parallelFor(n, 16, func(lo, hi int) { vec.Compare(c, dst[lo:hi], a[lo:hi], b[lo:hi]) })
	case ba == n && bb == 1:
		a, k := a[la.Offset:la.Offset+n], b[lb.Offset]
		parallelFor(n, 16, func(lo, hi int) { vec.CompareConst(c, dst[lo:hi], a[lo:hi], k) })
	case ba == 1 && bb == n:
		k, b := a[la.Offset], b[lb.Offset:lb.Offset+n]
		parallelFor(n, 16, func(lo, hi int) { vec.CompareConst(c.Swap(), dst[lo:hi], b[lo:hi], k) })
	case (ba == n && bb >= minRowBlock) || (bb == n && ba >= minRowBlock):
		row := min(ba, bb)
		a, b = a[la.Offset:la.Offset+ba], b[lb.Offset:lb.Offset+bb]
		parallelFor(n, row, func(lo, hi int) {
			for r := lo; r < hi; r += row {
				vec.Compare(c, dst[r:r+row], a[r%ba:r%ba+row], b[r%bb:r%bb+row])
			}
		})
	default:
		return false
	}
	return true
}

// boolToF32Fast converts the contiguous bool view l of src to 0/1 floats.
func boolToF32Fast(dst []float32, src []bool, l Layout) bool {
	n := len(dst)
	if !strided.IsContiguous(l.Shape, l.Strides) {
		return false
	}
	src = src[l.Offset : l.Offset+n]
	parallelFor(n, 16, func(lo, hi int) { vec.FromBool(dst[lo:hi], src[lo:hi]) })
	return true
}

// smallGEMM is the m·n·k below which one product gains nothing from more
// goroutines; a batch of such products is spread across goroutines one
// product each instead.
const smallGEMM = 1 << 18

// sgemmBatch computes the float32 batched product p into dst: large
// products one after another, each split across NumThreads goroutines;
// batches of small ones (attention heads, grouped convolutions) spread
// across the goroutines whole. Every product is computed by the same
// kernel either way, so the results do not depend on the thread count.
func sgemmBatch(p MatMulParams, a, b, dst []float32) {
	batch, mn := len(p.AOffsets), p.M*p.N
	one := func(i, threads int) {
		gemm.SgemmThreads(threads, p.TransA, p.TransB, p.M, p.N, p.K, 1, a[p.AOffsets[i]:], p.LDA, b[p.BOffsets[i]:], p.LDB, 0, dst[i*mn:(i+1)*mn], max(p.N, 1))
	}
	threads := NumThreads()
	if batch == 1 || threads == 1 || mn*p.K >= smallGEMM || batch*mn*p.K < smallGEMM/4 {
		for i := range batch {
			one(i, threads)
		}
		return
	}
	parallelEach(batch, func(i int) { one(i, 1) })
}

// softmaxF32Rows writes the softmax (or log-softmax) of each of the outer
// contiguous rows of n elements of src into dst with the SIMD kernels: the
// row maximum is subtracted, e**x comes from vec.Exp and the sum is
// accumulated in float64. As in PyTorch's float32 kernel, x - max is
// rounded to float32, so results are within |x - max|·2⁻²⁴ relative (plus a
// few ulps) of the float64 computation; NaN and infinities propagate as they
// do there.
func softmaxF32Rows(log bool, dst, src []float32, outer, n int) {
	parallelRows(outer, n, func(r int) {
		s, d := src[r*n:(r+1)*n], dst[r*n:(r+1)*n]
		m := vec.Max(s)
		vec.SubConst(d, s, m)
		if log {
			// s - (m + log(sum(e**(s-m)))), the exponentials staged in dst.
			vec.Exp(d, d)
			vec.SubConst(d, s, float32(float64(m)+math.Log(vec.Sum(d))))
			return
		}
		vec.Exp(d, d)
		vec.MulConst(d, d, float32(1/vec.Sum(d)))
	})
}
