//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
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

// transpose8AVX transposes n blocks of 8×8 floats: for block b, row r and
// column c, src[r*lds+8b+c] goes to dst[(8b+c)*ldd+r].
//
//go:noescape
func transpose8AVX(dst *float32, ldd int, src *float32, lds int, n int)

// transpose4AVX is transpose8AVX for blocks of 4 rows (4×8 floats).
//
//go:noescape
func transpose4AVX(dst *float32, ldd int, src *float32, lds int, n int)

// canTranspose8 reports whether transpose8 and transpose4 have vector
// routines on this CPU.
func canTranspose8() bool { return isa.Has(isa.AVX2) }

// transpose8 transposes the 8×8n block of src (rows lds apart) into the
// 8n×8 block of dst (rows ldd apart) with transpose8AVX. The caller has
// checked canTranspose8 and that both blocks fit.
func transpose8(dst []float32, ldd int, src []float32, lds, n int) {
	transpose8AVX(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, n)
}

// transpose4 is transpose8 for a block of 4 rows (4×8n into 8n×4).
func transpose4(dst []float32, ldd int, src []float32, lds, n int) {
	transpose4AVX(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, n)
}

// scatterPanels copies the len(src)/nr blocks of nr floats of src to
// dst[i*stride:] with vector moves when an assembly routine fits nr and the
// CPU, reporting whether it did. The caller has checked that dst holds
// every block.
func scatterPanels(dst []float32, stride int, src []float32, nr int) bool {
	switch {
	case nr == 32 && isa.Has(isa.AVX512):
		scatter32AVX512(unsafe.SliceData(dst), stride, unsafe.SliceData(src), len(src)/32)
	case nr == 16 && isa.Has(isa.AVX2):
		scatter16AVX(unsafe.SliceData(dst), stride, unsafe.SliceData(src), len(src)/16)
	default:
		return false
	}
	return true
}
