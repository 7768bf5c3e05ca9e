package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor"
)

// Regression test: ArgMax and CumSum of a view with a storage offset (a
// Narrow along axis 0 is contiguous but does not start at element 0).
func TestArgReduceAndScanOfOffsetView(t *testing.T) {
	x := tensor.FromSlice([]float64{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0}, 4, 3)
	n := x.Narrow(0, 1, 2)
	assert.Equal(t, []int64{0, 2}, n.ArgMax(1, false).Int64s())
	assert.Equal(t, []int64{1, 0}, n.ArgMin(1, false).Int64s())
	assert.Equal(t, []float64{1, 1, 1, 0, 0, 1}, n.CumSum(1).Float64s())
}
