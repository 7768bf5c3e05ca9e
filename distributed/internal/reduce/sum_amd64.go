//go:build amd64 && !purego

package reduce

// sum4Float32s sets dst[i] = a[i] (+ b[i] where k ≥ 2) (+ c[i] where
// k ≥ 3) (+ d[i] where k = 4), left to right, divided by div unless div is 0, with SSE2
// (sum_amd64.s); every slice holds at least len(dst) elements.
//
//go:noescape
func sum4Float32s(dst, a, b, c, d []float32, k int, div float32)

// sum4Float64s is sum4Float32s for float64.
//
//go:noescape
func sum4Float64s(dst, a, b, c, d []float64, k int, div float64)
