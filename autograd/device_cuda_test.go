//go:build cuda

package autograd_test

import (
	"testing"

	"github.com/emberml/ember/cuda"
)

// TestBackwardOnCUDA runs the graphs of TestBackwardOnEmulatedDevice on the
// first GPU, to rounding (its kernels fuse multiply-adds and reduce in
// their own order).
func TestBackwardOnCUDA(t *testing.T) {
	d, err := cuda.Device(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	runDeviceGraphs(t, d, 1e-4)
}
