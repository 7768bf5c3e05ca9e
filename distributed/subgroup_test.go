package distributed

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestSubgroups(t *testing.T) {
	gs := localGroups(t, 5)
	a := []int{4, 1, 3} // world ranks; subgroup ranks 0, 1, 2
	b := []int{0, 2}
	requireAll(t, gs, func(g *TCPGroup) error {
		sa, err := g.NewSubgroup(a)
		if err != nil {
			return err
		}
		sb, err := g.NewSubgroup(b)
		if err != nil {
			return err
		}
		w := g.Rank()
		inA := w == 4 || w == 1 || w == 3
		assert.Equal(t, inA, sa != nil, "rank %d in A", w)
		assert.Equal(t, !inA, sb != nil, "rank %d in B", w)
		x := rankTensor(w, 0, 101, tensor.Float64)
		if inA {
			defer sa.Close()
			assert.Equal(t, a, sa.WorldRanks())
			assert.Equal(t, 3, sa.Size())
			// The subgroup's collective first, then the world's barrier.
			if err := sa.AllReduce(x, Sum); err != nil {
				return err
			}
			want := make([]float64, 101)
			for _, r := range a {
				for i, v := range rankTensor(r, 0, 101, tensor.Float64).Float64s() {
					want[i] += v
				}
			}
			assert.Equal(t, want, x.Float64s(), "rank %d", w)
			y := tensor.Zeros([]int{4}, tensor.Int32)
			if sa.Rank() == 0 {
				y = tensor.FromSlice([]int32{1, 2, 3, int32(w)})
			}
			if err := sa.Broadcast(y, 0); err != nil {
				return err
			}
			assert.Equal(t, []int32{1, 2, 3, 4}, y.Int32s())
			return g.Barrier()
		}
		defer sb.Close()
		// The other order: the world's barrier first, then the subgroup.
		if err := g.Barrier(); err != nil {
			return err
		}
		if sb.Rank() == 0 {
			return sb.Send(x, 1)
		}
		got := tensor.Zeros([]int{101}, tensor.Float64)
		if err := sb.Recv(got, 0); err != nil {
			return err
		}
		assert.Equal(t, rankTensor(0, 0, 101, tensor.Float64).Float64s(), got.Float64s())
		return nil
	})
	// The world group still works after its subgroups are closed.
	requireAll(t, gs, func(g *TCPGroup) error { return g.Barrier() })
	assert.Panics(t, func() { gs[0].NewSubgroup([]int{0, 0}) })
	assert.Panics(t, func() { gs[0].NewSubgroup([]int{5}) })
}

// subgroupOnAll calls NewSubgroup(ranks) on every world group at once (a
// member's call returns once every member has made it) and returns the
// subgroups by world rank, nil for the ranks outside.
func subgroupOnAll(t testing.TB, gs []*TCPGroup, ranks []int) []*TCPGroup {
	t.Helper()
	return subgroupsBy(t, gs, ranks, (*TCPGroup).NewSubgroup)
}

// subgroupsBy is subgroupOnAll creating each rank's subgroup with create.
func subgroupsBy(t testing.TB, gs []*TCPGroup, ranks []int, create func(*TCPGroup, []int) (*TCPGroup, error)) []*TCPGroup {
	t.Helper()
	subs := make([]*TCPGroup, len(gs))
	for r, err := range onAll(gs, func(g *TCPGroup) error {
		var err error
		subs[g.Rank()], err = create(g, ranks)
		return err
	}) {
		require.NoError(t, err, "rank %d", r)
	}
	return subs
}

func TestSubgroupsOfOneMachineShareMemory(t *testing.T) {
	// 2 pretend machines of 3 ranks: the world group has two levels and
	// no shared memory of its own. A subgroup within one machine sets up
	// its own, one across machines keeps to TCP, and on each every
	// collective gives the serial results.
	gs := machineGroups(t, 2, 3)
	for _, c := range []struct {
		ranks  []int
		shared bool
	}{
		{[]int{2, 0}, true},
		{[]int{3, 4, 5}, true},
		{[]int{1, 4}, false},
		{[]int{5, 0, 4, 1}, false},
		{[]int{5}, false},
	} {
		t.Run(fmt.Sprint(c.ranks), func(t *testing.T) {
			subs := subgroupOnAll(t, gs, c.ranks)
			var members []*TCPGroup
			for r, sub := range subs {
				if !slices.Contains(c.ranks, r) {
					assert.Nil(t, sub, "rank %d", r)
					continue
				}
				require.NotNil(t, sub, "rank %d", r)
				assert.Equal(t, c.shared, sub.shm != nil, "rank %d", r)
				assert.Nil(t, sub.hier, "rank %d", r)
				sub.direct = 64 // the ring from 64 bytes on
				members = append(members, sub)
			}
			requireAll(t, members, func(g *TCPGroup) error { return collectiveSuite(t, g, []int{1, 0, 7, 61, 333}) })
			requireSameRandomAvg(t, members)
		})
	}
}

func TestClosingWorldClosesSubgroups(t *testing.T) {
	gs, err := newLocalGroups(context.Background(), 2, Config{Timeout: 20 * time.Second})
	require.NoError(t, err)
	subs := subgroupOnAll(t, gs, []int{1, 0})
	for r, g := range gs {
		require.NotNil(t, subs[r].shm)
		require.NoError(t, g.Close())
	}
	for r, sub := range subs {
		assert.Nil(t, sub.shm.segs, "rank %d: segments still mapped", r)
		assert.ErrorIs(t, sub.AllReduce(tensor.Ones([]int{10}), Sum), ErrClosed, "rank %d", r)
		assert.NoError(t, sub.Close(), "rank %d: closing again", r)
	}
}
