package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs allocated without a zero fill are fully written by their kernels
// (`go test -tags ember_poison` fills them with 0xff first to check this
// for every test); an empty inner dimension still gives zeros.
func TestEmptyOutWrittenByKernels(t *testing.T) {
	a := Zeros([]int{3, 0})
	b := Zeros([]int{0, 2})
	assert.Equal(t, []float32{0, 0, 0, 0, 0, 0}, a.MatMul(b).Float32s())
	for _, dt := range []DType{Float32, Float64, Int64, Int32, Bool, Float16, BFloat16} {
		x := Arange(0, 6, 1).To(dt).Reshape(2, 3)
		c := x.T().Clone()
		require.Equal(t, []int{3, 2}, c.Shape())
		assert.Equal(t, x.T().To(Float64).Float64s(), c.To(Float64).Float64s(), dt.String())
	}
	for _, n := range []int{0, 1, 3, 1000, 1 << 16} {
		assert.Len(t, uninitSlice[float32](n), n)
		assert.Len(t, uninitSlice[int64](n), n)
	}
}
