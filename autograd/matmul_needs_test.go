package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// MatMul forms only the gradients its operands need; a constant operand
// (a network's input) gets none, and the other gradient is unchanged.
func TestMatMulSkipsConstantOperand(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	w := tensor.FromSlice([]float64{0.5, -1, 2, 1.5, -0.25, 3}, 2, 3)
	for _, c := range []struct {
		name         string
		needX, needW bool
	}{{"weight_only", false, true}, {"input_only", true, false}, {"both", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			xv, wv := autograd.New(x), autograd.New(w)
			xv.SetRequiresGrad(c.needX)
			wv.SetRequiresGrad(c.needW)
			require.NoError(t, xv.MatMul(wv.T()).Square().Sum(nil, false).Backward())
			// d/dx sum((x wᵀ)²) = 2 (x wᵀ) w; d/dw = 2 (x wᵀ)ᵀ x.
			y := x.MatMul(w.T()).MulScalar(2)
			if c.needX {
				assert.InDeltaSlice(t, y.MatMul(w).Float64s(), xv.Grad().Float64s(), 1e-12)
			} else {
				assert.Nil(t, xv.Grad())
			}
			if c.needW {
				assert.InDeltaSlice(t, y.T().MatMul(x).Float64s(), wv.Grad().Float64s(), 1e-12)
			} else {
				assert.Nil(t, wv.Grad())
			}
		})
	}
	// A constant operand inside GradCheck / GradGradCheck (the recorded
	// backward takes the same branch).
	f := func(in []*autograd.Var) *autograd.Var {
		return autograd.New(x).MatMul(in[0].T()).Square().Sum(nil, false)
	}
	require.NoError(t, autograd.GradCheck(f, w))
	require.NoError(t, autograd.GradGradCheck(f, w))
}
