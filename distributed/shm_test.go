package distributed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestLocalRanksShareMemory(t *testing.T) {
	gs := localGroups(t, 3)
	for r, g := range gs {
		require.NotNil(t, g.shm, "rank %d", r)
		assert.Len(t, g.shm.segs, 3)
	}
	// A subgroup sets up shared memory of its own.
	subs := subgroupOnAll(t, gs, []int{2, 0})
	require.Nil(t, subs[1])
	members := []*TCPGroup{subs[0], subs[2]}
	requireAll(t, members, func(g *TCPGroup) error {
		require.NotNil(t, g.shm)
		assert.Len(t, g.shm.segs, 2)
		x := rankTensor(g.Rank(), 0, 1000, tensor.Float64)
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		assert.Equal(t, roundTo(serialReduce(2, 0, 1000, tensor.Float64, Sum), tensor.Float64), x.Float64s())
		return nil
	})
	// Without shared memory in the world's Config, neither the world nor
	// its subgroups have any.
	gs, err := newLocalGroups(context.Background(), 2, Config{DisableSharedMemory: true})
	require.NoError(t, err)
	for _, sub := range subgroupOnAll(t, gs, []int{0, 1}) {
		assert.Nil(t, sub.shm)
	}
	for _, g := range gs {
		assert.Nil(t, g.shm)
		require.NoError(t, g.Close())
	}
}

func TestSharedMemoryNeedsEveryRank(t *testing.T) {
	// Rank 1 refuses shared memory: the others must keep to TCP too, and
	// a large all-reduce (the ring) still gives the serial result.
	const n = 3
	gs := configuredGroups(t, n, func(r int) Config { return Config{DisableSharedMemory: r == 1} })
	for r := range n {
		assert.Nil(t, gs[r].shm, "rank %d", r)
	}
	const size = 100_003
	requireAll(t, gs, func(g *TCPGroup) error {
		x := rankTensor(g.Rank(), 0, size, tensor.Float32)
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		assert.Equal(t, roundTo(serialReduce(n, 0, size, tensor.Float32, Sum), tensor.Float32), x.Float64s())
		return nil
	})
}

func TestCollectivesOverTCPOnly(t *testing.T) {
	sizes := []int{1, 0, 7, 61, 333}
	// default: all-reduces from 64 bytes on through the ring, the tree
	// (or for 2 ranks the direct exchange) below; tree: every all-reduce
	// over the binomial tree, whose shape changes with each size of
	// group; direct: every all-reduce through the direct exchange.
	for _, route := range []string{"default", "tree", "direct"} {
		for n := 2; n <= 8; n++ {
			if route != "tree" && n%3 != 2 {
				continue
			}
			t.Run(fmt.Sprintf("%s/ranks=%d", route, n), func(t *testing.T) {
				gs := tcpGroups(t, n)
				switch route {
				case "tree":
					treeAlways(gs)
				case "direct":
					for _, g := range gs {
						g.direct, g.treeMin = 1<<30, 1<<30
					}
				}
				requireAll(t, gs, func(g *TCPGroup) error { return collectiveSuite(t, g, sizes) })
			})
		}
	}
}

// treeAlways makes every all-reduce of the TCP groups gs go over the
// binomial tree.
func treeAlways(gs []*TCPGroup) {
	for _, g := range gs {
		g.direct, g.treeMin = 1<<30, 0
	}
}

func TestSharedMemoryMatchesTCPBits(t *testing.T) {
	// Random floats, where the reduction order shows in the last bits:
	// every rank gets the same bits, and ReduceScatter (rank order through
	// shared memory and in the direct exchange over TCP) gives the TCP
	// path's bits.
	const n, size = 5, 4099
	run := func(disable bool) [][]float32 {
		gs, err := newLocalGroups(context.Background(), n, Config{Timeout: 20 * time.Second, ChunkBytes: 1024, DisableSharedMemory: disable})
		require.NoError(t, err)
		defer func() {
			for _, g := range gs {
				g.Close()
			}
		}()
		res := make([][]float32, n)
		requireAll(t, gs, func(g *TCPGroup) error {
			g.direct = 1 << 30
			gen := tensor.NewGenerator(uint64(g.Rank()) + 7)
			ins := make([]*tensor.Tensor, n)
			for j := range ins {
				ins[j] = gen.Randn([]int{size}, tensor.Float32)
			}
			out := tensor.Zeros([]int{size})
			if err := g.ReduceScatter(out, ins, Avg); err != nil {
				return err
			}
			res[g.Rank()] = out.Float32s()
			return nil
		})
		return res
	}
	shm, tcp := run(false), run(true)
	for r := range n {
		assert.Equal(t, tcp[r], shm[r], "rank %d", r)
	}
	requireSameRandomAvg(t, localGroups(t, n))
}

func TestInPlaceOutputs(t *testing.T) {
	// The output aliases an input: the result must be computed from the
	// inputs as they were, through shared memory, round the TCP ring,
	// in the direct exchange and in two levels between pretend machines.
	for _, route := range []string{"shm", "ring", "direct", "two-level"} {
		t.Run(route, func(t *testing.T) { testInPlaceOutputs(t, route) })
	}
}

func testInPlaceOutputs(t *testing.T, route string) {
	const size = 200
	n := 3
	gs := localGroups(t, n)
	if route == "two-level" {
		n = 4
		gs = machineGroups(t, 2, 2)
	} else if route != "shm" {
		gs = tcpGroups(t, n)
		if route == "direct" {
			for _, g := range gs {
				g.direct = 1 << 30
			}
		}
	}
	requireAll(t, gs, func(g *TCPGroup) error {
		r := g.Rank()
		flat := tensor.Zeros([]int{n * size})
		ins := make([]*tensor.Tensor, n)
		for j := range ins {
			ins[j] = flat.Narrow(0, j*size, size)
			ins[j].CopyFrom(rankTensor(r, j, size, tensor.Float32))
		}
		if err := g.ReduceScatter(ins[(r+1)%n], ins, Sum); err != nil {
			return err
		}
		assert.Equal(t, roundTo(serialReduce(n, r, size, tensor.Float32, Sum), tensor.Float32), ins[(r+1)%n].Float64s())

		outs := make([]*tensor.Tensor, n)
		for j := range outs {
			outs[j] = flat.Narrow(0, j*size, size)
		}
		in := flat.Narrow(0, ((r+2)%n)*size, size)
		in.CopyFrom(rankTensor(r, 9, size, tensor.Float32))
		if err := g.AllGather(outs, in); err != nil {
			return err
		}
		for j, o := range outs {
			assert.Equal(t, rankTensor(j, 9, size, tensor.Float32).Float64s(), o.Float64s(), "rank %d slot %d", r, j)
		}
		return nil
	})
}

func TestSharedMemoryTimeoutNamesSilentPeer(t *testing.T) {
	gs := localGroups(t, 2)
	gs[0].SetTimeout(200 * time.Millisecond)
	// Rank 1 does not join: rank 0 gives up on it.
	err := gs[0].AllReduce(tensor.Ones([]int{1000}), Sum)
	require.Error(t, err)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Rank)
	assert.Contains(t, err.Error(), "timed out")
	// Rank 1 learns of the abort instead of waiting out its 20 s.
	start := time.Now()
	require.Error(t, gs[1].AllReduce(tensor.Ones([]int{1000}), Sum))
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestSharedMemoryMismatchedCollectives(t *testing.T) {
	gs := localGroups(t, 2)
	errs := onAll(gs, func(g *TCPGroup) error {
		x := tensor.Ones([]int{1000})
		if g.Rank() == 0 {
			return g.AllReduce(x, Sum)
		}
		return g.AllGather([]*tensor.Tensor{tensor.Zeros([]int{1000}), tensor.Zeros([]int{1000})}, x)
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		var pe *PeerError
		require.True(t, errors.As(err, &pe), "rank %d: %v", r, err)
		assert.Contains(t, err.Error(), "mismatched operation", "rank %d", r)
	}
}

func TestSharedMemoryRootsMismatch(t *testing.T) {
	// Each rank names itself the root: through shared memory, as over
	// TCP, that is an error on both, never a silent result.
	two := func() []*tensor.Tensor { return []*tensor.Tensor{tensor.Zeros([]int{10}), tensor.Zeros([]int{10})} }
	for name, call := range map[string]func(g *TCPGroup) error{
		"Broadcast": func(g *TCPGroup) error { return g.Broadcast(tensor.Ones([]int{10}), g.Rank()) },
		"Reduce":    func(g *TCPGroup) error { return g.Reduce(tensor.Ones([]int{10}), g.Rank(), Sum) },
		"Gather":    func(g *TCPGroup) error { return g.Gather(two(), tensor.Ones([]int{10}), g.Rank()) },
		"Scatter":   func(g *TCPGroup) error { return g.Scatter(tensor.Zeros([]int{10}), two(), g.Rank()) },
	} {
		t.Run(name, func(t *testing.T) {
			errs := onAll(localGroups(t, 2), call)
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				assert.Contains(t, err.Error(), fmt.Sprintf("its root is rank %d and this rank's rank %d", 1-r, r), "rank %d", r)
			}
		})
	}
}

func TestSharedMemoryBarrierWaitsForEveryRank(t *testing.T) {
	gs := localGroups(t, 3)
	var entered atomic.Int32
	requireAll(t, gs, func(g *TCPGroup) error {
		for round := range 20 {
			if g.Rank() == round%3 {
				time.Sleep(time.Millisecond) // the last to arrive
			}
			entered.Add(1)
			if err := g.Barrier(); err != nil {
				return err
			}
			// Every rank entered this round's barrier before anyone left.
			assert.GreaterOrEqual(t, entered.Load(), int32(3*(round+1)), "rank %d round %d", g.Rank(), round)
		}
		return nil
	})
}

func TestSharedMemorySpinsLongOnlyWithACPUPerThread(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// 2 ranks of 1 thread each fit 2 CPUs: waiters spin long, and the
	// collectives still work.
	gs := localGroups(t, 2)
	for _, g := range gs {
		assert.Equal(t, shmSpinLong, g.shm.spin)
	}
	requireAll(t, gs, func(g *TCPGroup) error {
		x := tensor.Full([]int{100}, float64(g.Rank()+1), tensor.Float32)
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		assert.Equal(t, 3.0, x.Float64s()[99])
		return g.Barrier()
	})
	// Threads that outnumber the CPUs keep the short spin.
	runtime.GOMAXPROCS(runtime.NumCPU())
	for _, g := range localGroups(t, 2) {
		assert.Equal(t, shmSpin, g.shm.spin)
	}
}

func TestAwaitPeerThatFinishedAndClosed(t *testing.T) {
	// Rank 1 publishes the counter rank 0 waits for and closes at once, as
	// a rank that finishes a collective first and closes its group does:
	// rank 0, which looked at the counter before and sees the connection
	// gone when it checks, must not fail.
	gs := localGroups(t, 2)
	s := gs[0].shm
	s.spins = 0 // check the peer after the first look
	w := s.word(1, shmFilledOff)
	want := atomic.LoadUint32(w) + 1
	require.NoError(t, gs[1].Close())
	require.Eventually(t, func() bool { return gs[0].peers[1].ended() }, 10*time.Second, time.Millisecond)
	done := make(chan error, 1)
	go func() {
		done <- s.await(1, shmFilledOff, want, shmDesc{op: opBarrier, dt: tensor.Float32}, time.Now().Add(10*time.Second))
	}()
	time.Sleep(settleDelay / 5) // rank 0 has looked, and is settling the closed connection
	atomic.StoreUint32(w, want)
	assert.NoError(t, <-done)
}
