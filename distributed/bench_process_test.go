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
	cmds := startRanks(b, 4, "bench")
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
