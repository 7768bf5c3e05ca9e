package autograd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// TestStdVarConstantLaneGradIsZero checks PyTorch's rule at zero variance:
// std_backward masks the lanes whose deviation is zero, so a constant input
// gets a zero gradient (not NaN) from Std, and Var's gradient 2(x-mean)/(n-c)
// is exactly zero there as well. Lanes with spread keep their gradient.
func TestStdVarConstantLaneGradIsZero(t *testing.T) {
	for _, correction := range []int{0, 1} {
		for _, op := range []struct {
			name string
			f    func(v *autograd.Var) *autograd.Var
		}{
			{"Std", func(v *autograd.Var) *autograd.Var { return v.Std([]int{1}, correction, false) }},
			{"Var", func(v *autograd.Var) *autograd.Var { return v.Var([]int{1}, correction, false) }},
		} {
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
				// Row 0 is constant; row 1 is [1, 2, 3, 6].
				x := autograd.Param(tensor.FromSlice([]float64{5, 5, 5, 5, 1, 2, 3, 6}, 2, 4).To(dt))
				out := op.f(x)
				require.NoError(t, out.Sum(nil, false).Backward())
				g := x.Grad().To(tensor.Float64).Float64s()
				assert.Equal(t, []float64{0, 0, 0, 0}, g[:4], "%s correction %d %s: constant lane", op.name, correction, dt)
				// The spread lane's gradient, from the closed form:
				// Var: 2(x-m)/(n-c); Std: (x-m)/((n-c)·std).
				xs, m, n := []float64{1, 2, 3, 6}, 3.0, 4.0
				ss := 0.0
				for _, v := range xs {
					ss += (v - m) * (v - m)
				}
				den := n - float64(correction)
				for i, v := range xs {
					want := 2 * (v - m) / den
					if op.name == "Std" {
						want = (v - m) / (den * math.Sqrt(ss/den))
					}
					assert.InDelta(t, want, g[4+i], 1e-5, "%s correction %d %s: element %d", op.name, correction, dt, i)
				}
				// The value is unchanged: zero for the constant lane.
				assert.Equal(t, 0.0, out.Value().To(tensor.Float64).Float64s()[0])
			}
		}
	}
}

// TestStdGradCheckAndSecondOrder checks Std's rule against finite
// differences in float64 on inputs with spread, first and second order,
// for both corrections and with keepDim.
func TestStdGradCheckAndSecondOrder(t *testing.T) {
	x := tensor.FromSlice([]float64{0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 0.9, 3.2, -2.1, 0.05, 1.7, -0.8}, 3, 4)
	for _, correction := range []int{0, 1} {
		for _, keep := range []bool{false, true} {
			f := func(in []*autograd.Var) *autograd.Var { return in[0].Std([]int{1}, correction, keep) }
			require.NoError(t, autograd.GradCheck(f, x), "correction %d keepDim %t", correction, keep)
			require.NoError(t, autograd.GradGradCheck(f, x), "correction %d keepDim %t", correction, keep)
		}
	}
}

// TestStdSingleElementCorrectionOneIsNaN keeps PyTorch's answer where the
// variance itself is undefined (n - correction = 0): the value and its
// gradient are NaN, not a masked zero.
func TestStdSingleElementCorrectionOneIsNaN(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{2}, 1))
	out := x.Std(nil, 1, false)
	assert.True(t, math.IsNaN(out.Item()))
	require.NoError(t, out.Backward())
	assert.True(t, math.IsNaN(x.Grad().Float64s()[0]))
}
