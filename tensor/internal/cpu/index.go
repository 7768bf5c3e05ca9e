package cpu

import "github.com/emberml/ember/tensor/internal/strided"

// Index kernels. Indices arrive as a slice of ints already checked to be in
// range, addressed through their own strides (offset 0); a stride of 0
// broadcasts an index along that axis. The axis being indexed is described
// by its stride alone: the operand strides passed here hold 0 on that axis,
// so a walk over the index shape visits the base position of every element
// and the kernel adds idx*axisStride.

// Gather writes dst[p] = src[base(p) + idx[p]*as] for every position p of
// shape in row-major order into the contiguous dst, where base(p) follows
// the strides ss (0 on the gathered axis) from so, and idx follows is.
func Gather[T any](dst []T, shape []int, src []T, ss []int, so, as int, idx []int, is []int) {
	i := 0
	strided.Walk(shape, [][]int{ss, is}, []int{so, 0}, func(offs []int, n int, inc []int) {
		o, s, io, ii := offs[0], inc[0], offs[1], inc[1]
		d := dst[i : i+n]
		switch {
		case ii == 0 && s == 1:
			base := o + idx[io]*as
			copy(d, src[base:base+n])
		case ii == 0:
			base := o + idx[io]*as
			for j := range d {
				d[j] = src[base+j*s]
			}
		default:
			for j := range d {
				d[j] = src[o+j*s+idx[io+j*ii]*as]
			}
		}
		i += n
	})
}

// Scatter writes dst[base(p) + idx[p]*as] = src[p] for every position p of
// shape, where base(p) follows the strides ds (0 on the scattered axis) from
// do, idx follows is, and src is the strided view (ss, so).
func Scatter[T any](dst []T, ds []int, do, as int, shape []int, idx []int, is []int, src []T, ss []int, so int) {
	strided.Walk(shape, [][]int{ds, is, ss}, []int{do, 0, so}, func(offs []int, n int, inc []int) {
		o, s, io, ii, so, si := offs[0], inc[0], offs[1], inc[1], offs[2], inc[2]
		if ii == 0 {
			base := o + idx[io]*as
			for j := range n {
				dst[base+j*s] = src[so+j*si]
			}
			return
		}
		for j := range n {
			dst[o+j*s+idx[io+j*ii]*as] = src[so+j*si]
		}
	})
}

// ScatterAdd is Scatter that adds into dst instead of overwriting, so
// repeated targets accumulate. The common row-to-row case (a whole
// contiguous row of src added to a contiguous row of dst, as in the
// gradient of an embedding lookup) runs as a tight loop.
func ScatterAdd[T Number](dst []T, ds []int, do, as int, shape []int, idx []int, is []int, src []T, ss []int, so int) {
	strided.Walk(shape, [][]int{ds, is, ss}, []int{do, 0, so}, func(offs []int, n int, inc []int) {
		o, s, io, ii, so, si := offs[0], inc[0], offs[1], inc[1], offs[2], inc[2]
		switch {
		case ii == 0 && s == 1 && si == 1:
			base := o + idx[io]*as
			d, v := dst[base:base+n], src[so:so+n]
			for j := range d {
				d[j] += v[j]
			}
		case ii == 0:
			base := o + idx[io]*as
			for j := range n {
				dst[base+j*s] += src[so+j*si]
			}
		default:
			for j := range n {
				dst[o+j*s+idx[io+j*ii]*as] += src[so+j*si]
			}
		}
	})
}

// ScatterOr is ScatterAdd for bool, where adding is logical or.
func ScatterOr(dst []bool, ds []int, do, as int, shape []int, idx []int, is []int, src []bool, ss []int, so int) {
	strided.Walk(shape, [][]int{ds, is, ss}, []int{do, 0, so}, func(offs []int, n int, inc []int) {
		o, s, io, ii, so, si := offs[0], inc[0], offs[1], inc[1], offs[2], inc[2]
		for j := range n {
			if src[so+j*si] {
				dst[o+j*s+idx[io+j*ii]*as] = true
			}
		}
	})
}

// MaskedSelect appends to dst, in row-major order over shape, the elements
// of the strided view (ss, so) of src whose mask element (ms, mo) is true.
// dst must have room for exactly those elements.
func MaskedSelect[T any](dst []T, shape []int, src []T, ss []int, so int, mask []bool, ms []int, mo int) {
	i := 0
	strided.Walk(shape, [][]int{ss, ms}, []int{so, mo}, func(offs []int, n int, inc []int) {
		o, s, mo, mi := offs[0], inc[0], offs[1], inc[1]
		for j := range n {
			if mask[mo+j*mi] {
				dst[i] = src[o+j*s]
				i++
			}
		}
	})
}

// MaskedScatter writes consecutive elements of the contiguous src into the
// positions of the strided view (ds, do) of dst, in row-major order over
// shape, whose mask element (ms, mo) is true.
func MaskedScatter[T any](dst []T, shape []int, ds []int, do int, mask []bool, ms []int, mo int, src []T) {
	i := 0
	strided.Walk(shape, [][]int{ds, ms}, []int{do, mo}, func(offs []int, n int, inc []int) {
		o, s, mo, mi := offs[0], inc[0], offs[1], inc[1]
		for j := range n {
			if mask[mo+j*mi] {
				dst[o+j*s] = src[i]
				i++
			}
		}
	})
}
