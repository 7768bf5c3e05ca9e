//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// scatter32AVX512 copies n blocks of 32 floats, block i from src[32*i:] to
// dst[stride*i:].
//
//go:noescape
func scatter32AVX512(dst *float32, stride int, src *float32, n int)

// scatter16AVX copies n blocks of 16 floats, block i from src[16*i:] to
// dst[stride*i:].
//
//go:noescape
func scatter16AVX(dst *float32, stride int, src *float32, n int)

// scatterPanels copies the len(src)/nr blocks of nr floats of src to
// dst[i*stride:] with vector moves when an assembly routine fits nr and the
// CPU, reporting whether it did. The caller has checked that dst holds
// every block.
func scatterPanels(dst []float32, stride int, src []float32, nr int) bool {
	switch {
	case nr == 32 && cpu.X86.HasAVX512F:
		scatter32AVX512(unsafe.SliceData(dst), stride, unsafe.SliceData(src), len(src)/32)
	case nr == 16 && cpu.X86.HasAVX:
		scatter16AVX(unsafe.SliceData(dst), stride, unsafe.SliceData(src), len(src)/16)
	default:
		return false
	}
	return true
}
