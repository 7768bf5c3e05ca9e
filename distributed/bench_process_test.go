package distributed

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emberml/ember/internal/netlab"
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

// BenchmarkAllReduceOverLinks runs 4 ranks on 4 hosts of a netlab.Lab whose
// links are shaped to 1 Gbit/s (EMBER_DIST_LINK_RATE sets another tc
// rate), as machines on a switch: each iteration times rank 1 streaming
// 64 MB to rank 0 over plain TCP (streamMB/s: the link as a program sees
// it), an all-reduce of 64 MB of float32, which takes the ring (busMB/s,
// bus/stream: the ring at link speed reads 1), a broadcast of it from rank
// 0 along the chain (bcastMB/s, bcast/stream: the tensor's bytes over the
// time; at link speed 1, where rank 0 sending to each rank in turn would
// read 1/3), a reduce-scatter and an all-gather of it round the ring
// (rs-bus/stream, ag-bus/stream: (n-1)/n of the tensor per rank over the
// time) and exchanged directly (rs-direct-bus/stream,
// ag-direct-bus/stream), and 10 all-reduces of each small size (256,
// 8,192 and 65,536 floats) by each route over TCP (direct-256-µs,
// tree-256-µs, ring-256-µs, ...: µs per all-reduce). It needs root, ip
// and tc, and is skipped otherwise.
func BenchmarkAllReduceOverLinks(b *testing.B) {
	rate := cmp.Or(os.Getenv("EMBER_DIST_LINK_RATE"), "1gbit")
	const ranks = 4
	lab := netlab.New(b, ranks, rate)
	cmds := rankCommands(b, ranks, "links", lab.Addrs[0], "29517", lab.On)
	runBenchCommands(b, cmds)
}

// BenchmarkHierarchicalAllReduceOverLinks runs 4 ranks on 2 hosts of a
// netlab.Lab, 2 on each (links shaped to 1 Gbit/s, or
// EMBER_DIST_LINK_RATE), as two machines of two processes: each iteration
// times rank 2 streaming 64 MB to rank 0 over plain TCP (streamMB/s), an
// all-reduce of 64 MB of float32 in two levels (shared memory within a
// host, TCP between them: hier-busMB/s, hier-bus/stream), and the same
// all-reduce as a flat ring over all four ranks (flat-busMB/s,
// flat-bus/stream), the bus bandwidth of 4 ranks as NCCL defines it
// either way, the flat ring's time over the two-level one (flat/hier),
// and the two-level all-reduce's time in one window over its time in
// windows (one-window/hier); then the same for ZeroOptimizer's
// reduce-scatter and all-gather of 64 MB (zero-rs-..., zero-ag-...). It
// needs root, ip and tc, and is skipped otherwise.
func BenchmarkHierarchicalAllReduceOverLinks(b *testing.B) {
	rate := cmp.Or(os.Getenv("EMBER_DIST_LINK_RATE"), "1gbit")
	lab := netlab.New(b, 2, rate)
	cmds := rankCommands(b, 4, "machines", lab.Addrs[0], "29518", func(r int) []string { return lab.On(r / 2) })
	runBenchCommands(b, cmds)
}

// machinesRank is a rank of BenchmarkHierarchicalAllReduceOverLinks.
func machinesRank(g *TCPGroup, iters int, host string) error {
	const n = 16 << 20
	if g.hier == nil {
		return fmt.Errorf("rank %d: no two-level all-reduce: the hosts are not two of two ranks each", g.Rank())
	}
	stream, err := streamPair(g, host, 2)
	if err != nil {
		return err
	}
	if stream != nil {
		defer stream.Close()
	}
	x := tensor.Ones([]int{n})
	// ZeroOptimizer's exchanges of the same 64 MB: a reduce-scatter of
	// its blocks from x into out, an all-gather of them back into x.
	w := g.Size()
	block := func(j int) parts { return parts{hostVec(x.Narrow(0, j*n/w, n/w))} }
	out := newVec(tensor.Float32, n/w)
	var spare []vec
	for range w - 2 {
		spare = append(spare, newVec(tensor.Float32, n/w))
	}
	ops := []func() error{
		func() error { return g.AllReduce(x, Sum) },
		func() error {
			return wait(g.reduceScatterPartsAsync(tensor.Float32, block, block(g.Rank()), spare, out, Sum))
		},
		func() error { return wait(g.allGatherPartsAsync(tensor.Float32, block(g.Rank()), block)) },
	}
	var streamSec, oneSec float64
	var hierSec, flatSec [3]float64
	for range iters {
		if err := timedRun(g, &streamSec, func() error { return streamBytes(g, stream, 4*n, 2) }); err != nil {
			return err
		}
		// The all-reduce in one window, for the overlap's worth.
		h := g.hier
		h.window = math.MaxInt / 2
		err := timedRun(g, &oneSec, ops[0])
		h.window = hierWindowBytes
		if err != nil {
			return err
		}
		for i, op := range ops {
			if err := timedRun(g, &hierSec[i], op); err != nil {
				return err
			}
			h := g.hier
			g.hier = nil
			err := timedRun(g, &flatSec[i], op)
			g.hier = h
			if err != nil {
				return err
			}
		}
	}
	if g.Rank() == 0 {
		mb := float64(4*n) * float64(iters) / 1e6
		share := mb * float64(w-1) / float64(w) // bus bytes of a reduce-scatter or an all-gather
		streamMB := mb / streamSec
		fmt.Printf("bench: streamMB/s=%.0f one-window/hier=%.3f", streamMB, oneSec/hierSec[0])
		for i, name := range []string{"", "zero-rs-", "zero-ag-"} {
			bus := share
			if i == 0 {
				bus = 2 * share
			}
			hierMB, flatMB := bus/hierSec[i], bus/flatSec[i]
			fmt.Printf(" %shier-busMB/s=%.0f %shier-bus/stream=%.3f %sflat-busMB/s=%.0f %sflat-bus/stream=%.3f %sflat/hier=%.3f",
				name, hierMB, name, hierMB/streamMB, name, flatMB, name, flatMB/streamMB, name, flatSec[i]/hierSec[i])
		}
		fmt.Println()
	}
	return nil
}

// runBenchRanks runs b.N iterations of a benchmark mode of TestHelperRank
// in ranks processes and reports the metrics rank 0 prints.
func runBenchRanks(b *testing.B, ranks int, mode string) {
	runBenchCommands(b, startRanks(b, ranks, mode))
}

// runBenchCommands is runBenchRanks for ranks prepared by rankCommands.
func runBenchCommands(b *testing.B, cmds []*exec.Cmd) {
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
	stream, err := streamPair(g, "127.0.0.1", 1)
	if err != nil {
		return err
	}
	if stream != nil {
		defer stream.Close()
	}
	timed := func(sec *float64, f func() error) error { return timedRun(g, sec, f) }
	// Two all-reduces untimed first: the in-place all-reduce moves a
	// tensor it sees again onto huge pages (cma.go), once, as in a
	// training loop's first steps.
	for range 2 {
		if err := g.AllReduce(plain, Sum); err != nil {
			return err
		}
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
			err = timed(&streamSec, func() error { return streamBytes(g, stream, 4*n, 1) })
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

// linksRank is one rank of BenchmarkAllReduceOverLinks; host is rank 0's
// address. Rank 0 prints the metrics.
func linksRank(g *TCPGroup, iters int, host string) error {
	const n, reps = 16 << 20, 10
	smalls := []int{256, 8 << 10, 64 << 10}
	routes := []string{"direct", "tree", "ring"}
	if g.shm != nil {
		return fmt.Errorf("rank %d shares memory with another: the hosts are not separate", g.Rank())
	}
	big := tensor.Ones([]int{n})
	stream, err := streamPair(g, host, 1)
	if err != nil {
		return err
	}
	if stream != nil {
		defer stream.Close()
	}
	// ReduceScatter and AllGather of the same 64 MB, in N pieces.
	pieces := make([]*tensor.Tensor, g.Size())
	for j := range pieces {
		pieces[j] = tensor.Ones([]int{n / g.Size()})
	}
	piece := tensor.Ones([]int{n / g.Size()})
	var streamSec, ringSec, bcastSec float64
	// rsSec and agSec: round the ring, then exchanged directly.
	var rsSec, agSec [2]float64
	small := make([][]float64, len(routes))
	for i := range small {
		small[i] = make([]float64, len(smalls))
	}
	for range iters {
		if err := timedRun(g, &streamSec, func() error { return streamBytes(g, stream, 4*n, 1) }); err != nil {
			return err
		}
		if err := timedRun(g, &ringSec, func() error { return g.AllReduce(big, Sum) }); err != nil {
			return err
		}
		if err := timedRun(g, &bcastSec, func() error { return g.Broadcast(big, 0) }); err != nil {
			return err
		}
		for i, direct := range []int{g.direct, math.MaxInt} {
			restore := g.direct
			g.direct = direct
			err := timedRun(g, &rsSec[i], func() error { return g.ReduceScatter(piece, pieces, Sum) })
			if err == nil {
				err = timedRun(g, &agSec[i], func() error { return g.AllGather(pieces, piece) })
			}
			g.direct = restore
			if err != nil {
				return err
			}
		}
		for i, route := range routes {
			for k, m := range smalls {
				x := tensor.Ones([]int{m})
				restore := setRoute(g, route)
				err := timedRun(g, &small[i][k], func() error {
					for range reps {
						if err := g.AllReduce(x, Sum); err != nil {
							return err
						}
					}
					return nil
				})
				restore()
				if err != nil {
					return err
				}
			}
		}
	}
	if g.Rank() == 0 {
		// MB moved in all iterations, and the share of it each rank
		// sends in a reduce-scatter or an all-gather (bus bandwidth as
		// NCCL defines it; an all-reduce is both).
		mb := float64(4*n) * float64(iters) / 1e6
		share := mb * float64(g.Size()-1) / float64(g.Size())
		streamMB, busMB, bcastMB := mb/streamSec, 2*share/ringSec, mb/bcastSec
		var out strings.Builder
		fmt.Fprintf(&out, " streamMB/s=%.0f busMB/s=%.0f bus/stream=%.3f bcastMB/s=%.0f bcast/stream=%.3f",
			streamMB, busMB, busMB/streamMB, bcastMB, bcastMB/streamMB)
		fmt.Fprintf(&out, " rs-bus/stream=%.3f ag-bus/stream=%.3f rs-direct-bus/stream=%.3f ag-direct-bus/stream=%.3f",
			share/rsSec[0]/streamMB, share/agSec[0]/streamMB, share/rsSec[1]/streamMB, share/agSec[1]/streamMB)
		for i, route := range routes {
			for k, m := range smalls {
				fmt.Fprintf(&out, " %s-%d-µs=%.0f", route, m, small[i][k]/float64(iters*reps)*1e6)
			}
		}
		fmt.Println("bench:" + out.String())
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

// timedRun runs f between two barriers of g and adds the wall time to
// *sec.
func timedRun(g *TCPGroup, sec *float64, f func() error) error {
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

// streamBytes sends total bytes (a multiple of 1 MiB) from rank from to
// rank 0 over stream, in 1 MiB writes; other ranks do nothing.
func streamBytes(g *TCPGroup, stream net.Conn, total, from int) error {
	buf := make([]byte, 1<<20)
	switch g.Rank() {
	case 0:
		for got := 0; got < total; {
			k, err := stream.Read(buf)
			if err != nil {
				return err
			}
			got += k
		}
	case from:
		for range total / len(buf) {
			if _, err := stream.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamPair connects rank from to rank 0 at rank 0's address host over
// TCP, outside the group: rank 0 listens and broadcasts its port. Other
// ranks get nil.
func streamPair(g *TCPGroup, host string, from int) (net.Conn, error) {
	var ln net.Listener
	port := tensor.Zeros([]int{1}, tensor.Int64)
	if g.Rank() == 0 {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
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
	case from:
		return net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port.Int64s()[0]))))
	}
	return nil, nil
}
