//go:build mpi && cgo

package distributed

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// TestMPIGroup runs the collective test suite on the MPI backend. It needs
// mpirun's processes, e.g.
//
//	go test -c -tags mpi -o mpi.test ./distributed
//	mpirun --allow-run-as-root --oversubscribe -np 4 ./mpi.test -test.run MPI
//
// and skips when started without mpirun.
func TestMPIGroup(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" && os.Getenv("PMI_SIZE") == "" {
		t.Skip("not started by mpirun or srun")
	}
	g, err := NewMPIGroup()
	require.NoError(t, err)
	defer g.Close()
	g.SetTimeout(time.Minute) // a deadlock aborts the job instead of hanging CI
	n, r := g.Size(), g.Rank()

	t.Run("collectives", func(t *testing.T) {
		// 333 float32 elements per rank are enough for MPI's ring and
		// segmented algorithms; 0 and 1 are the edge cases.
		require.NoError(t, collectiveSuite(t, g, []int{1, 0, 7, 61, 333, 70001}))
	})
	t.Run("send-recv", func(t *testing.T) {
		if n < 2 {
			t.Skip("one rank")
		}
		require.NoError(t, sendRecvRing(t, g))
	})
	t.Run("large-send-recv-ring", func(t *testing.T) {
		// 8 MB messages go through MPI's rendezvous protocol: every rank
		// sends before it receives, which needs SendAsync not to block the
		// queue.
		if n < 2 {
			t.Skip("one rank")
		}
		const size = 2 << 20
		next, prev := (r+1)%n, (r+n-1)%n
		gen := tensor.NewGenerator(uint64(r))
		x := gen.Randn([]int{size}, tensor.Float32)
		send := g.SendAsync(x, next)
		got := tensor.Zeros([]int{size})
		require.NoError(t, g.Recv(got, prev))
		require.NoError(t, send.Wait(context.Background()))
		want := tensor.NewGenerator(uint64(prev)).Randn([]int{size}, tensor.Float32)
		require.Equal(t, want.Float32s(), got.Float32s())
	})
	t.Run("non-contiguous-async", func(t *testing.T) {
		require.NoError(t, nonContiguousAsync(t, g))
	})
	t.Run("bit-identical", func(t *testing.T) {
		res, err := randomAvg(g)
		require.NoError(t, err)
		outs := make([]*tensor.Tensor, n)
		for j := range outs {
			outs[j] = tensor.Zeros([]int{len(res)})
		}
		require.NoError(t, g.AllGather(outs, tensor.FromSlice(res)))
		for j, o := range outs {
			require.Equal(t, res, o.Float32s(), "rank %d's average differs from rank %d's", j, r)
		}
	})
	t.Run("subgroups", func(t *testing.T) {
		if n < 2 {
			t.Skip("one rank")
		}
		// Even and odd world ranks, the odd ones listed backwards so that
		// subgroup ranks differ from the world order.
		var even, odd []int
		for w := range n {
			if w%2 == 0 {
				even = append(even, w)
			} else {
				odd = append([]int{w}, odd...)
			}
		}
		se, err := g.NewSubgroup(even)
		require.NoError(t, err)
		so, err := g.NewSubgroup(odd)
		require.NoError(t, err)
		sub, members := se, even
		if r%2 == 1 {
			sub, members = so, odd
			assert.Nil(t, se, "rank %d is not in the even subgroup", r)
		} else {
			assert.Nil(t, so, "rank %d is not in the odd subgroup", r)
		}
		require.NotNil(t, sub)
		assert.Equal(t, members, sub.WorldRanks())
		assert.Equal(t, len(members), sub.Size())
		assert.Equal(t, members[sub.Rank()], r)
		assert.Equal(t, time.Minute, sub.Timeout())
		// Every collective, dtype, size and op against the serial
		// reference over the subgroup's ranks.
		require.NoError(t, collectiveSuite(t, sub, []int{1, 0, 7, 333, 70001}))
		if sub.Size() > 1 {
			require.NoError(t, sendRecvRing(t, sub))
		}
		require.NoError(t, nonContiguousAsync(t, sub))
		// The world group still runs between and after subgroup work.
		require.NoError(t, g.Barrier())
		x := rankTensor(r, 0, 9, tensor.Int64)
		require.NoError(t, sub.AllReduce(x, Sum))
		want := make([]float64, 9)
		for _, w := range members {
			for i, v := range rankTensor(w, 0, 9, tensor.Int64).Float64s() {
				want[i] += v
			}
		}
		assert.Equal(t, want, x.Float64s())
		require.NoError(t, sub.Close())
		assert.ErrorIs(t, sub.Barrier(), ErrClosed)
		require.NoError(t, sub.Close(), "a second Close")
		// A subgroup of every rank, in reverse order.
		all := make([]int, n)
		for i := range all {
			all[i] = n - 1 - i
		}
		rev, err := g.NewSubgroup(all)
		require.NoError(t, err)
		assert.Equal(t, n-1-r, rev.Rank())
		require.NoError(t, collectiveSuite(t, rev, []int{5}))
		require.NoError(t, rev.Close())
		require.NoError(t, g.Barrier())
		assert.Panics(t, func() { g.NewSubgroup([]int{0, 0}) })
		assert.Panics(t, func() { g.NewSubgroup([]int{n}) })
		assert.Panics(t, func() { g.NewSubgroup(nil) })
	})
	t.Run("data-parallel", func(t *testing.T) {
		const batch, steps = 8, 20
		if batch%n != 0 {
			t.Skipf("batch %d does not split over %d ranks", batch, n)
		}
		ref := ddpModel(100)
		opt := optim.NewSGD(ref.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
		m, err := DataParallel(ddpModel(100+uint64(r)), g, DDPOptions{BucketBytes: 200})
		require.NoError(t, err)
		mopt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
		per := batch / n
		for step := range steps {
			x, y := ddpBatch(step, batch)
			opt.ZeroGrad()
			ddpStep(t, ref, x, y)
			require.NoError(t, opt.Step())
			mopt.ZeroGrad()
			ddpStep(t, m, x.Narrow(0, r*per, per), y.Narrow(0, r*per, per))
			require.NoError(t, m.SyncGradients())
			require.NoError(t, mopt.Step())
		}
		want, got := paramValues(ref), paramValues(m)
		for i := range want {
			assert.InDeltaSlice(t, want[i], got[i], 1e-5, "parameter %d", i)
		}
	})
}
