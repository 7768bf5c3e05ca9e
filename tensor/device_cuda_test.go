//go:build cuda

package tensor_test

import (
	"testing"

	"github.com/emberml/ember/cuda"
)

// gpuTol is the relative tolerance of the GPU comparisons: its kernels may
// fuse multiply-adds, reduce in another order and use their own math
// library, so results agree with the CPU's to rounding, not bitwise.
const gpuTol = 1e-4

// TestOpsOnCUDA runs the device cases of TestOpsOnEmulatedDevice on the
// first GPU.
func TestOpsOnCUDA(t *testing.T) {
	d, err := cuda.Device(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	runDeviceCases(t, d, gpuTol)
}
