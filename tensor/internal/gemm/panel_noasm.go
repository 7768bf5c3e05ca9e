//go:build !amd64 || purego

package gemm

// scatterPanels reports false: this build has no vector copy, and the
// caller copies in Go.
func scatterPanels(dst []float32, stride int, src []float32, nr int) bool { return false }
