package distributed

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emberml/ember/tensor"
)

// BenchmarkAllReduce measures all-reduce of float32 tensors across local
// ranks in one process, through shared memory and over loopback TCP only;
// b.SetBytes counts the tensor size.
func BenchmarkAllReduce(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		for _, n := range []int{1 << 10, 1 << 14, 1 << 20, 16 << 20} {
			for _, tcp := range []bool{false, true} {
				b.Run(fmt.Sprintf("ranks=%d/floats=%d/tcp=%v", ranks, n, tcp), func(b *testing.B) {
					benchAllReduce(b, ranks, n, Config{DisableSharedMemory: tcp})
				})
			}
		}
	}
}

// BenchmarkSmallAllReduceOverTCP compares the TCP routes of all-reduces
// up to directLimit (256 KiB) between goroutine ranks without shared
// memory: the direct exchange, the binomial tree and the ring, whichever
// the group would pick (route=auto) among them.
func BenchmarkSmallAllReduceOverTCP(b *testing.B) {
	for _, ranks := range []int{4, 8, 16} {
		for _, n := range []int{256, 8 << 10, 64 << 10} {
			for _, route := range []string{"direct", "tree", "ring", "auto"} {
				b.Run(fmt.Sprintf("ranks=%d/floats=%d/route=%s", ranks, n, route), func(b *testing.B) {
					benchAllReduceSetup(b, ranks, n, Config{DisableSharedMemory: true}, func(g *TCPGroup) { setRoute(g, route) })
				})
			}
		}
	}
}

// BenchmarkReduceOverTCP times Reduce to rank 0 between goroutine ranks
// without shared memory (up the binomial tree): µs per reduce.
func BenchmarkReduceOverTCP(b *testing.B) {
	for _, ranks := range []int{4, 8, 16} {
		for _, n := range []int{256, 64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/floats=%d", ranks, n), func(b *testing.B) {
				gs, xs := benchGroups(b, ranks, n, Config{DisableSharedMemory: true})
				b.ResetTimer()
				onEveryRankN(b, gs, func(g *TCPGroup) error { return g.Reduce(xs[g.Rank()], 0, Sum) })
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e6, "µs")
			})
		}
	}
}

// BenchmarkReduceScatterOverTCP times ReduceScatter and AllGather of n
// floats in all (n/ranks a rank) between goroutine ranks without shared
// memory, round the ring or exchanged directly: µs per collective.
func BenchmarkReduceScatterOverTCP(b *testing.B) {
	for _, ranks := range []int{4, 8} {
		for _, n := range []int{64 << 10, 1 << 20, 16 << 20} {
			for _, route := range []string{"ring", "direct"} {
				for _, op := range []string{"reduce-scatter", "all-gather"} {
					b.Run(fmt.Sprintf("ranks=%d/floats=%d/%s/route=%s", ranks, n, op, route), func(b *testing.B) {
						gs, _ := benchGroups(b, ranks, 0, Config{DisableSharedMemory: true})
						ins, outs := make([][]*tensor.Tensor, ranks), make([]*tensor.Tensor, ranks)
						for r, g := range gs {
							g.direct = map[string]int{"ring": 0, "direct": math.MaxInt}[route]
							ins[r], outs[r] = make([]*tensor.Tensor, ranks), tensor.Ones([]int{n / ranks})
							for j := range ins[r] {
								ins[r][j] = tensor.Ones([]int{n / ranks})
							}
						}
						b.SetBytes(int64(4 * n))
						b.ResetTimer()
						onEveryRankN(b, gs, func(g *TCPGroup) error {
							if op == "all-gather" {
								return g.AllGather(ins[g.Rank()], outs[g.Rank()])
							}
							return g.ReduceScatter(outs[g.Rank()], ins[g.Rank()], Sum)
						})
						b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e6, "µs")
					})
				}
			}
		}
	}
}

// BenchmarkSubgroupAllReduce times all-reduces in a subgroup of 2 of 4
// goroutine ranks, through the subgroup's own shared memory (as
// NewSubgroup sets it up) and over loopback TCP (as subgroups were).
func BenchmarkSubgroupAllReduce(b *testing.B) {
	for _, n := range []int{16 << 10, 1 << 20, 16 << 20} {
		for _, shared := range []bool{true, false} {
			b.Run(fmt.Sprintf("floats=%d/shared=%v", n, shared), func(b *testing.B) {
				gs, xs := benchGroups(b, 4, n, Config{})
				create := (*TCPGroup).NewSubgroup
				if !shared {
					create = (*TCPGroup).newSubgroup
				}
				subs := subgroupsBy(b, gs, []int{1, 3}, create)
				members := []*TCPGroup{subs[1], subs[3]}
				b.SetBytes(int64(4 * n))
				b.ResetTimer()
				onEveryRankN(b, members, func(g *TCPGroup) error { return g.AllReduce(xs[g.Rank()], Sum) })
			})
		}
	}
}

// setRoute makes g's all-reduces over TCP take route: "direct", "tree" or
// "ring" up to directLimit, or the group's own choice ("auto"); it returns
// a function that restores the group's choice. Call it between
// collectives.
func setRoute(g *TCPGroup, route string) (restore func()) {
	direct, tree := g.direct, g.treeMin
	switch route {
	case "direct":
		g.treeMin = math.MaxInt
	case "tree":
		g.treeMin = 0
	case "ring":
		g.direct = 0
	}
	return func() { g.direct, g.treeMin = direct, tree }
}

// benchAllReduce is one case of BenchmarkAllReduce.
func benchAllReduce(b *testing.B, ranks, n int, cfg Config) {
	benchAllReduceSetup(b, ranks, n, cfg, func(*TCPGroup) {})
}

// benchAllReduceSetup times all-reduces of n floats across ranks local
// groups of cfg, each set up by setup first.
func benchAllReduceSetup(b *testing.B, ranks, n int, cfg Config, setup func(g *TCPGroup)) {
	gs, xs := benchGroups(b, ranks, n, cfg)
	for _, g := range gs {
		setup(g)
	}
	b.SetBytes(int64(4 * n))
	b.ResetTimer()
	onEveryRankN(b, gs, func(g *TCPGroup) error { return g.AllReduce(xs[g.Rank()], Sum) })
	// Bus bandwidth as NCCL defines it: each rank moves
	// 2(n-1)/n of the tensor.
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(4*n)*2*float64(ranks-1)/float64(ranks)/sec/1e6, "busMB/s")
}

// onEveryRankN runs op b.N times on every rank of gs at once, stopping a
// rank at its first error.
func onEveryRankN(b *testing.B, gs []*TCPGroup, op func(g *TCPGroup) error) {
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Go(func() {
			for range b.N {
				if err := op(g); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// benchGroups starts ranks local groups, closed when b ends, and gives
// each a tensor of n float32 ones.
func benchGroups(b *testing.B, ranks, n int, cfg Config) ([]*TCPGroup, []*tensor.Tensor) {
	gs, err := newLocalGroups(context.Background(), ranks, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, g := range gs {
			g.Close()
		}
	})
	xs := make([]*tensor.Tensor, ranks)
	for i := range xs {
		xs[i] = tensor.Ones([]int{n})
	}
	return gs, xs
}

// BenchmarkTCPStream is the baseline for the all-reduce's bus bandwidth: a
// plain loopback TCP stream between two goroutines, 1 MiB writes.
func BenchmarkTCPStream(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = drain(c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAllReduceVsStream measures, in one run, the bus bandwidth of a
// 4-rank all-reduce of 64 MB of float32 against a plain loopback TCP stream
// of the same 64 MB between two goroutines, alternating them in every
// iteration so that all see the same machine load. The ranks run four
// times: on ordinary tensors with the shared-memory transport local ranks
// get by default, which reads the peers' tensors in place (busMB/s,
// bus/stream: the target is at least 0.7), the same staged through the
// slots as with DisableCrossMemory (staged-busMB/s, staged-bus/stream), on
// SharedZeros tensors (shared-busMB/s, shared-bus/stream), and with shared
// memory disabled, over loopback TCP only (tcp-busMB/s, tcp-bus/stream). bound/stream is the bus
// bandwidth of an all-reduce that took only the time memory needs to read
// and write every rank's tensor once (memmoving the four tensors on two
// goroutines, also alternated): no all-reduce of tensors that do not fit
// in the caches can beat it. cpu-efficiency is the
// process CPU time per byte of the stream divided by the same per bus
// byte of the all-reduce (ranks*2(ranks-1)/ranks times the tensor); unlike
// the wall-clock ratio it does not depend on how many cores are free.
func BenchmarkAllReduceVsStream(b *testing.B) {
	const ranks, n = 4, 16 << 20
	shm, xs := benchGroups(b, ranks, n, Config{})
	// The TCP ranks all-reduce the same tensors; their own stay unused.
	tcp, _ := benchGroups(b, ranks, 1, Config{DisableSharedMemory: true})
	if shm[0].shm == nil || !shm[0].shm.cma {
		b.Fatal("the local ranks did not get shared memory and in-place all-reduces")
	}
	shared := sharedTensors(b, shm, n)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				drain(c)
				c.Close()
			}()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	// timed runs f and adds its wall and CPU seconds.
	timed := func(sec, cpu *float64, f func()) {
		cpu0, t0 := cpuSeconds(), time.Now()
		f()
		*sec += time.Since(t0).Seconds()
		*cpu += cpuSeconds() - cpu0
	}
	allReduce := func(gs []*TCPGroup, xs []*tensor.Tensor) func() {
		return func() {
			var wg sync.WaitGroup
			for _, g := range gs {
				wg.Go(func() {
					if err := g.AllReduce(xs[g.Rank()], Sum); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
	}
	// The bound: an in-place all-reduce must at least read and write
	// every rank's tensor once, the DRAM traffic of memmoving the four
	// tensors, here on two goroutines (one per core) from the first half
	// of each tensor to the second and back.
	memmove := func() {
		var wg sync.WaitGroup
		for p := range 2 {
			wg.Go(func() {
				for _, x := range xs[2*p : 2*p+2] {
					d := hostVec(x).data.([]float32)
					copy(d[n/2:], d[:n/2])
					copy(d[:n/2], d[n/2:])
				}
			})
		}
		wg.Wait()
	}
	var streamSec, shmSec, sharedSec, stagedSec, tcpSec, moveSec, streamCPU, shmCPU, sharedCPU, stagedCPU, tcpCPU, moveCPU float64
	b.ResetTimer()
	for range b.N {
		timed(&moveSec, &moveCPU, memmove)
		timed(&streamSec, &streamCPU, func() {
			for range 4 * n / len(buf) {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		timed(&shmSec, &shmCPU, allReduce(shm, xs))
		timed(&sharedSec, &sharedCPU, allReduce(shm, shared))
		setCMA(shm, false)
		timed(&stagedSec, &stagedCPU, allReduce(shm, xs))
		setCMA(shm, true)
		timed(&tcpSec, &tcpCPU, allReduce(tcp, xs))
	}
	perIter := float64(4*n) * float64(b.N)
	busBytes := perIter * 2 * float64(ranks-1) / float64(ranks)
	stream := perIter / streamSec / 1e6
	b.ReportMetric(stream, "streamMB/s")
	b.ReportMetric(busBytes/moveSec/1e6/stream, "bound/stream")
	b.ReportMetric(busBytes/shmSec/1e6, "busMB/s")
	b.ReportMetric(busBytes/shmSec/1e6/stream, "bus/stream")
	b.ReportMetric(busBytes/stagedSec/1e6, "staged-busMB/s")
	b.ReportMetric(busBytes/stagedSec/1e6/stream, "staged-bus/stream")
	b.ReportMetric(busBytes/sharedSec/1e6, "shared-busMB/s")
	b.ReportMetric(busBytes/sharedSec/1e6/stream, "shared-bus/stream")
	b.ReportMetric(busBytes/tcpSec/1e6, "tcp-busMB/s")
	b.ReportMetric(busBytes/tcpSec/1e6/stream, "tcp-bus/stream")
	b.ReportMetric((streamCPU/perIter)/(shmCPU/(busBytes*ranks)), "cpu-efficiency")
	b.ReportMetric((streamCPU/perIter)/(stagedCPU/(busBytes*ranks)), "staged-cpu-efficiency")
	b.ReportMetric((streamCPU/perIter)/(sharedCPU/(busBytes*ranks)), "shared-cpu-efficiency")
	b.ReportMetric((streamCPU/perIter)/(tcpCPU/(busBytes*ranks)), "tcp-cpu-efficiency")
}

// setCMA switches every rank of gs between the in-place all-reduce of
// ordinary tensors and the staged one, as DisableCrossMemory would.
func setCMA(gs []*TCPGroup, on bool) {
	for _, g := range gs {
		g.shm.cma = on
	}
}

// sharedTensors allocates on every rank of gs a SharedZeros tensor of n
// float32 ones.
func sharedTensors(b *testing.B, gs []*TCPGroup, n int) []*tensor.Tensor {
	xs := make([]*tensor.Tensor, len(gs))
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Go(func() {
			x, err := g.SharedZeros([]int{n}, tensor.Float32)
			if err != nil {
				b.Error(err)
				return
			}
			x.Fill(1)
			xs[g.Rank()] = x
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return xs
}

// drain reads c to its end in 1 MiB reads (io.Copy to io.Discard would
// read 8 KiB at a time, a slower stream than the ranks' 1 MiB frames get)
// and returns the byte count.
func drain(c net.Conn) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// BenchmarkShmAllReduceStores compares, alternating in every iteration,
// the 4-rank staged shared-memory all-reduce of 64 MB of float32 writing its
// results into the tensors with non-temporal stores (stream-ms) and with
// cached stores (cached-ms), in milliseconds per all-reduce.
func BenchmarkShmAllReduceStores(b *testing.B) {
	const ranks, n = 4, 16 << 20
	gs, xs := benchGroups(b, ranks, n, Config{DisableCrossMemory: true})
	allReduce := func(from int) float64 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for _, g := range gs {
			g.shm.streamFrom = from
			wg.Go(func() {
				if err := g.AllReduce(xs[g.Rank()], Sum); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		return time.Since(t0).Seconds()
	}
	var stream, cached float64
	for range b.N {
		stream += allReduce(shmStreamBytes)
		cached += allReduce(math.MaxInt)
	}
	b.ReportMetric(stream/float64(b.N)*1e3, "stream-ms")
	b.ReportMetric(cached/float64(b.N)*1e3, "cached-ms")
}
