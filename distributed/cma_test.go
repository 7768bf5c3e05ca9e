package distributed

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// configuredGroups starts n loopback ranks, rank r with the Config cfg(r)
// returns (rendezvous fields filled in), and closes them when the test
// ends.
func configuredGroups(t *testing.T, n int, cfg func(r int) Config) []*TCPGroup {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := make([]*TCPGroup, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c := cfg(r)
		c.Rank, c.WorldSize, c.MasterAddr, c.ListenAddr, c.Token = r, n, ln.Addr().String(), "127.0.0.1", "t"
		if c.Timeout == 0 {
			c.Timeout = 10 * time.Second
		}
		var store net.Listener
		if r == 0 {
			store = ln
		}
		wg.Go(func() { gs[r], errs[r] = newTCPGroup(context.Background(), c, store) })
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
		t.Cleanup(func() { gs[r].Close() })
	}
	return gs
}

// checkAllReduce runs allReduceView on every rank of gs.
func checkAllReduce(t *testing.T, gs []*TCPGroup, k, size int, dt tensor.DType, op ReduceOp) {
	t.Helper()
	requireAll(t, gs, func(g *TCPGroup) error { return allReduceView(t, g, k, size, dt, op) })
}

// allReduceView all-reduces with op a view at an offset of a larger
// tensor, holding rankTensor(rank, k, size, dt), and asserts the serial
// reference in the view and the elements around it untouched.
func allReduceView(t *testing.T, g *TCPGroup, k, size int, dt tensor.DType, op ReduceOp) error {
	r := g.Rank()
	whole := tensor.Full([]int{size + 5}, 9, dt)
	x := whole.Narrow(0, 3, size)
	x.CopyFrom(rankTensor(r, k, size, dt))
	if err := g.AllReduce(x, op); err != nil {
		return err
	}
	assert.Equal(t, roundTo(serialReduce(g.Size(), k, size, dt, op), dt), x.Float64s(), "%s %s n=%d rank %d", op, dt, size, r)
	assert.Equal(t, []float64{9, 9, 9, 9, 9}, tensor.Concat([]*tensor.Tensor{whole.Narrow(0, 0, 3), whole.Narrow(0, size+3, 2)}, 0).Float64s(), "around the view, rank %d", r)
	return nil
}

// largeCases are the dtypes and ops the tests all-reduce million-element
// tensors with: one op per dtype keeps them quick.
var largeCases = []struct {
	dt tensor.DType
	op ReduceOp
}{{tensor.Float32, Sum}, {tensor.Float64, Avg}, {tensor.Int32, Max}, {tensor.Int64, Prod}}

// inPlaceGroups is localGroups whose all-reduces of ordinary tensors of
// every size take the in-place path.
func inPlaceGroups(t *testing.T, n int) []*TCPGroup {
	t.Helper()
	gs := localGroups(t, n)
	for _, g := range gs {
		require.True(t, g.shm.cma)
		g.shm.cmaFrom = 0
	}
	return gs
}

func TestInPlaceAllReduceMatchesSerialReference(t *testing.T) {
	// 256-byte chunks cut even small tensors into many windows; from 5
	// ranks on a rank reduces its own piece from a copy, below in place.
	// One element leaves all ranks but one an empty piece.
	for ranks := 2; ranks <= 5; ranks++ {
		t.Run(fmt.Sprintf("ranks=%d", ranks), func(t *testing.T) {
			gs := inPlaceGroups(t, ranks)
			for _, dt := range allDTypes {
				ops := []ReduceOp{Sum, Max, Min, Prod}
				if dt.IsFloat() {
					ops = append(ops, Avg)
				}
				for _, size := range []int{1, 7, 333} {
					for _, op := range ops {
						checkAllReduce(t, gs, int(op), size, dt, op)
					}
				}
			}
		})
	}
}

func TestInPlaceAllReduceLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large tensors")
	}
	// Default 1 MiB slots: a million elements take several windows, and
	// the last window is short and odd.
	gs, err := newLocalGroups(context.Background(), 3, Config{Timeout: 20 * time.Second})
	require.NoError(t, err)
	for _, g := range gs {
		t.Cleanup(func() { g.Close() })
		require.True(t, g.shm.cma)
	}
	for _, c := range largeCases {
		checkAllReduce(t, gs, int(c.op), 1_000_003, c.dt, c.op)
	}
}

func TestInPlaceAllReduceBitIdentical(t *testing.T) {
	// Random floats, whose sums round differently in different orders:
	// 3 ranks reduce their pieces in place, 5 from a copy.
	for _, ranks := range []int{3, 5} {
		t.Run(fmt.Sprintf("ranks=%d", ranks), func(t *testing.T) {
			requireAvgBitIdentical(t, inPlaceGroups(t, ranks), func(*TCPGroup) (*tensor.Tensor, error) { return tensor.Zeros([]int{5003}), nil })
		})
	}
}

func TestInPlaceAllReduceMixedViews(t *testing.T) {
	// Rank 0 all-reduces a transposed (non-contiguous) view, the others
	// contiguous tensors: every rank reduces what it holds in memory, so
	// the layouts need not agree, only the elements.
	const rows, cols = 37, 29
	gs := inPlaceGroups(t, 3)
	requireAll(t, gs, func(g *TCPGroup) error {
		r := g.Rank()
		want := rankTensor(r, 1, rows*cols, tensor.Float64).Reshape(rows, cols)
		x := want.Clone()
		if r == 0 {
			x = want.Transpose(0, 1).Clone().Transpose(0, 1)
			require.False(t, x.IsContiguous())
		}
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		assert.Equal(t, serialReduce(3, 1, rows*cols, tensor.Float64, Sum), x.Float64s(), "rank %d", r)
		return nil
	})
}

func TestCrossMemoryFallsBackOnEveryRank(t *testing.T) {
	// One rank that cannot read its peers' memory, or will not, keeps
	// every rank on the staged path, which still gives the serial result.
	tests := []struct {
		name string
		cfg  func(r int) Config
	}{
		{"probe fails on rank 1", func(r int) Config { return Config{failCrossMemoryProbe: r == 1} }},
		{"disabled on rank 2", func(r int) Config { return Config{DisableCrossMemory: r == 2} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs := configuredGroups(t, 3, tt.cfg)
			for r, g := range gs {
				require.NotNil(t, g.shm, "rank %d", r)
				assert.False(t, g.shm.cma, "rank %d", r)
			}
			checkAllReduce(t, gs, 0, 100_003, tensor.Float32, Sum)
		})
	}
}

func TestKilledPeerMidInPlaceAllReduce(t *testing.T) {
	// The victim dies once every rank has published its tensor: the
	// others read and write what they can, then wait for it at the end
	// and learn that it is gone, never returning a result it did not
	// finish.
	const victim = 2
	gs := inPlaceGroups(t, 4)
	x := make([]*tensor.Tensor, len(gs))
	for r := range x {
		x[r] = tensor.Ones([]int{1 << 12})
	}
	var survivors sync.WaitGroup
	survivors.Add(len(gs) - 1)
	gs[victim].shm.pause = func() {
		kill(gs[victim])
		survivors.Wait()
	}
	errs := onAll(gs, func(g *TCPGroup) error {
		err := g.AllReduce(x[g.Rank()], Sum)
		if g.Rank() != victim {
			survivors.Done()
		}
		return err
	})
	for r, err := range errs {
		if r == victim {
			continue
		}
		var pe *PeerError
		require.ErrorAs(t, err, &pe, "rank %d", r)
		assert.Equal(t, victim, pe.Rank, "rank %d: %v", r, err)
		// Goroutine ranks hold each other's tensors by address: a failed
		// one's memory stays with its group.
		require.Len(t, gs[r].shm.held, 1, "rank %d", r)
		assert.Equal(t, unsafe.SliceData(sliceBytes(hostVec(x[r]).data)), unsafe.SliceData(gs[r].shm.held[0]), "rank %d", r)
	}
}

// startedRound returns n local groups in which ranks 0 and 1 have started
// in-place all-reduce round t and the others have not.
func startedRound(t *testing.T, n int, round uint32) []*TCPGroup {
	gs := localGroups(t, n)
	gs[0].shm.publish(shmFilledOff, round+1)
	gs[1].shm.publish(shmFilledOff, round+1)
	return gs
}

func TestQuiesceWaitsForWritingPeers(t *testing.T) {
	// Rank 0 failed in round t while rank 1 is still in its windows and
	// rank 2 has not started: rank 0 takes back its start, so that rank 2
	// will wait for it, aborts the group and returns once rank 1 has left
	// its windows.
	const round = 7
	gs := startedRound(t, 3, round)
	s := gs[0].shm
	assert.Equal(t, []bool{false, true, false}, s.writers(round))
	assert.Equal(t, uint32(round), atomic.LoadUint32(s.word(0, shmFilledOff)))

	s.publish(shmFilledOff, round+1)
	var wrote sync.WaitGroup
	wrote.Go(func() {
		time.Sleep(50 * time.Millisecond)
		gs[1].shm.publish(shmWroteOff, round+1)
	})
	assert.True(t, s.quiesce(round, fmt.Errorf("peer 1 is slow")))
	assert.Equal(t, uint32(round+1), atomic.LoadUint32(s.word(1, shmWroteOff)), "quiesce returned before rank 1 left its windows")
	wrote.Wait()
	assert.ErrorContains(t, gs[0].Barrier(), "peer 1 is slow")
}

func TestQuiesceGivesUpOnAStalledWriter(t *testing.T) {
	// Rank 1 started round t and never leaves its windows: rank 0 waits
	// shmQuiesce and reports that a writer may remain.
	const round = 3
	s := startedRound(t, 2, round)[0].shm
	start := time.Now()
	assert.False(t, s.quiesce(round, fmt.Errorf("peer 1 stalled")))
	assert.GreaterOrEqual(t, time.Since(start), shmQuiesce)
}
