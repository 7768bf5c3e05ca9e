package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// TestCrossEntropyPickMatchesGeneral requires the loss of unweighted class
// targets (one Gather of the picked log-probabilities) to equal, bit for
// bit in value and gradient, the general one-hot path, which class weights
// of one select without changing a number: 2-d and 3-d logits, float32 and
// float64, every reduction, with and without ignored targets.
func TestCrossEntropyPickMatchesGeneral(t *testing.T) {
	g := tensor.NewGenerator(3)
	for _, tc := range []struct {
		name    string
		shape   []int // logits; the class axis is 1
		dt      tensor.DType
		targets []int64
	}{
		{"2d", []int{5, 7}, tensor.Float32, []int64{0, 6, 3, 3, 1}},
		{"2d-ignored", []int{5, 7}, tensor.Float32, []int64{0, -100, 3, -100, 1}},
		{"2d-all-ignored", []int{2, 3}, tensor.Float32, []int64{-100, -100}},
		{"3d-f64", []int{2, 4, 3}, tensor.Float64, []int64{0, 3, 2, 1, -100, 0}},
	} {
		for _, red := range []nn.Reduction{nn.ReduceMean, nn.ReduceSum, nn.ReduceNone} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, red), func(t *testing.T) {
				logits := g.Randn(tc.shape, tc.dt)
				tshape := append([]int{tc.shape[0]}, tc.shape[2:]...)
				target := tensor.FromSlice(tc.targets, tshape...)
				ones := tensor.Ones([]int{tc.shape[1]}, tc.dt)
				var vals [2][]float64
				var grads [2][]float64
				for i, l := range []*nn.CrossEntropyLoss{
					nn.NewCrossEntropyLoss(nn.WithReduction(red)),
					nn.NewCrossEntropyLoss(nn.WithReduction(red), nn.WithClassWeights(ones)),
				} {
					x := autograd.Param(logits.Clone())
					loss := l.Forward(x, target)
					vals[i] = loss.Value().Float64s()
					require.NoError(t, loss.Sum(nil, false).Backward())
					grads[i] = x.Grad().Float64s()
				}
				requireSameBits(t, vals[1], vals[0], "loss")
				requireSameBits(t, grads[1], grads[0], "gradient")
			})
		}
	}
}

// requireSameBits requires want and got to hold the same float64 bit
// patterns (so NaN equals NaN and -0 differs from +0).
func requireSameBits(t *testing.T, want, got []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%s %d: %v, want %v", what, i, got[i], want[i])
	}
}

// TestCrossEntropyPickBounds checks that a class target outside [0, C)
// panics with the loss's message on the host path too.
func TestCrossEntropyPickBounds(t *testing.T) {
	l := nn.NewCrossEntropyLoss()
	x := autograd.Param(tensor.Zeros([]int{2, 3}, tensor.Float32))
	for _, bad := range []int64{3, -1} {
		require.PanicsWithValue(t, fmt.Sprintf("nn.CrossEntropyLoss: target %d is out of bounds for 3 classes", bad), func() {
			l.Forward(x, tensor.FromSlice([]int64{0, bad}, 2))
		})
	}
}
