//go:build amd64 && !purego

package cpu

import (
	"math"
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// maxPool2x2AVX512 is maxPool2x2Go for float32 with AVX-512, 16 outputs
// per vector and the last vector of each output row masked, so that rows
// narrower than 16 outputs are vectorized too. The positions are computed
// in 32 bits, so the plane must have fewer than 2³¹ elements.
//
//go:noescape
func maxPool2x2AVX512(out *float32, oidx *int64, plane *float32, oh, ow, w int)

// maxPool2x2Plane32 runs maxPool2x2Go on one float32 plane, in assembly
// when the CPU has AVX-512 and the positions fit in 32 bits.
func maxPool2x2Plane32(out []float32, oidx []int64, plane []float32, oh, ow, w int) {
	if !isa.Has(isa.AVX512) || len(plane) > math.MaxInt32 || oh == 0 || ow == 0 {
		maxPool2x2Go(out, oidx, plane, oh, ow, w)
		return
	}
	// The kernel reads rows 2r and 2r+1 up to column 2·ow and writes
	// oh·ow outputs; check once here what the Go loop checks per access.
	_ = plane[(2*oh-1)*w+2*ow-1]
	_ = out[oh*ow-1]
	_ = oidx[oh*ow-1]
	maxPool2x2AVX512(unsafe.SliceData(out), unsafe.SliceData(oidx), unsafe.SliceData(plane), oh, ow, w)
}
