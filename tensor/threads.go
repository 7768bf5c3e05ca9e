package tensor

import "github.com/emberml/ember/tensor/internal/parallel"

// SetNumThreads sets how many goroutines the CPU backend may split one
// large kernel (elementwise ops of 64K elements or more, reductions, matrix
// products) across. Like runtime.GOMAXPROCS it is a process-wide knob, the
// one package-level setting in tensor: it changes no result beyond float
// rounding of matrix products and is safe to call from any goroutine at any
// time. n <= 0 restores the default, runtime.GOMAXPROCS(0) at the time of
// each kernel call.
func SetNumThreads(n int) { parallel.SetThreads(n) }

// NumThreads returns the number of goroutines the CPU backend splits large
// kernels across: the value given to SetNumThreads, or runtime.GOMAXPROCS(0)
// when none was.
func NumThreads() int { return parallel.Threads() }

// parallelMin is the element count from which elementwise kernels are split
// across goroutines; smaller ones finish before goroutines would start.
const parallelMin = 1 << 16

// parallelFor calls f on consecutive ranges [lo, hi) covering [0, n), on up
// to NumThreads goroutines when n >= parallelMin, else once on the calling
// goroutine. Range bounds are multiples of grain (except n itself), so
// callers can keep rows or vector widths whole.
func parallelFor(n, grain int, f func(lo, hi int)) {
	threads := NumThreads()
	if n < parallelMin || threads <= 1 {
		f(0, n)
		return
	}
	threads = min(threads, n/(parallelMin/4))
	units := (n + grain - 1) / grain
	per := (units + threads - 1) / threads * grain
	parallel.Run((n+per-1)/per, func(i int) { f(i*per, min((i+1)*per, n)) })
}
