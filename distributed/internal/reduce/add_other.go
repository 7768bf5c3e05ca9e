//go:build !amd64 || purego

package reduce

// AddFloat32s sets dst[i] += src[i] for i < len(dst); src must hold at
// least len(dst) elements (it panics otherwise).
func AddFloat32s(dst, src []float32) { add(dst, src) }

// AddFloat64s is AddFloat32s for float64.
func AddFloat64s(dst, src []float64) { add(dst, src) }

// add is the portable loop: blocks of 8 re-sliced to a constant length so
// the compiler drops the bounds checks.
func add[T float32 | float64](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
		d[4] += s[4]
		d[5] += s[5]
		d[6] += s[6]
		d[7] += s[7]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}
