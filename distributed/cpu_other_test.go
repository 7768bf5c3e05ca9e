//go:build !unix

package distributed

// cpuSeconds reports 0: the benchmarks' CPU-time figures need getrusage.
func cpuSeconds() float64 { return 0 }
