//go:build amd64 && !purego

package reduce

// DivFloat32s sets dst[i] /= d for every element with SSE2. DIVPS rounds
// each quotient correctly, so the bits are those of the scalar division.
func DivFloat32s(dst []float32, d float32) { divFloat32s(dst, d) }

// DivFloat64s is DivFloat32s for float64.
func DivFloat64s(dst []float64, d float64) { divFloat64s(dst, d) }

// divFloat32s is DivFloat32s in assembly.
//
//go:noescape
func divFloat32s(dst []float32, d float32)

// divFloat64s is DivFloat64s in assembly.
//
//go:noescape
func divFloat64s(dst []float64, d float64)
