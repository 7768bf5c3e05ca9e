//go:build !amd64 || purego

package reduce

// sum4Float32s is the four-source kernel: the Go twin.
func sum4Float32s(dst, a, b, c, d []float32, k int, div float32) {
	sum4Go(dst, a, b, c, d, k, div)
}

// sum4Float64s is the four-source kernel: the Go twin.
func sum4Float64s(dst, a, b, c, d []float64, k int, div float64) {
	sum4Go(dst, a, b, c, d, k, div)
}
