//go:build !cuda

package nn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// TestToDeviceCUDAWithoutTag checks the error of moving a model to a GPU
// in a build without -tags cuda.
func TestToDeviceCUDAWithoutTag(t *testing.T) {
	m := nn.NewLinear(tensor.NewGenerator(1), 2, 2, true)
	err := nn.ToDevice(m, tensor.CUDA(0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nn.ToDevice")
	assert.Contains(t, err.Error(), "build with -tags cuda")
	assert.Equal(t, tensor.CPU, m.Weight.Value().Device())
}
