package distributed

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emberml/ember/tensor"
)

// BenchmarkAllReduceProcesses is BenchmarkAllReduceVsStream with every rank
// a process of its own, as the target states it: 4 processes
// all-reduce 64 MB of float32 each, and rank 1 streams 64 MB to rank 0
// over a plain loopback TCP connection, alternating in every iteration so
// that all see the same machine load. Each iteration times, at rank 0,
// from a barrier to the end of: memmoving every rank's tensor once at the
// same time (the bound), the stream, an AllReduce of ordinary tensors
// (read and written in place with cross-memory attach: busMB/s,
// bus/stream), one of SharedZeros tensors (shared-) and one of ordinary
// tensors staged through the slots, as with DisableCrossMemory (staged-). The metrics
// are those of BenchmarkAllReduceVsStream: bus bandwidth (NCCL's, 2(n-1)/n
// of the tensor per rank) over the stream's bandwidth.
func BenchmarkAllReduceProcesses(b *testing.B) {
	runBenchRanks(b, 4, "bench")
}

// BenchmarkSmallAllReduceProcesses measures the latency of all-reduces of
// small float32 tensors (16 to 262,144 elements) between 2 and 4 processes,
// by route: over loopback TCP (the route of ranks without shared memory),
// staged through the shared-memory slots, in place with cross-memory
// attach, and of SharedZeros tensors; µs per all-reduce, at rank 0, for
// each route and size (tcp-16-µs, staged-16-µs, ...).
func BenchmarkSmallAllReduceProcesses(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) { runBenchRanks(b, ranks, "latency") })
	}
}

// runBenchRanks runs b.N iterations of a benchmark mode of TestHelperRank
// in ranks processes and reports the metrics rank 0 prints.
func runBenchRanks(b *testing.B, ranks int, mode string) {
	cmds := startRanks(b, ranks, mode)
	for _, c := range cmds {
		c.Env = append(c.Env, "EMBER_DIST_BENCH_ITERS="+strconv.Itoa(b.N))
	}
	pipe, err := cmds[0].StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
	}
	var result string
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if r, ok := strings.CutPrefix(sc.Text(), "bench:"); ok {
			result = r
		}
	}
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			b.Fatalf("rank %d: %v\n%s", r, err, out.String())
		}
	}
	if result == "" {
		b.Fatalf("rank 0 printed no result:\n%s", out.String())
	}
	for _, f := range strings.Fields(result) {
		name, v, _ := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("bad result %q", result)
		}
		b.ReportMetric(x, name)
	}
}

// benchRank is one rank of BenchmarkAllReduceProcesses: iters iterations;
// rank 0 prints the metrics.
func benchRank(g *TCPGroup, iters int) error {
	const n = 16 << 20
	r := g.Rank()
	if g.shm == nil || !g.shm.cma {
		return fmt.Errorf("rank %d has no shared memory or no cross-memory attach", r)
	}
	cma := g.shm.cma
	plain := tensor.Ones([]int{n})
	shared, err := g.SharedZeros([]int{n}, tensor.Float32)
	if err != nil {
		return err
	}
	shared.Fill(1)
	stream, err := streamPair(g)
	if err != nil {
		return err
	}
	if stream != nil {
		defer stream.Close()
	}
	buf := make([]byte, 1<<20)
	// timed runs f between two barriers and adds rank 0's wall time.
	timed := func(sec *float64, f func() error) error {
		if err := g.Barrier(); err != nil {
			return err
		}
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		if err := g.Barrier(); err != nil {
			return err
		}
		*sec += time.Since(t0).Seconds()
		return nil
	}
	var moveSec, streamSec, plainSec, sharedSec, stagedSec float64
	for range iters {
		err := timed(&moveSec, func() error {
			d := hostVec(plain).data.([]float32)
			copy(d[n/2:], d[:n/2])
			copy(d[:n/2], d[n/2:])
			return nil
		})
		if err == nil {
			err = timed(&streamSec, func() error {
				switch r {
				case 0:
					for got := 0; got < 4*n; {
						k, err := stream.Read(buf)
						if err != nil {
							return err
						}
						got += k
					}
				case 1:
					for range 4 * n / len(buf) {
						if _, err := stream.Write(buf); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		if err == nil {
			err = timed(&plainSec, func() error { return g.AllReduce(plain, Sum) })
		}
		if err == nil {
			err = timed(&sharedSec, func() error { return g.AllReduce(shared, Sum) })
		}
		if err == nil {
			// Every rank stages the same iterations, as DisableCrossMemory
			// on every rank would.
			g.shm.cma = false
			err = timed(&stagedSec, func() error { return g.AllReduce(plain, Sum) })
			g.shm.cma = cma
		}
		if err != nil {
			return err
		}
	}
	if r == 0 {
		perIter := float64(4*n) * float64(iters)
		bus := perIter * 2 * float64(g.Size()-1) / float64(g.Size())
		streamMB := perIter / streamSec / 1e6
		fmt.Printf("bench: streamMB/s=%.0f bound/stream=%.3f busMB/s=%.0f bus/stream=%.3f shared-busMB/s=%.0f shared-bus/stream=%.3f staged-busMB/s=%.0f staged-bus/stream=%.3f\n",
			streamMB, bus/moveSec/1e6/streamMB, bus/plainSec/1e6, bus/plainSec/1e6/streamMB, bus/sharedSec/1e6, bus/sharedSec/1e6/streamMB, bus/stagedSec/1e6, bus/stagedSec/1e6/streamMB)
	}
	return nil
}

// latencyRank is one rank of BenchmarkSmallAllReduceProcesses: each
// iteration all-reduces every size by every route, 100 times in a row
// between two barriers; rank 0 prints the mean µs per all-reduce.
func latencyRank(g *TCPGroup, iters int) error {
	const reps = 100
	sizes := []int{16, 1 << 10, 1 << 14, 1 << 16, 1 << 18}
	if g.shm == nil || !g.shm.cma {
		return fmt.Errorf("rank %d has no shared memory or no cross-memory attach", g.Rank())
	}
	shm := g.shm
	// route sets up one route on every rank alike (between collectives,
	// so the worker goroutine sees the change) and returns its tensor.
	routes := []struct {
		name string
		set  func(n int) (*tensor.Tensor, error)
	}{
		{"tcp", func(n int) (*tensor.Tensor, error) { g.shm = nil; return tensor.Ones([]int{n}), nil }},
		{"staged", func(n int) (*tensor.Tensor, error) { shm.cma = false; return tensor.Ones([]int{n}), nil }},
		{"cma", func(n int) (*tensor.Tensor, error) { shm.cmaFrom = 0; return tensor.Ones([]int{n}), nil }},
		{"shared", func(n int) (*tensor.Tensor, error) { return g.SharedZeros([]int{n}, tensor.Float32) }},
		{"default", func(n int) (*tensor.Tensor, error) { return tensor.Ones([]int{n}), nil }},
	}
	sec := make([][]float64, len(routes))
	for i := range sec {
		sec[i] = make([]float64, len(sizes))
	}
	for range iters {
		for i, rt := range routes {
			for k, n := range sizes {
				x, err := rt.set(n)
				if err == nil {
					err = g.Barrier()
				}
				t0 := time.Now()
				for j := 0; j < reps && err == nil; j++ {
					err = g.AllReduce(x, Sum)
				}
				g.shm, shm.cma, shm.cmaFrom = shm, true, cmaMinBytes
				if err == nil {
					err = g.Barrier()
				}
				if err != nil {
					return err
				}
				sec[i][k] += time.Since(t0).Seconds()
			}
		}
	}
	if g.Rank() == 0 {
		var out strings.Builder
		for i, rt := range routes {
			for k, n := range sizes {
				fmt.Fprintf(&out, " %s-%d-µs=%.1f", rt.name, n, sec[i][k]/float64(iters*reps)*1e6)
			}
		}
		fmt.Println("bench:" + out.String())
	}
	return nil
}

// streamPair connects rank 1 to rank 0 over loopback TCP, outside the
// group: rank 0 listens and broadcasts its port. Other ranks get nil.
func streamPair(g *TCPGroup) (net.Conn, error) {
	var ln net.Listener
	port := tensor.Zeros([]int{1}, tensor.Int64)
	if g.Rank() == 0 {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		defer ln.Close()
		port.Fill(float64(ln.Addr().(*net.TCPAddr).Port))
	}
	if err := g.Broadcast(port, 0); err != nil {
		return nil, err
	}
	switch g.Rank() {
	case 0:
		return ln.Accept()
	case 1:
		return net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port.Int64s()[0]))))
	}
	return nil, nil
}
