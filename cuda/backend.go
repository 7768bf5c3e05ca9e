//go:build cuda

package cuda

import (
	"github.com/emberml/ember/tensor"
)

// maxRank is the most axes a strided kernel argument carries (EMBER_MAX_RANK
// in internal/kernels/common.cuh). Views of higher rank are coalesced first.
const maxRank = 8

// strided mirrors struct Strided of internal/kernels/common.cuh: the layout
// of a view passed by value to a kernel. Field order and sizes must match.
type strided struct {
	Shape   [maxRank]int64
	Strides [maxRank]int64
	Offset  int64
	Rank    int32
	_       int32
}

// buffer is device memory holding n elements of one dtype. Bool is stored
// as one byte per element, Float16 and BFloat16 as two.
type buffer struct {
	dt  tensor.DType
	n   int
	ptr uint64 // device address of element 0
	// Allocation bookkeeping (allocator block, cleanup) is owned by the
	// core backend code.
	owner any
}

// DType implements tensor.Buffer.
func (b *buffer) DType() tensor.DType { return b.dt }

// Len implements tensor.Buffer.
func (b *buffer) Len() int { return b.n }

// The internal API the kernel files (backend_*.go) are written against.
// The core (device.go) implements these; the signatures are fixed:
//
//	func (b *Backend) launch(kernel string, n int, args ...any)
//	    runs kernel over n threads: a 1-d grid of 256-thread blocks
//	    (capped; kernels use grid-stride loops), on the backend's stream.
//	func (b *Backend) launchGrid(kernel string, grid, block [3]uint32, sharedBytes uint32, args ...any)
//	    runs kernel with an explicit geometry.
//	    Argument types: uint64 (device addresses), int32, int64, uint32,
//	    float32, float64, bool (passed as a C int: int32 0/1), and
//	    pointer-free structs such as strided (passed by value, C layout).
//	func (b *Backend) ptr(buf tensor.Buffer, off int) uint64
//	    device address of element off of buf (off in elements).
//	func (b *Backend) newBuffer(dt tensor.DType, n int) *buffer
//	    uninitialised device memory for n elements (Alloc zero-fills).
//	func (b *Backend) scratch(bytes int) (addr uint64, release func())
//	    temporary device memory valid until release.
//	func (b *Backend) toHostBytes(addr uint64, dst []byte)
//	    synchronous device→host copy; fromHostBytes the other way.
//	func (b *Backend) sync()
//	    waits for the stream; panics with the CUDA error on failure.
//	func view(l tensor.Layout) strided
//	    converts a tensor layout (coalescing axes; panics above maxRank).
//
// Kernel names used from Go are string constants listed in kernelNames
// (kernels.go); a test checks each is an .entry of the embedded PTX.
