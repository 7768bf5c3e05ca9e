package distributed

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// localGroups starts n loopback ranks with small chunks (so that small
// tensors take many shared-memory rounds, and their subgroups, which use
// TCP, the ring from 64 bytes on) and closes them when the test ends.
func localGroups(t *testing.T, n int) []*TCPGroup {
	t.Helper()
	return smallChunkGroups(t, n, false)
}

// tcpGroups is localGroups without shared memory: every collective goes
// over TCP, all-reduces through the ring from 64 bytes on.
func tcpGroups(t *testing.T, n int) []*TCPGroup {
	t.Helper()
	return smallChunkGroups(t, n, true)
}

// smallChunkGroups is localGroups, over TCP only when tcp is set.
func smallChunkGroups(t *testing.T, n int, tcp bool) []*TCPGroup {
	t.Helper()
	gs, err := newLocalGroups(context.Background(), n, Config{Timeout: 20 * time.Second, ChunkBytes: 256, DisableSharedMemory: tcp})
	require.NoError(t, err)
	for _, g := range gs {
		if tcp {
			require.Nil(t, g.shm)
		}
		g.direct = 64
		t.Cleanup(func() { g.Close() })
	}
	return gs
}

// onAll runs fn on every rank concurrently and returns the ranks' errors.
func onAll(gs []*TCPGroup, fn func(g *TCPGroup) error) []error {
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Go(func() { errs[i] = fn(g) })
	}
	wg.Wait()
	return errs
}

// requireAll runs fn on every rank and requires that none fails.
func requireAll(t *testing.T, gs []*TCPGroup, fn func(g *TCPGroup) error) {
	t.Helper()
	for r, err := range onAll(gs, fn) {
		require.NoError(t, err, "rank %d", r)
	}
}

// val is rank r's element i of tensor k: small multiples of 1/2 (integers
// for integer dtypes), so every reduction order gives exact results.
func val(r, i, k int, dt tensor.DType) float64 {
	v := float64((r*5+i*3+r*i+k)%7 - 3)
	if dt.IsFloat() {
		v /= 2
	}
	return v
}

// rankTensor is rank r's tensor k of n elements.
func rankTensor(r, k, n int, dt tensor.DType) *tensor.Tensor {
	d := make([]float64, n)
	for i := range d {
		d[i] = val(r, i, k, dt)
	}
	return tensor.FromSlice(d).To(dt)
}

// serialReduce is the reference: rank values combined by op.
func serialReduce(size, k, n int, dt tensor.DType, op ReduceOp) []float64 {
	out := make([]float64, n)
	for i := range out {
		acc := val(0, i, k, dt)
		for r := 1; r < size; r++ {
			v := val(r, i, k, dt)
			switch op {
			case Sum, Avg:
				acc += v
			case Prod:
				acc *= v
			case Max:
				acc = math.Max(acc, v)
			case Min:
				acc = math.Min(acc, v)
			}
		}
		if op == Avg {
			acc /= float64(size)
		}
		out[i] = acc
	}
	return out
}

// roundTo rounds reference values to dtype dt's precision.
func roundTo(x []float64, dt tensor.DType) []float64 {
	return tensor.FromSlice(x).To(dt).Float64s()
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64}

func TestCollectivesMatchSerialReference(t *testing.T) {
	sizes := []int{1, 0, 7, 61, 333} // 333 float64 = 2664 bytes: the ring, with 256-byte chunks
	for n := 1; n <= 8; n++ {
		// in-place: all-reduces read and write the peers' tensors (the
		// default); staged: through the slots, as with
		// DisableCrossMemory; stream: staged, with the results going into
		// the tensors with non-temporal stores, as they do from
		// shmStreamBytes on.
		for _, path := range []string{"in-place", "staged", "stream"} {
			t.Run(fmt.Sprintf("ranks=%d/%s", n, path), func(t *testing.T) {
				gs := localGroups(t, n)
				for _, g := range gs {
					if g.shm != nil {
						require.True(t, g.shm.cma)
						g.shm.cma = path == "in-place"
						if path == "stream" {
							g.shm.streamFrom = 0
						}
					}
				}
				requireAll(t, gs, func(g *TCPGroup) error { return collectiveSuite(t, g, sizes) })
			})
		}
	}
}

// collectiveSuite is one rank's part of the collective tests: every
// collective, dtype, size and reduce op against the serial reference. The
// TCP tests run it on goroutine ranks, the MPI test on mpirun's processes.
func collectiveSuite(t *testing.T, g ProcessGroup, sizes []int) error {
	n, r := g.Size(), g.Rank()
	for _, dt := range allDTypes {
		for _, size := range sizes {
			name := fmt.Sprintf("%s/n=%d", dt, size)
			ops := []ReduceOp{Sum, Max, Min, Prod}
			if dt.IsFloat() {
				ops = append(ops, Avg)
			}
			for _, op := range ops {
				x := rankTensor(r, int(op), size, dt)
				if err := g.AllReduce(x, op); err != nil {
					return err
				}
				assert.Equal(t, roundTo(serialReduce(n, int(op), size, dt, op), dt), x.Float64s(), "AllReduce %s %s rank %d", op, name, r)

				root := (int(op) + 1) % n
				x = rankTensor(r, int(op), size, dt)
				if err := g.Reduce(x, root, op); err != nil {
					return err
				}
				want := rankTensor(r, int(op), size, dt).Float64s()
				if r == root {
					want = roundTo(serialReduce(n, int(op), size, dt, op), dt)
				}
				assert.Equal(t, want, x.Float64s(), "Reduce %s %s rank %d", op, name, r)

				ins := make([]*tensor.Tensor, n)
				for j := range ins {
					// rank r's tensor for rank j is tensor k=j.
					ins[j] = rankTensor(r, j, size, dt)
				}
				out := tensor.Zeros([]int{size}, dt)
				if err := g.ReduceScatter(out, ins, op); err != nil {
					return err
				}
				assert.Equal(t, roundTo(serialReduce(n, r, size, dt, op), dt), out.Float64s(), "ReduceScatter %s %s rank %d", op, name, r)
			}
			root := size % n
			x := rankTensor(r, 0, size, dt)
			if err := g.Broadcast(x, root); err != nil {
				return err
			}
			assert.Equal(t, rankTensor(root, 0, size, dt).Float64s(), x.Float64s(), "Broadcast %s rank %d", name, r)

			outs := make([]*tensor.Tensor, n)
			for j := range outs {
				outs[j] = tensor.Zeros([]int{size}, dt)
			}
			if err := g.AllGather(outs, rankTensor(r, 1, size, dt)); err != nil {
				return err
			}
			for j, o := range outs {
				assert.Equal(t, rankTensor(j, 1, size, dt).Float64s(), o.Float64s(), "AllGather %s rank %d slot %d", name, r, j)
			}

			outs = nil
			if r == root {
				for range n {
					outs = append(outs, tensor.Zeros([]int{size}, dt))
				}
			}
			if err := g.Gather(outs, rankTensor(r, 2, size, dt), root); err != nil {
				return err
			}
			for j, o := range outs {
				assert.Equal(t, rankTensor(j, 2, size, dt).Float64s(), o.Float64s(), "Gather %s slot %d", name, j)
			}

			var ins []*tensor.Tensor
			if r == root {
				for j := range n {
					ins = append(ins, rankTensor(root, 10+j, size, dt))
				}
			}
			out := tensor.Zeros([]int{size}, dt)
			if err := g.Scatter(out, ins, root); err != nil {
				return err
			}
			assert.Equal(t, rankTensor(root, 10+r, size, dt).Float64s(), out.Float64s(), "Scatter %s rank %d", name, r)
		}
	}
	return g.Barrier()
}

func TestSendRecvRing(t *testing.T) {
	gs := localGroups(t, 3)
	requireAll(t, gs, func(g *TCPGroup) error { return sendRecvRing(t, g) })
}

// sendRecvRing passes tensors round the ring of ranks with SendAsync and
// Recv.
func sendRecvRing(t *testing.T, g ProcessGroup) error {
	n := g.Size()
	next, prev := (g.Rank()+1)%n, (g.Rank()+n-1)%n
	for k := range 3 {
		send := g.SendAsync(rankTensor(g.Rank(), k, 9, tensor.Int64), next)
		got := tensor.Zeros([]int{9}, tensor.Int64)
		if err := g.Recv(got, prev); err != nil {
			return err
		}
		if err := send.Wait(context.Background()); err != nil {
			return err
		}
		assert.Equal(t, rankTensor(prev, k, 9, tensor.Int64).Float64s(), got.Float64s())
	}
	return nil
}

func TestAllReduceNonContiguousAndAsync(t *testing.T) {
	gs := localGroups(t, 3)
	requireAll(t, gs, func(g *TCPGroup) error { return nonContiguousAsync(t, g) })
}

// nonContiguousAsync all-reduces a transposed view asynchronously.
func nonContiguousAsync(t *testing.T, g ProcessGroup) error {
	base := rankTensor(g.Rank(), 0, 15, tensor.Float32).Reshape(3, 5)
	view := base.T() // [5,3], not contiguous
	w := g.AllReduceAsync(view, Sum)
	if err := w.Wait(context.Background()); err != nil {
		return err
	}
	<-w.Done()
	assert.Equal(t, roundTo(serialReduce(g.Size(), 0, 15, tensor.Float32, Sum), tensor.Float32), base.Float64s())
	return nil
}

func TestRingAndTreeResultsBitIdentical(t *testing.T) {
	for _, tree := range []bool{false, true} {
		for _, n := range []int{5, 8} {
			t.Run(fmt.Sprintf("tree=%v/ranks=%d", tree, n), func(t *testing.T) {
				gs := tcpGroups(t, n)
				if tree {
					treeAlways(gs)
				}
				requireSameRandomAvg(t, gs)
			})
		}
	}
}

func TestRingReduceScatterOrder(t *testing.T) {
	// Random floats, where the order of the additions shows in the last
	// bits: round the ring, rank j's share is the sum of the ranks'
	// contributions in the order j+1, j+2, …, j (mod the size), divided
	// once for Avg. 1001 elements a share pass the 256-byte chunks
	// unevenly.
	const size = 1001
	for _, n := range []int{2, 3, 5} {
		for _, op := range []ReduceOp{Sum, Avg} {
			t.Run(fmt.Sprintf("ranks=%d/%v", n, op), func(t *testing.T) {
				contrib := func(r, j int) *tensor.Tensor {
					return tensor.NewGenerator(uint64(r*n+j)+3).Randn([]int{size}, tensor.Float32)
				}
				gs := tcpGroups(t, n)
				requireAll(t, gs, func(g *TCPGroup) error {
					r := g.Rank()
					ins := make([]*tensor.Tensor, n)
					for j := range ins {
						ins[j] = contrib(r, j)
					}
					out := tensor.Zeros([]int{size})
					if err := g.ReduceScatter(out, ins, op); err != nil {
						return err
					}
					want := contrib((r+1)%n, r).Float32s()
					for k := 2; k <= n; k++ {
						c := contrib((r+k)%n, r).Float32s()
						for i := range want {
							want[i] += c[i]
						}
					}
					if op == Avg {
						for i := range want {
							want[i] /= float32(n)
						}
					}
					assert.Equal(t, want, out.Float32s(), "rank %d", r)
					return nil
				})
			})
		}
	}
}

func TestRingReduceScatterMatchesRingAllReduce(t *testing.T) {
	// ZeroOptimizer gives rank j block j+1 of each bucket: round the ring
	// its reduce-scatter must give the bits that the ring all-reduce
	// gives those elements, so that sharding does not change the
	// gradients.
	const n, share = 5, 1001
	gs := tcpGroups(t, n)
	requireAll(t, gs, func(g *TCPGroup) error {
		r := g.Rank()
		x := tensor.NewGenerator(uint64(r)+11).Randn([]int{n * share}, tensor.Float32)
		ins := make([]*tensor.Tensor, n)
		for j := range ins {
			ins[j] = x.Narrow(0, (j+1)%n*share, share).Clone()
		}
		out := tensor.Zeros([]int{share})
		if err := g.ReduceScatter(out, ins, Avg); err != nil {
			return err
		}
		if err := g.AllReduce(x, Avg); err != nil {
			return err
		}
		assert.Equal(t, x.Narrow(0, (r+1)%n*share, share).Float32s(), out.Float32s(), "rank %d", r)
		return nil
	})
}

// requireSameRandomAvg runs randomAvg on every rank of gs and requires
// that all ranks get the same bits.
func requireSameRandomAvg(t *testing.T, gs []*TCPGroup) {
	t.Helper()
	res := make([][]float32, len(gs))
	requireAll(t, gs, func(g *TCPGroup) error {
		var err error
		res[g.Rank()], err = randomAvg(g)
		return err
	})
	for r := 1; r < len(gs); r++ {
		require.Equal(t, res[0], res[r], "rank %d", r)
	}
}

// randomAvg averages 1001 random floats (seeded by rank) over the group.
func randomAvg(g ProcessGroup) ([]float32, error) {
	gen := tensor.NewGenerator(uint64(g.Rank()) + 1)
	x := gen.Randn([]int{1001}, tensor.Float32)
	if err := g.AllReduce(x, Avg); err != nil {
		return nil, err
	}
	return x.Float32s(), nil
}

func TestGatherIntoOwnInput(t *testing.T) {
	for _, route := range []string{"shm", "ring", "direct"} {
		t.Run(route, func(t *testing.T) { testGatherIntoOwnInput(t, route) })
	}
}

// testGatherIntoOwnInput runs TestGatherIntoOwnInput through shared
// memory, or over TCP round the ring (AllGather) or directly.
func testGatherIntoOwnInput(t *testing.T, route string) {
	gs := localGroups(t, 3)
	if route != "shm" {
		gs = tcpGroups(t, 3)
		for _, g := range gs {
			g.direct = map[string]int{"ring": 0, "direct": 1 << 30}[route]
		}
	}
	requireAll(t, gs, func(g *TCPGroup) error {
		// Slot 0 of the output is the input itself: rank 1's and 2's own
		// contribution must survive slot 0 being written first.
		for _, gather := range []bool{false, true} {
			in := rankTensor(g.Rank(), 4, 5, tensor.Float32)
			outs := []*tensor.Tensor{in, tensor.Zeros([]int{5}), tensor.Zeros([]int{5})}
			var err error
			if gather {
				err = g.Gather(outs, in, 1)
			} else {
				err = g.AllGather(outs, in)
			}
			if err != nil {
				return err
			}
			if gather && g.Rank() != 1 {
				continue
			}
			for j, o := range outs {
				assert.Equal(t, rankTensor(j, 4, 5, tensor.Float32).Float64s(), o.Float64s(), "gather=%v rank %d slot %d", gather, g.Rank(), j)
			}
		}
		return nil
	})
}
