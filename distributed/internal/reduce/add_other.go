//go:build !amd64 || purego

package distributed

// addFloat32s sets dst[i] += src[i] for i < len(dst); src must hold at
// least len(dst) elements.
func addFloat32s(dst, src []float32) { addInto(dst, src) }

// addFloat64s is addFloat32s for float64.
func addFloat64s(dst, src []float64) { addInto(dst, src) }
