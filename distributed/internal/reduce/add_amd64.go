//go:build amd64 && !purego

package distributed

// addFloat32s sets dst[i] += src[i] for i < len(dst) with SSE2; src must
// hold at least len(dst) elements (the caller checks).
//
//go:noescape
func addFloat32s(dst, src []float32)

// addFloat64s is addFloat32s for float64.
//
//go:noescape
func addFloat64s(dst, src []float64)
