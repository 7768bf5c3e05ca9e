//go:build !amd64 || purego

package reduce

// DivFloat32s sets dst[i] /= d for every element.
func DivFloat32s(dst []float32, d float32) { div(dst, d) }

// DivFloat64s is DivFloat32s for float64.
func DivFloat64s(dst []float64, d float64) { div(dst, d) }

// div is the portable loop.
func div[T float32 | float64](dst []T, d T) {
	for i := range dst {
		dst[i] /= d
	}
}
