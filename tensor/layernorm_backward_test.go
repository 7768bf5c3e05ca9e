package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor"
)

// LayerNormBackward's one-pass kernel (contiguous operands) agrees with
// the general path (reached through a transposed gradient), with and
// without weight, in float32 and float64, for row counts that do not fill
// the last block of rows.
func TestLayerNormBackwardDenseMatchesGeneral(t *testing.T) {
	g := tensor.NewGenerator(8)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{3, 5}, {70, 33}, {2, 45, 64}} {
			cols := shape[len(shape)-1]
			x := g.Randn(shape, dt).MulScalar(2).AddScalar(0.5)
			grad := g.Randn(shape, dt)
			gradT := grad.Reshape(-1, cols).T().Contiguous().T().Reshape(shape...) // same values, not contiguous
			for _, withWeight := range []bool{false, true} {
				var w *tensor.Tensor
				if withWeight {
					w = g.Randn([]int{cols}, dt)
				}
				_, mean, variance := tensor.LayerNormWithStats(x, []int{cols}, w, nil, 1e-5)
				dx, dw, db := tensor.LayerNormBackward(grad, x, mean, variance, []int{cols}, w, 1e-5)
				dx2, dw2, db2 := tensor.LayerNormBackward(gradT, x, mean, variance, []int{cols}, w, 1e-5)
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 2e-5
				}
				assert.InDeltaSlice(t, dx2.To(tensor.Float64).Float64s(), dx.To(tensor.Float64).Float64s(), tol, "dx %v %s weight=%t", shape, dt, withWeight)
				assert.InDeltaSlice(t, dw2.To(tensor.Float64).Float64s(), dw.To(tensor.Float64).Float64s(), 10*tol, "dweight %v %s", shape, dt)
				assert.InDeltaSlice(t, db2.To(tensor.Float64).Float64s(), db.To(tensor.Float64).Float64s(), 10*tol, "dbias %v %s", shape, dt)
				assert.Equal(t, []int{cols}, dw.Shape())
			}
		}
	}
}
