package reduce

// SumFloat32s sets dst[i] to srcs[0][i] + srcs[1][i] + … added left to
// right, the bits of copying srcs[0] into dst and adding the other
// sources to it one by one, but in one pass over dst for every three
// sources after the first: the partial sums stay in registers instead of
// going through dst after each source. Every source must hold at least
// len(dst) elements (it panics otherwise). dst may be one of the first
// four sources, which the first pass reads element by element before it
// writes each element, but no later one: a later pass reads it after dst
// changed.
func SumFloat32s(dst []float32, srcs ...[]float32) { sumChain(dst, srcs, 0, sum4Float32s) }

// SumFloat64s is SumFloat32s for float64.
func SumFloat64s(dst []float64, srcs ...[]float64) { sumChain(dst, srcs, 0, sum4Float64s) }

// MeanFloat32s is SumFloat32s followed by DivFloat32s(dst, d), with the
// division done in the last pass while the sums are in registers (the
// bits of the two calls). d must not be 0.
func MeanFloat32s(dst []float32, d float32, srcs ...[]float32) {
	sumChain(dst, srcs, nonZero(d), sum4Float32s)
}

// MeanFloat64s is MeanFloat32s for float64.
func MeanFloat64s(dst []float64, d float64, srcs ...[]float64) {
	sumChain(dst, srcs, nonZero(d), sum4Float64s)
}

// nonZero returns d, panicking on 0, which the kernels read as "do not
// divide".
func nonZero[T float32 | float64](d T) T {
	if d == 0 {
		panic("reduce: a mean divided by 0")
	}
	return d
}

// sumChain runs a four-source kernel over srcs: the first up to four
// sources, then the running sum in dst with up to three more at a time;
// the last pass divides by div unless div is 0.
func sumChain[T float32 | float64](dst []T, srcs [][]T, div T, kernel func(dst, a, b, c, d []T, k int, div T)) {
	if len(srcs) == 0 {
		panic("reduce: a sum of no sources")
	}
	for _, s := range srcs {
		_ = s[:len(dst)]
	}
	// pick returns source i, or dst where the kernel reads nothing.
	pick := func(i int) []T {
		if i < len(srcs) {
			return srcs[i]
		}
		return dst
	}
	if len(srcs) == 1 {
		// A sum of one is a copy (with the division: dst = src/div).
		kernel(dst, srcs[0], dst, dst, dst, 1, div)
		return
	}
	k := min(4, len(srcs))
	kernel(dst, srcs[0], srcs[1], pick(2), pick(3), k, lastDiv(k, len(srcs), div))
	for i := k; i < len(srcs); i += 3 {
		n := min(3, len(srcs)-i)
		kernel(dst, dst, srcs[i], pick(i+1), pick(i+2), 1+n, lastDiv(i+n, len(srcs), div))
	}
}

// lastDiv is div for the pass that ends at source end of n, else 0.
func lastDiv[T float32 | float64](end, n int, div T) T {
	if end == n {
		return div
	}
	return 0
}

// sum4Go is the four-source kernel in Go: dst[i] = a[i] (+ b[i] where
// k ≥ 2) (+ c[i] where k ≥ 3) (+ d[i] where k = 4), left to right, then
// divided by div unless div is 0; every slice holds at least len(dst)
// elements.
func sum4Go[T float32 | float64](dst, a, b, c, d []T, k int, div T) {
	a, b, c, d = a[:len(dst)], b[:len(dst)], c[:len(dst)], d[:len(dst)]
	for i := range dst {
		s := a[i]
		if k >= 2 {
			s += b[i]
		}
		if k >= 3 {
			s += c[i]
		}
		if k == 4 {
			s += d[i]
		}
		if div != 0 {
			s /= div
		}
		dst[i] = s
	}
}
