// Package strided holds the index arithmetic shared by the CPU kernels: shapes,
// strides and walks over strided operands in row-major order.
package strided

// Numel returns the number of elements of shape (1 for a scalar shape).
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Contiguous returns the row-major strides of shape.
func Contiguous(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// IsContiguous reports whether strides describe a dense row-major layout of shape.
// Dimensions of size 1 may have any stride.
func IsContiguous(shape, strides []int) bool {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != s {
			return false
		}
		s *= shape[i]
	}
	return true
}

// coalesce merges adjacent dimensions that are laid out back to back in every
// operand, so that walks use the longest possible inner rows.
func coalesce(shape []int, strides [][]int) ([]int, [][]int) {
	if len(shape) == 0 {
		return []int{1}, func() [][]int {
			out := make([][]int, len(strides))
			for i := range out {
				out[i] = []int{0}
			}
			return out
		}()
	}
	sh := []int{shape[0]}
	st := make([][]int, len(strides))
	for k := range strides {
		st[k] = []int{strides[k][0]}
	}
	for i := 1; i < len(shape); i++ {
		last := len(sh) - 1
		merge := true
		for k := range strides {
			if st[k][last] != strides[k][i]*shape[i] {
				merge = false
				break
			}
		}
		if shape[i] == 1 {
			continue
		}
		if sh[last] == 1 {
			sh[last] = shape[i]
			for k := range strides {
				st[k][last] = strides[k][i]
			}
			continue
		}
		if merge {
			sh[last] *= shape[i]
			for k := range strides {
				st[k][last] = strides[k][i]
			}
			continue
		}
		sh = append(sh, shape[i])
		for k := range strides {
			st[k] = append(st[k], strides[k][i])
		}
	}
	return sh, st
}

// Walk visits every element of shape in row-major order, one innermost row at a
// time. For each row fn receives the starting offset into each operand (offs),
// the row length n and each operand's stride along the row (inc). offs and inc
// are reused between calls and must not be retained.
func Walk(shape []int, strides [][]int, offsets []int, fn func(offs []int, n int, inc []int)) {
	if Numel(shape) == 0 {
		return
	}
	sh, st := coalesce(shape, strides)
	nd := len(sh)
	k := len(strides)
	inc := make([]int, k)
	for j := range k {
		inc[j] = st[j][nd-1]
	}
	offs := make([]int, k)
	copy(offs, offsets)
	if nd == 1 {
		fn(offs, sh[0], inc)
		return
	}
	idx := make([]int, nd-1)
	cur := make([]int, k)
	for {
		copy(cur, offs)
		fn(cur, sh[nd-1], inc)
		d := nd - 2
		for ; d >= 0; d-- {
			idx[d]++
			for j := range k {
				offs[j] += st[j][d]
			}
			if idx[d] < sh[d] {
				break
			}
			for j := range k {
				offs[j] -= st[j][d] * sh[d]
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
