//go:build cuda

package nn_test

import (
	"testing"

	"github.com/emberml/ember/cuda"
)

// TestLayersOnCUDA runs the cases of TestLayersOnEmulatedDevice on the
// first GPU, to rounding.
func TestLayersOnCUDA(t *testing.T) {
	d, err := cuda.Device(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	runLayerCases(t, d, 1e-4)
}
