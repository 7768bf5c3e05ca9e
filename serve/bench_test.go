package serve

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// Benchmarks and the soak test take their model from
// EMBER_SERVE_BENCH_MODEL (an ONNX file whose inputs declare their shapes;
// symbolic dimensions are fed as 1), by default the test CNN. For
// ResNet-18: go run ./cmd/ember onnx export -model resnet18 -input-shape
// 1,3,224,224 -o /tmp/resnet18.onnx.

var soakRequests = flag.Int("serve.soak", 0, "run TestSoak with this many requests (e.g. 10000) from 16 goroutines and report resident memory")

// benchModel loads the benchmark model and makes a batch-1 input for it.
func benchModel(tb testing.TB) (*onnx.Model, map[string]*tensor.Tensor) {
	tb.Helper()
	path := os.Getenv("EMBER_SERVE_BENCH_MODEL")
	if path == "" {
		path = cnnModel
	}
	m := loadModel(tb, path)
	sess, err := m.NewSession(onnx.SessionOptions{})
	require.NoError(tb, err)
	inputs, err := synthInputs(sess, 0)
	require.NoError(tb, err)
	return m, inputs
}

// residentBytes reads the process's resident set size (Linux), or 0.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// hammer sends n requests from clients goroutines through run and returns
// the sorted latencies and the wall time.
func hammer(tb testing.TB, clients, n int, run func() error) ([]time.Duration, time.Duration) {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t0 := time.Now()
				if err := run(); err != nil {
					failed.Add(1)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	require.Zero(tb, failed.Load(), "failed requests")
	slices.Sort(lat)
	return lat, wall
}

// reportLatency adds req/s, p50 and p99 (ms) to b.
func reportLatency(b *testing.B, lat []time.Duration, wall time.Duration) {
	b.ReportMetric(float64(len(lat))/wall.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50_ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)])/1e6, "p99_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkConcurrent16 compares 16 goroutines calling Server.Predict
// (batches of up to 8, one runner with every thread) with 16 goroutines
// calling Run on one shared session at once (the naive server of issue
// 25), b.N requests each way.
func BenchmarkConcurrent16(b *testing.B) {
	m, inputs := benchModel(b)
	const clients = 16
	b.Run("naive", func(b *testing.B) {
		sess, err := m.NewSession(onnx.SessionOptions{})
		require.NoError(b, err)
		_, _ = sess.Run(context.Background(), inputs)
		b.ResetTimer()
		lat, wall := hammer(b, clients, max(b.N, clients), func() error {
			_, err := sess.Run(context.Background(), inputs)
			return err
		})
		reportLatency(b, lat, wall)
	})
	for _, runs := range []int{1, 2} {
		b.Run("serve/runs="+strconv.Itoa(runs), func(b *testing.B) {
			s := New(Options{})
			defer s.Close(context.Background())
			require.NoError(b, s.Load(context.Background(), "m", m, ModelOptions{MaxBatch: 8, Runs: runs}))
			b.ResetTimer()
			lat, wall := hammer(b, clients, max(b.N, clients), func() error {
				_, err := s.Predict(context.Background(), "m", inputs)
				return err
			})
			reportLatency(b, lat, wall)
		})
	}
}

// BenchmarkUnloadMemory loads the model, serves a few requests, unloads it
// and reports how much memory the load took (Go heap in use and resident
// size, after a collection that returns free pages to the system) and how
// much of it the unload gave back.
func BenchmarkUnloadMemory(b *testing.B) {
	path := os.Getenv("EMBER_SERVE_BENCH_MODEL")
	if path == "" {
		path = cnnModel
	}
	heap := func() uint64 {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	for range b.N {
		s := New(Options{})
		before := heap()
		rssBefore := residentBytes()
		require.NoError(b, s.LoadFile(context.Background(), "m", path, ModelOptions{}))
		info, err := s.Model("m")
		require.NoError(b, err)
		sess, err := loadModel(b, path).NewSession(onnx.SessionOptions{})
		require.NoError(b, err)
		inputs, err := synthInputs(sess, 0)
		require.NoError(b, err)
		sess = nil
		for range 4 {
			_, err := s.Predict(context.Background(), info.Name, inputs)
			require.NoError(b, err)
		}
		loaded := heap()
		rssLoaded := residentBytes()
		require.NoError(b, s.Unload("m"))
		after := heap()
		rssAfter := residentBytes()
		require.NoError(b, s.Close(context.Background()))
		b.ReportMetric(float64(loaded-before)/(1<<20), "heap_load_MiB")
		b.ReportMetric(100*float64(int64(loaded)-int64(after))/float64(loaded-before), "heap_returned_%")
		b.ReportMetric(float64(rssLoaded-rssBefore)/(1<<20), "rss_load_MiB")
		b.ReportMetric(100*float64(rssLoaded-rssAfter)/float64(rssLoaded-rssBefore), "rss_returned_%")
	}
}

// TestSoak (with -serve.soak=N) sends N requests from 16 goroutines after
// a warm-up of max(500, N/5), so the heap has reached its working size,
// and checks that resident memory grows by less than 5%.
func TestSoak(t *testing.T) {
	if *soakRequests <= 0 {
		t.Skip("run with -serve.soak 10000")
	}
	m, inputs := benchModel(t)
	s := newServer(t, Options{})
	require.NoError(t, s.Load(context.Background(), "m", m, ModelOptions{MaxBatch: 8}))
	predict := func() error {
		_, err := s.Predict(context.Background(), "m", inputs)
		return err
	}
	hammer(t, 16, max(500, *soakRequests/5), predict)
	start := residentBytes()
	lat, wall := hammer(t, 16, *soakRequests, predict)
	end := residentBytes()
	growth := 100 * float64(end-start) / float64(start)
	t.Logf("%d requests in %v (%.1f req/s), p50 %v p99 %v; RSS %.1f MiB after warm-up, %.1f MiB at the end (%+.1f%%)",
		len(lat), wall.Round(time.Millisecond), float64(len(lat))/wall.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100],
		float64(start)/(1<<20), float64(end)/(1<<20), growth)
	assert.Less(t, growth, 5.0, "resident memory growth over the soak")
}

// BenchmarkRowCost reports the time per row of the benchmark model run at
// batch 1 and at batch 8 on one session (the gain batching can bring on
// this machine, before any serving overhead).
func BenchmarkRowCost(b *testing.B) {
	m, inputs := benchModel(b)
	sess, err := m.NewSession(onnx.SessionOptions{})
	require.NoError(b, err)
	for _, rows := range []int{1, 8} {
		b.Run("batch="+strconv.Itoa(rows), func(b *testing.B) {
			joined := map[string]*tensor.Tensor{}
			for name, t := range inputs {
				parts := make([]*tensor.Tensor, rows)
				for i := range parts {
					parts[i] = t
				}
				joined[name] = tensor.Concat(parts, 0)
			}
			_, err := sess.Run(context.Background(), joined)
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				if _, err := sess.Run(context.Background(), joined); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*rows), "ms/row")
		})
	}
}
