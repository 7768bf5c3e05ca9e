package distributed

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
