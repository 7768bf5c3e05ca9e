//go:build amd64 && !purego

package reduce

// AddFloat32s sets dst[i] += src[i] for i < len(dst) with SSE2; src must
// hold at least len(dst) elements (it panics otherwise).
func AddFloat32s(dst, src []float32) {
	addFloat32s(dst, src[:len(dst)])
}

// AddFloat64s is AddFloat32s for float64.
func AddFloat64s(dst, src []float64) {
	addFloat64s(dst, src[:len(dst)])
}

// addFloat32s is AddFloat32s without the length check.
//
//go:noescape
func addFloat32s(dst, src []float32)

// addFloat64s is AddFloat64s without the length check.
//
//go:noescape
func addFloat64s(dst, src []float64)
