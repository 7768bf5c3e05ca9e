// Package cpu holds the CPU backend's kernels. They work on plain Go slices
// with explicit shapes, strides and offsets, and know nothing of tensors:
// package tensor adapts them to its backend contract.
package cpu

import (
	"math"

	"github.com/emberml/ember/tensor/internal/strided"
)

// Number is the set of element types arithmetic kernels run on.
type Number interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~int16 | ~int8 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Float is the set of floating-point element types.
type Float interface{ ~float32 | ~float64 }

// Copy gathers the strided view (shape, strides, off) of src into the
// contiguous dst.
func Copy[T any](dst, src []T, shape, strides []int, off int) {
	if strided.IsContiguous(shape, strides) {
		copy(dst, src[off:off+len(dst)])
		return
	}
	i := 0
	strided.Walk(shape, [][]int{strides}, []int{off}, func(offs []int, n int, inc []int) {
		o, s := offs[0], inc[0]
		for j := range n {
			dst[i+j] = src[o+j*s]
		}
		i += n
	})
}

// Map writes f(src) for the strided view of src into the contiguous dst.
func Map[S, D any](dst []D, src []S, shape, strides []int, off int, f func(S) D) {
	if strided.IsContiguous(shape, strides) {
		src = src[off : off+len(dst)]
		for i, v := range src {
			dst[i] = f(v)
		}
		return
	}
	i := 0
	strided.Walk(shape, [][]int{strides}, []int{off}, func(offs []int, n int, inc []int) {
		o, s := offs[0], inc[0]
		d := dst[i : i+n]
		for j := range d {
			d[j] = f(src[o+j*s])
		}
		i += n
	})
}

// Zip writes f(a, b) into the contiguous dst of the given shape; a and b are
// strided views already broadcast to shape (stride 0 along broadcast axes).
func Zip[A, B, D any](dst []D, shape []int, a []A, sa []int, oa int, b []B, sb []int, ob int, f func(A, B) D) {
	if strided.IsContiguous(shape, sa) && strided.IsContiguous(shape, sb) {
		a, b = a[oa:oa+len(dst)], b[ob:ob+len(dst)]
		for i := range dst {
			dst[i] = f(a[i], b[i])
		}
		return
	}
	i := 0
	strided.Walk(shape, [][]int{sa, sb}, []int{oa, ob}, func(offs []int, n int, inc []int) {
		oa, ob, ia, ib := offs[0], offs[1], inc[0], inc[1]
		d := dst[i : i+n]
		switch {
		case ia == 1 && ib == 1:
			aa, bb := a[oa:oa+n], b[ob:ob+n]
			for j := range d {
				d[j] = f(aa[j], bb[j])
			}
		case ia == 1 && ib == 0:
			aa, bv := a[oa:oa+n], b[ob]
			for j := range d {
				d[j] = f(aa[j], bv)
			}
		case ia == 0 && ib == 1:
			av, bb := a[oa], b[ob:ob+n]
			for j := range d {
				d[j] = f(av, bb[j])
			}
		default:
			for j := range d {
				d[j] = f(a[oa+j*ia], b[ob+j*ib])
			}
		}
		i += n
	})
}

// Where writes cond ? a : b into the contiguous dst; all three operands are
// strided views broadcast to shape.
func Where[T any](dst []T, shape []int, cond []bool, sc []int, oc int, a []T, sa []int, oa int, b []T, sb []int, ob int) {
	i := 0
	strided.Walk(shape, [][]int{sc, sa, sb}, []int{oc, oa, ob}, func(offs []int, n int, inc []int) {
		for j := range n {
			if cond[offs[0]+j*inc[0]] {
				dst[i+j] = a[offs[1]+j*inc[1]]
			} else {
				dst[i+j] = b[offs[2]+j*inc[2]]
			}
		}
		i += n
	})
}

// ReduceOp names a reduction.
type ReduceOp uint8

// The reductions Reduce implements.
const (
	Sum ReduceOp = iota
	Prod
	Max
	Min
)

// Reduce reduces each of the outer rows of the contiguous src (n elements
// each) into dst[row]. Float sums accumulate in float64. Max and Min
// propagate NaN as PyTorch does.
func Reduce[T Number](op ReduceOp, dst, src []T, outer, n int) {
	for r := range outer {
		row := src[r*n : r*n+n]
		switch op {
		case Sum:
			if isFloat[T]() {
				var s float64
				for _, v := range row {
					s += float64(v)
				}
				dst[r] = T(s)
			} else {
				var s T
				for _, v := range row {
					s += v
				}
				dst[r] = s
			}
		case Prod:
			p := T(1)
			for _, v := range row {
				p *= v
			}
			dst[r] = p
		case Max, Min:
			if n == 0 {
				continue
			}
			m := row[0]
			for _, v := range row[1:] {
				if v != v || m != m { // NaN
					if v != v {
						m = v
					}
					continue
				}
				if (op == Max && v > m) || (op == Min && v < m) {
					m = v
				}
			}
			dst[r] = m
		}
	}
}

// ArgReduce writes the index of the first maximum (or minimum) of each of the
// outer×inner lanes of the contiguous src laid out as [outer, n, inner].
// A NaN counts as the extreme, as in PyTorch.
func ArgReduce[T Number](max bool, dst []int64, src []T, outer, n, inner int) {
	for o := range outer {
		for in := range inner {
			base := o*n*inner + in
			best := src[base]
			bi := 0
			for k := 1; k < n; k++ {
				v := src[base+k*inner]
				if best != best {
					break
				}
				if v != v || (max && v > best) || (!max && v < best) {
					best, bi = v, k
				}
			}
			dst[o*inner+in] = int64(bi)
		}
	}
}

// Scan writes the running sum (or product) along the middle axis of the
// contiguous src laid out as [outer, n, inner].
func Scan[T Number](prod bool, dst, src []T, outer, n, inner int) {
	for o := range outer {
		for in := range inner {
			base := o*n*inner + in
			var acc T
			if prod {
				acc = 1
			}
			for k := range n {
				if prod {
					acc *= src[base+k*inner]
				} else {
					acc += src[base+k*inner]
				}
				dst[base+k*inner] = acc
			}
		}
	}
}

func isFloat[T Number]() bool {
	var one T = 1
	return one/2 != 0 // integer division truncates to zero
}

// Fill sets every element of dst to v.
func Fill[T any](dst []T, v T) {
	for i := range dst {
		dst[i] = v
	}
}

// IsNaN reports whether v is NaN, for any float type.
func IsNaN[T Float](v T) bool { return math.IsNaN(float64(v)) }
