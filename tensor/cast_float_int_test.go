package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor"
)

// TestCastFloatToIntOutOfRange pins float→int64/int32 casts of NaN, ±Inf
// and out-of-range values to x86-64's "integer indefinite" (MinInt64 /
// MinInt32), which is what PyTorch and NumPy give on x86-64, on every
// architecture: Go's own conversion is implementation-specific there
// (arm64 saturates).
func TestCastFloatToIntOutOfRange(t *testing.T) {
	in := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30, 3e9, -2.9, 2.9, 0}
	for _, src := range []tensor.DType{tensor.Float64, tensor.Float32} {
		x := tensor.FromSlice(in, len(in)).To(src)
		assert.Equal(t, []int64{math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64, 3e9, -2, 2, 0},
			x.To(tensor.Int64).Int64s(), "%v → int64", src)
		assert.Equal(t, []int32{math.MinInt32, math.MinInt32, math.MinInt32, math.MinInt32, math.MinInt32, math.MinInt32, -2, 2, 0},
			x.To(tensor.Int32).Int32s(), "%v → int32", src)
	}
}
