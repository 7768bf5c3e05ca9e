//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
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
	if cpu.X86.HasAVX2 && n >= 8 {
		done = n &^ 7
		maxIntoAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), done)
	}
	maxIntoGo(dst[done:], src[done:])
}
