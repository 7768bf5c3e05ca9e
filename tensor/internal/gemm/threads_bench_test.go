package gemm

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSgemmThreads times square products on 1 and 2 goroutines
// (SgemmThreads; run with -cpu 2 or more so that both can run at once)
// and reports, besides GFLOP/s, the process's CPU time per product: the
// ratio of the 2-goroutine to the 1-goroutine CPU time is what splitting
// the work costs (packing repeated, imbalance, waiting), which a loaded
// machine disturbs less than wall time. EMBER_CPU=avx2 times the AVX2
// kernels.
func BenchmarkSgemmThreads(b *testing.B) {
	for _, n := range []int{1024, 2048} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%d/t%d", n, threads), func(b *testing.B) {
				if threads > runtime.GOMAXPROCS(0) {
					b.Skipf("GOMAXPROCS %d < %d threads", runtime.GOMAXPROCS(0), threads)
				}
				x, y, z := benchInputs(n)
				cpu0 := cpuSeconds()
				for b.Loop() {
					SgemmThreads(threads, false, false, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				reportGFLOPS(b, n)
				b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
