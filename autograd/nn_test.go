package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

func TestDropoutVar(t *testing.T) {
	x := autograd.Param(tensor.Ones([]int{4, 25}))
	assert.Same(t, x, autograd.Dropout(x, 0.5, false, nil), "eval is the identity")
	assert.Same(t, x, autograd.Dropout(x, 0, true, nil), "p=0 is the identity")

	a := autograd.Dropout(x, 0.3, true, tensor.NewGenerator(5))
	b := autograd.Dropout(x, 0.3, true, tensor.NewGenerator(5))
	assert.Equal(t, a.Value().Float32s(), b.Value().Float32s(), "same seed, same mask")
	require.NoError(t, a.Sum(nil, false).Backward())
	// The gradient of sum(x*mask) is the mask: the output itself for x = 1.
	assert.Equal(t, a.Value().Float32s(), x.Grad().Float32s())
	zeros := 0
	for _, v := range a.Value().Float32s() {
		if v == 0 {
			zeros++
		} else {
			assert.InDelta(t, 1/0.7, v, 1e-6)
		}
	}
	assert.Greater(t, zeros, 10)
	assert.Less(t, zeros, 50)

	all := autograd.Dropout(x, 1, true, tensor.NewGenerator(1))
	assert.Equal(t, make([]float32, 100), all.Value().Float32s())
	assert.Panics(t, func() { autograd.Dropout(x, -0.1, true, tensor.NewGenerator(1)) })
}

func TestNNSavedVersionCheck(t *testing.T) {
	g := tensor.NewGenerator(1)
	x := autograd.Param(g.Randn([]int{1, 1, 4, 4}))
	w := autograd.Param(g.Randn([]int{2, 1, 3, 3}))
	y := autograd.Conv2d(x, w, nil, tensor.Conv2dOptions{})
	x.Value().MulScalarInPlace(2)
	err := y.Sum(nil, false).Backward()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Conv2d")
}

func TestNNNoGradNoTape(t *testing.T) {
	g := tensor.NewGenerator(2)
	x := autograd.New(g.Randn([]int{2, 3, 5, 5}))
	w := autograd.New(g.Randn([]int{4, 3, 3, 3}))
	y := autograd.MaxPool2d(autograd.Conv2d(x, w, nil, tensor.Conv2dOptions{}), tensor.Pool2dOptions{Kernel: [2]int{2, 2}})
	assert.False(t, y.RequiresGrad())
	assert.True(t, y.IsLeaf())
	assert.Equal(t, []int{2, 4, 1, 1}, y.Shape())
}

// TestConvOnlyWeightGrad trains a conv weight with a constant input: only
// the weight and bias receive gradients.
func TestConvOnlyWeightGrad(t *testing.T) {
	g := tensor.NewGenerator(3)
	x := autograd.New(g.Randn([]int{2, 2, 5, 5}, tensor.Float64))
	w := autograd.Param(g.Randn([]int{3, 2, 3, 3}, tensor.Float64))
	b := autograd.Param(tensor.Zeros([]int{3}, tensor.Float64))
	y := autograd.Conv2d(x, w, b, tensor.Conv2dOptions{Padding: [2]int{1, 1}})
	require.NoError(t, y.Sum(nil, false).Backward())
	assert.Nil(t, x.Grad())
	require.NotNil(t, w.Grad())
	// d sum / d b[o] is the number of output positions.
	assert.Equal(t, []float64{50, 50, 50}, b.Grad().Float64s())
}
