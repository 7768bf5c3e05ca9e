package distributed

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// machineGroups starts machines×per goroutine ranks that take themselves
// for per ranks on each of machines machines (ranks numbered machine
// after machine), with small chunks and the ring from 64 bytes on.
func machineGroups(t *testing.T, machines, per int) []*TCPGroup {
	t.Helper()
	gs, err := newLocalGroups(context.Background(), machines*per, Config{Timeout: 20 * time.Second, ChunkBytes: 256, machines: machines})
	require.NoError(t, err)
	for _, g := range gs {
		g.direct = 64
		if g.hier != nil {
			g.hier.cross.direct = 64
			g.hier.window = 16 // 4 floats: ZeroOptimizer's shares and all-reduces from 9 floats in windows
		}
		t.Cleanup(func() { g.Close() })
	}
	return gs
}

func TestHierarchicalCollectives(t *testing.T) {
	// Every collective against the serial reference, all-reduces in two
	// levels (shared memory within a machine, the ring, the tree or the
	// direct exchange between machines by the pieces' size), the rest
	// over TCP; and the same bits on every rank.
	sizes := []int{1, 0, 7, 61, 333}
	for _, c := range []struct{ machines, per int }{{2, 2}, {2, 3}, {3, 2}, {2, 4}} {
		t.Run(fmt.Sprintf("machines=%d/per=%d", c.machines, c.per), func(t *testing.T) {
			gs := machineGroups(t, c.machines, c.per)
			for _, g := range gs {
				require.Nil(t, g.shm)
				require.NotNil(t, g.hier)
				require.NotNil(t, g.hier.local.shm)
				assert.Equal(t, c.per, g.hier.local.Size())
				assert.Equal(t, c.machines, g.hier.cross.Size())
				assert.Equal(t, g.Rank()/c.per, g.hier.cross.Rank())
			}
			requireAll(t, gs, func(g *TCPGroup) error { return collectiveSuite(t, g, sizes) })
			requireSameRandomAvg(t, gs)
		})
	}
}

func TestHierarchyNeedsEvenMachines(t *testing.T) {
	// 3 ranks on one machine and 2 on the other, or one rank a machine:
	// flat TCP, still correct.
	for _, c := range []struct{ ranks, machines int }{{5, 2}, {4, 4}} {
		gs, err := newLocalGroups(context.Background(), c.ranks, Config{Timeout: 20 * time.Second, ChunkBytes: 256, machines: c.machines})
		require.NoError(t, err)
		for _, g := range gs {
			assert.Nil(t, g.hier)
			assert.Nil(t, g.shm)
			t.Cleanup(func() { g.Close() })
		}
		requireAll(t, gs, func(g *TCPGroup) error { return collectiveSuite(t, g, []int{5, 300}) })
	}
}

func TestHierarchicalAllReduceNamesSilentRank(t *testing.T) {
	// 2 machines of 2 ranks; rank 3 never joins. Rank 2 waits on it
	// through shared memory, rank 1 over TCP (its peer on the other
	// machine), rank 0 on rank 2, which is stuck on rank 3: every one
	// must fail naming rank 3.
	gs := machineGroups(t, 2, 2)
	for _, g := range gs[:3] {
		g.SetTimeout(time.Second)
	}
	errs := onAll(gs[:3], func(g *TCPGroup) error { return g.AllReduce(tensor.Ones([]int{1000}), Sum) })
	for r, err := range errs {
		var pe *PeerError
		require.ErrorAs(t, err, &pe, "rank %d", r)
		assert.Equal(t, 3, pe.Rank, "rank %d: %v", r, err)
	}
}

func TestHierarchicalErrorsNameTheCollective(t *testing.T) {
	// In two levels, the public ReduceScatter and AllGather go through the
	// exchanges ZeroOptimizer uses; a mismatch must name the collective
	// the caller ran, and an AllReduce against a ReduceScatter both.
	for _, c := range []struct {
		name       string
		op         func(g *TCPGroup, n int) error
		other      func(g *TCPGroup, n int) error
		want, also string
	}{
		{"ReduceScatter lengths", reduceScatterOf, reduceScatterOf, "ReduceScatter", ""},
		{"AllGather lengths", allGatherOf, allGatherOf, "AllGather", ""},
		{"AllReduce against ReduceScatter", func(g *TCPGroup, n int) error { return g.AllReduce(tensor.Ones([]int{4 * n}), Sum) }, reduceScatterOf, "AllReduce", "ReduceScatter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gs := machineGroups(t, 2, 2)
			for _, g := range gs {
				g.SetTimeout(2 * time.Second)
			}
			errs := onAll(gs, func(g *TCPGroup) error {
				if g.Rank() == 3 {
					return c.other(g, 11)
				}
				return c.op(g, 10)
			})
			var all string
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				assert.NotContains(t, err.Error(), "ZeroOptimizer", "rank %d", r)
				all += err.Error() + "\n"
			}
			assert.Contains(t, all, c.want)
			assert.Contains(t, all, c.also)
		})
	}
}

// reduceScatterOf reduce-scatters 4 float32 tensors of n ones into one.
func reduceScatterOf(g *TCPGroup, n int) error {
	ins := make([]*tensor.Tensor, g.Size())
	for j := range ins {
		ins[j] = tensor.Ones([]int{n})
	}
	return g.ReduceScatter(tensor.Zeros([]int{n}, tensor.Float32), ins, Sum)
}

// allGatherOf all-gathers a float32 tensor of n ones.
func allGatherOf(g *TCPGroup, n int) error {
	outs := make([]*tensor.Tensor, g.Size())
	for j := range outs {
		outs[j] = tensor.Zeros([]int{n}, tensor.Float32)
	}
	return g.AllGather(outs, tensor.Ones([]int{n}))
}
