//go:build !cuda

package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestBackendForCUDAWithoutTag checks the error a build without -tags cuda
// gives for a CUDA device.
func TestBackendForCUDAWithoutTag(t *testing.T) {
	_, err := tensor.BackendFor(tensor.CUDA(0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"cuda:0"`)
	assert.Contains(t, err.Error(), "build with -tags cuda")
}
