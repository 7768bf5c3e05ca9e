package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScratchContiguous(t *testing.T) {
	x := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)

	c, release := scratchContiguous(x)
	assert.Same(t, x, c, "a contiguous tensor is used as is")
	release()

	tr := x.T()
	c, release = scratchContiguous(tr)
	assert.False(t, c.SharesStorage(x))
	assert.Equal(t, []int{3, 2}, c.Shape())
	assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, c.Float32s())
	mem := &c.st.buf.(*cpuBuffer).data.([]float32)[0]
	release()
	// The next scratch copy of the same size class reuses the memory.
	c2, release2 := scratchContiguous(x.Select(0, 1).Unsqueeze(0).Expand(6, 3).Narrow(0, 0, 2).T())
	assert.Same(t, mem, &c2.st.buf.(*cpuBuffer).data.([]float32)[0])
	assert.Equal(t, []float32{4, 4, 5, 5, 6, 6}, c2.Float32s())
	release2()

	// An offset view is copied even though it is contiguous.
	row := FromSlice([]float64{1, 2, 3, 4}, 2, 2).Select(0, 1)
	c, release = scratchContiguous(row)
	assert.Equal(t, 0, c.Offset())
	assert.Equal(t, []float64{3, 4}, c.Float64s())
	release()

	// Other dtypes are cloned.
	ix := FromSlice([]int64{1, 2, 3, 4}, 2, 2).T()
	c, release = scratchContiguous(ix)
	assert.Equal(t, []int64{1, 3, 2, 4}, c.Int64s())
	release()
}

// Reductions that copy their input into a scratch buffer give the same
// values however often the buffer is reused.
func TestReduceWithScratch(t *testing.T) {
	g := NewGenerator(3)
	x := g.Randn([]int{37, 29}, Float64)
	want := make([]float64, 29)
	for j := range want {
		for i := range 37 {
			want[j] += x.At(i, j)
		}
	}
	for range 3 {
		got := x.Sum([]int{0}, false).Float64s()
		require.Len(t, got, 29)
		for j := range want {
			assert.InDelta(t, want[j], got[j], 1e-12)
		}
		assert.InDeltaSlice(t, x.T().Sum([]int{1}, false).Float64s(), got, 1e-12)
	}
}

// BenchmarkSumLeadingAxis is a bias gradient: the sum over the batch axis
// of a [128, 512] float32 gradient, which reduces a transposed copy.
func BenchmarkSumLeadingAxis(b *testing.B) {
	x := NewGenerator(1).Randn([]int{128, 512})
	b.ReportAllocs()
	for b.Loop() {
		x.Sum([]int{0}, false)
	}
}

// CopyFrom from a view of its own storage goes through a scratch copy, so
// overlapping reads and writes do not clobber each other.
func TestCopyFromSelfOverlap(t *testing.T) {
	for range 2 { // the second round reuses the scratch memory
		x := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
		x.CopyFrom(x.Flip(1))
		assert.Equal(t, []float32{3, 2, 1, 6, 5, 4}, x.Float32s())
		y := FromSlice([]float64{1, 2, 3, 4, 5}, 5)
		y.Narrow(0, 1, 4).CopyFrom(y.Narrow(0, 0, 4))
		assert.Equal(t, []float64{1, 1, 2, 3, 4}, y.Float64s())
	}
}
