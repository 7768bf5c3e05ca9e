package strided

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveOffsets lists the offset of every element of a strided view in
// row-major order.
func naiveOffsets(shape, strides []int, off int) []int {
	var out []int
	idx := make([]int, len(shape))
	for range Numel(shape) {
		o := off
		for d, i := range idx {
			o += i * strides[d]
		}
		out = append(out, o)
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

func TestWalkMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		nd := r.IntN(5)
		shape := make([]int, nd)
		for i := range shape {
			shape[i] = r.IntN(4) + 1
			if r.IntN(20) == 0 {
				shape[i] = 0
			}
		}
		// Two operands: one dense or permuted/strided, one with broadcast
		// (zero) and negative strides.
		st := [][]int{Contiguous(shape), make([]int, nd)}
		for i := range st[1] {
			st[1][i] = r.IntN(7) - 3
		}
		if r.IntN(2) == 0 && nd > 1 {
			st[0][0], st[0][nd-1] = st[0][nd-1], st[0][0]
		}
		offs := []int{r.IntN(5), 100}
		var got [2][]int
		Walk(shape, st, offs, func(o []int, n int, inc []int) {
			for j := range n {
				got[0] = append(got[0], o[0]+j*inc[0])
				got[1] = append(got[1], o[1]+j*inc[1])
			}
		})
		for k := range 2 {
			want := naiveOffsets(shape, st[k], offs[k])
			if Numel(shape) == 0 {
				want = nil
			}
			require.Equal(t, want, got[k], "trial %d shape %v strides %v", trial, shape, st[k])
		}
	}
}

func TestIsContiguous(t *testing.T) {
	cases := []struct {
		shape, strides []int
		want           bool
	}{
		{nil, nil, true},
		{[]int{2, 3}, []int{3, 1}, true},
		{[]int{2, 3}, []int{1, 2}, false},
		{[]int{2, 1, 3}, []int{3, 99, 1}, true}, // size-1 axes may have any stride
		{[]int{1, 3}, []int{0, 1}, true},
		{[]int{3, 1}, []int{1, 0}, true},
		{[]int{3}, []int{2}, false},
		{[]int{3, 4}, []int{0, 1}, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, IsContiguous(c.shape, c.strides), "%v %v", c.shape, c.strides)
	}
	assert.Equal(t, []int{12, 4, 1}, Contiguous([]int{2, 3, 4}))
	assert.Equal(t, 1, Numel(nil))
	assert.Equal(t, 0, Numel([]int{3, 0}))
}

func TestCoalesce(t *testing.T) {
	sh, st := coalesce([]int{2, 3, 4}, [][]int{{12, 4, 1}, {0, 0, 1}})
	assert.Equal(t, []int{6, 4}, sh)
	assert.Equal(t, [][]int{{4, 1}, {0, 1}}, st)
	sh, st = coalesce([]int{2, 3, 4}, [][]int{{12, 4, 1}})
	assert.Equal(t, []int{24}, sh)
	assert.Equal(t, [][]int{{1}}, st)
	sh, _ = coalesce(nil, [][]int{{}})
	assert.Equal(t, []int{1}, sh)
}
