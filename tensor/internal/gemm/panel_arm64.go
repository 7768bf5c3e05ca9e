//go:build arm64 && !purego

package gemm

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// transpose4x8NEON transposes n blocks of 4×8 floats: for block b, row r
// and column c, src[r*lds+8b+c] goes to dst[(8b+c)*ldd+r].
//
//go:noescape
func transpose4x8NEON(dst *float32, ldd int, src *float32, lds int, n int)

// scatterPanels reports false: arm64 copies whole panel rows with Go's
// copy, which is already a vector memmove there.
func scatterPanels(dst []float32, stride int, src []float32, nr int) bool { return false }

// canTranspose8 reports whether transpose8 and transpose4 may run: they
// are NEON, on every arm64 CPU unless EMBER_CPU=generic.
func canTranspose8() bool { return isa.Has(isa.NEON) }

// transpose8 transposes the 8×8n block of src (rows lds apart) into the
// 8n×8 block of dst (rows ldd apart), as two blocks of 4 rows. The caller
// has checked that both blocks fit.
func transpose8(dst []float32, ldd int, src []float32, lds, n int) {
	transpose4x8NEON(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, n)
	transpose4x8NEON(unsafe.SliceData(dst[4:]), ldd, unsafe.SliceData(src[4*lds:]), lds, n)
}

// transpose4 is transpose8 for a block of 4 rows (4×8n into 8n×4).
func transpose4(dst []float32, ldd int, src []float32, lds, n int) {
	transpose4x8NEON(unsafe.SliceData(dst), ldd, unsafe.SliceData(src), lds, n)
}
