//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/tensor"
)

// DevicePointer returns the device address of t's first element, for
// handing t's memory to another NVIDIA library (NCCL, cuDNN, ...). t must be
// a contiguous tensor on a CUDA device: its elements then occupy
// t.Numel() × t.DType().Size() bytes from the returned address, in
// row-major order (Bool is one byte per element, Float16 and BFloat16 two).
//
// The address stays valid while t (or another view of its storage) is
// reachable; keep t alive until the library has finished with the memory,
// and order the library's work after the backend's pending kernels (the
// backend runs them asynchronously on its stream).
func DevicePointer(t *tensor.Tensor) (uint64, error) {
	if t == nil {
		return 0, errors.New("cuda.DevicePointer: nil tensor")
	}
	b, ok := t.Buffer().(*buffer)
	if !ok {
		return 0, fmt.Errorf("cuda.DevicePointer: the %s tensor %v is on %s, not on a CUDA device (move it with ToDevice)", t.DType(), t.Shape(), t.Device())
	}
	if !t.IsContiguous() {
		return 0, fmt.Errorf("cuda.DevicePointer: the %s tensor %v is not contiguous (strides %v); call Contiguous first", t.DType(), t.Shape(), t.Layout().Strides)
	}
	return b.ptr + uint64(t.Layout().Offset)*uint64(t.DType().Size()), nil
}
