package parallel

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRunCallsEachIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 67} {
		counts := make([]atomic.Int32, n)
		Run(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			assert.Equal(t, int32(1), counts[i].Load(), "n=%d index %d", n, i)
		}
	}
}

// TestRunAfterParking runs again once the workers have parked, so that the
// job reaches them through wake.
func TestRunAfterParking(t *testing.T) {
	for range 3 {
		var sum atomic.Int64
		Run(4, func(i int) { sum.Add(int64(i)) })
		assert.Equal(t, int64(6), sum.Load())
		time.Sleep(3 * spinFor)
	}
}

func TestRunNestedAndConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	results := make([]int64, 8)
	for c := range results {
		wg.Go(func() {
			for range 50 {
				var sum atomic.Int64
				Run(3, func(i int) {
					Run(2, func(j int) { sum.Add(int64(10*i + j + 1)) })
				})
				results[c] += sum.Load()
			}
		})
	}
	wg.Wait()
	// Each Run sums 1+2+11+12+21+22 = 69.
	for c, r := range results {
		assert.Equal(t, int64(50*69), r, "caller %d", c)
	}
}

// spinWork busies the CPU for about d.
func spinWork(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// BenchmarkRun times regions of two parts of 20µs each, back to back with
// 10µs of serial work between them (as in a batch-1 convolution), on the
// workers and on a goroutine started per part. The ideal is 30µs; the
// 10th and 50th percentiles of the iterations are reported beside the
// mean, which a busy machine inflates most.
func BenchmarkRun(b *testing.B) {
	const part, gap = 20 * time.Microsecond, 10 * time.Microsecond
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"workers", func() { Run(2, func(int) { spinWork(part) }) }},
		{"goroutine", func() {
			var wg sync.WaitGroup
			wg.Go(func() { spinWork(part) })
			spinWork(part)
			wg.Wait()
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ts []time.Duration
			for b.Loop() {
				t0 := time.Now()
				c.run()
				ts = append(ts, time.Since(t0))
				spinWork(gap)
			}
			slices.Sort(ts)
			b.ReportMetric(float64(ts[len(ts)/10].Nanoseconds()), "p10-ns")
			b.ReportMetric(float64(ts[len(ts)/2].Nanoseconds()), "p50-ns")
		})
	}
}

func TestThreadsFollowsSetThreads(t *testing.T) {
	defer SetThreads(0)
	for _, c := range []struct{ set, want int }{
		{3, 3}, {1, 1}, {0, runtime.GOMAXPROCS(0)}, {-2, runtime.GOMAXPROCS(0)},
	} {
		SetThreads(c.set)
		assert.Equal(t, c.want, Threads(), "SetThreads(%d)", c.set)
	}
}
