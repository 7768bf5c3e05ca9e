//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// maxIntoAVX2 is maxIntoGo for the first n&^7 elements, 8 per vector; NaN
// results may carry another payload than Go's max gives.
//
//go:noescape
func maxIntoAVX2(dst, src *float32, n int)

// maxInto32 sets dst[i] = max(dst[i], src[i]) (len(src) >= len(dst)),
// with AVX2 when the CPU has it; see maxIntoGo.
func maxInto32(dst, src []float32) {
	n := len(dst)
	src = src[:n]
	done := 0
	if isa.Has(isa.AVX2) && n >= 8 {
		done = n &^ 7
		maxIntoAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), done)
	}
	maxIntoGo(dst[done:], src[done:])
}
