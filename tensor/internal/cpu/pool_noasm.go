//go:build !(amd64 || arm64) || purego

package cpu

// maxInto32 runs maxIntoGo.
func maxInto32(dst, src []float32) { maxIntoGo(dst, src) }
