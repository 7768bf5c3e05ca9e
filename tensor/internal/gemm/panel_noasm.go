//go:build !(amd64 || arm64) || purego

package gemm

// scatterPanels reports false: this build has no vector copy, and the
// caller copies in Go.
func scatterPanels(dst []float32, stride int, src []float32, nr int) bool { return false }

// canTranspose8 reports false: this build has no vector transposes.
func canTranspose8() bool { return false }

// transpose8 is never called in this build (canTranspose8 is false); it
// transposes in Go all the same.
func transpose8(dst []float32, ldd int, src []float32, lds, n int) {
	transposeGo(dst, ldd, src, lds, 8, 8*n)
}

// transpose4 is transpose8 for 4 rows.
func transpose4(dst []float32, ldd int, src []float32, lds, n int) {
	transposeGo(dst, ldd, src, lds, 4, 8*n)
}
