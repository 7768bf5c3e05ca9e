package reduce

// SumFloat32s sets dst[i] to srcs[0][i] + srcs[1][i] + … added left to
// right, the bits of copying srcs[0] into dst and adding the other
// sources to it one by one, but in one pass over dst for every three
// sources after the first: the partial sums stay in registers instead of
// going through dst after each source. Every source must hold at least
// len(dst) elements (it panics otherwise); dst may be srcs[0] but no
// other source, which a later pass would read after dst changed.
func SumFloat32s(dst []float32, srcs ...[]float32) { sumChain(dst, srcs, sum4Float32s) }

// SumFloat64s is SumFloat32s for float64.
func SumFloat64s(dst []float64, srcs ...[]float64) { sumChain(dst, srcs, sum4Float64s) }

// sumChain runs a four-source kernel over srcs: the first up to four
// sources, then the running sum in dst with up to three more at a time.
func sumChain[T float32 | float64](dst []T, srcs [][]T, kernel func(dst, a, b, c, d []T, k int)) {
	if len(srcs) == 0 {
		panic("reduce: a sum of no sources")
	}
	for _, s := range srcs {
		_ = s[:len(dst)]
	}
	if len(srcs) == 1 {
		copy(dst, srcs[0])
		return
	}
	// pick returns source i, or dst where the kernel reads nothing.
	pick := func(i int) []T {
		if i < len(srcs) {
			return srcs[i]
		}
		return dst
	}
	k := min(4, len(srcs))
	kernel(dst, srcs[0], srcs[1], pick(2), pick(3), k)
	for i := k; i < len(srcs); i += 3 {
		kernel(dst, dst, srcs[i], pick(i+1), pick(i+2), 1+min(3, len(srcs)-i))
	}
}

// sum4Go is the four-source kernel in Go: dst[i] = a[i] + b[i] (+ c[i]
// where k ≥ 3) (+ d[i] where k = 4), left to right; every slice holds at
// least len(dst) elements.
func sum4Go[T float32 | float64](dst, a, b, c, d []T, k int) {
	a, b, c, d = a[:len(dst)], b[:len(dst)], c[:len(dst)], d[:len(dst)]
	switch k {
	case 2:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case 3:
		for i := range dst {
			dst[i] = a[i] + b[i] + c[i]
		}
	default:
		for i := range dst {
			dst[i] = a[i] + b[i] + c[i] + d[i]
		}
	}
}
