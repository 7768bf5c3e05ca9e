package distributed

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// isShared reports whether x's memory is a SharedZeros region of g.
func isShared(g *TCPGroup, x *tensor.Tensor) bool {
	if g.shm == nil {
		return false
	}
	d, ok := tensor.HostData(x)
	if !ok {
		return false
	}
	reg, _ := g.shm.heap.find(sliceBytes(d))
	return reg != nil
}

// liveRegions counts g's live SharedZeros regions.
func liveRegions(g *TCPGroup) int {
	g.shm.heap.mu.Lock()
	defer g.shm.heap.mu.Unlock()
	return len(g.shm.heap.regions)
}

func TestSharedAllReduceMatchesSerialReference(t *testing.T) {
	// With 256-byte chunks a slot holds 256 bytes (64 per rank from 5
	// ranks on), so the larger sizes take many windows; 5 to 8 ranks
	// reduce their own piece from a copy, fewer in place.
	sizes := []int{7, 61, 333}
	for ranks := 1; ranks <= 8; ranks++ {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("ranks=%d/stream=%v", ranks, stream), func(t *testing.T) {
				gs := localGroups(t, ranks)
				requireAll(t, gs, func(g *TCPGroup) error {
					if g.shm != nil && stream {
						g.shm.streamFrom = 0
					}
					r := g.Rank()
					for _, dt := range allDTypes {
						ops := []ReduceOp{Sum, Max, Min, Prod}
						if dt.IsFloat() {
							ops = append(ops, Avg)
						}
						for _, size := range sizes {
							// A view at an offset of a larger tensor.
							whole, err := g.SharedZeros([]int{size + 5}, dt)
							if err != nil {
								return err
							}
							x := whole.Narrow(0, 3, size)
							assert.Equal(t, ranks > 1, isShared(g, x), "rank %d", r)
							for _, op := range ops {
								x.CopyFrom(rankTensor(r, int(op), size, dt))
								if err := g.AllReduce(x, op); err != nil {
									return err
								}
								assert.Equal(t, roundTo(serialReduce(ranks, int(op), size, dt, op), dt), x.Float64s(), "%s %s n=%d rank %d", op, dt, size, r)
								// The elements around the view are untouched.
								assert.Equal(t, []float64{0, 0, 0, 0, 0}, tensor.Concat([]*tensor.Tensor{whole.Narrow(0, 0, 3), whole.Narrow(0, size+3, 2)}, 0).Float64s())
							}
						}
					}
					return nil
				})
			})
		}
	}
}

func TestSharedAllReduceBitIdentical(t *testing.T) {
	requireAvgBitIdentical(t, localGroups(t, 3), func(g *TCPGroup) (*tensor.Tensor, error) { return g.SharedZeros([]int{5000}, tensor.Float32) })
}

// requireAvgBitIdentical averages, on every rank of gs, random floats
// whose sums round differently in different orders, in the float32
// tensor alloc returns, and requires the same bits on every rank.
func requireAvgBitIdentical(t *testing.T, gs []*TCPGroup, alloc func(g *TCPGroup) (*tensor.Tensor, error)) {
	t.Helper()
	got := make([][]float32, len(gs))
	requireAll(t, gs, func(g *TCPGroup) error {
		x, err := alloc(g)
		if err != nil {
			return err
		}
		x.CopyFrom(tensor.NewGenerator(uint64(g.Rank())).Normal(x.Shape(), 0, 1e3))
		if err := g.AllReduce(x, Avg); err != nil {
			return err
		}
		got[g.Rank()] = x.Float32s()
		return nil
	})
	for r := 1; r < len(gs); r++ {
		require.Equal(t, got[0], got[r], "rank %d", r)
	}
}

func TestSharedAndPlainTensorsMismatch(t *testing.T) {
	gs := localGroups(t, 2)
	errs := onAll(gs, func(g *TCPGroup) error {
		x, err := g.SharedZeros([]int{1000}, tensor.Float32)
		if err != nil {
			return err
		}
		if g.Rank() == 1 {
			x = tensor.Zeros([]int{1000}) // not shared: the ranks disagree
		}
		return g.AllReduce(x, Sum)
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
	}
	assert.ErrorContains(t, errs[0], "one all-reduces a tensor of SharedZeros and the other does not")
}

func TestSharedZerosWithoutSharedMemory(t *testing.T) {
	gs, err := newLocalGroups(context.Background(), 2, Config{Timeout: 20 * time.Second, DisableSharedMemory: true})
	require.NoError(t, err)
	for _, g := range gs {
		t.Cleanup(func() { g.Close() })
	}
	requireAll(t, gs, func(g *TCPGroup) error {
		x, err := g.SharedZeros([]int{2, 3}, tensor.Int64)
		if err != nil {
			return err
		}
		assert.Equal(t, []int{2, 3}, x.Shape())
		assert.Equal(t, make([]float64, 6), x.Float64s())
		x.Fill(float64(g.Rank() + 1))
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		assert.Equal(t, []float64{3, 3, 3, 3, 3, 3}, x.Float64s())
		return nil
	})
}

func TestSharedZerosReleased(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		x, err := g.SharedZeros([]int{4096}, tensor.Float64)
		if err != nil {
			return err
		}
		assert.Equal(t, []int{4096}, x.Shape())
		assert.Equal(t, make([]float64, 4096), x.Float64s())
		return nil
	})
	// The tensors are unreachable now: their cleanups unmap the regions.
	for range 200 {
		runtime.GC()
		if liveRegions(gs[0]) == 0 && liveRegions(gs[1]) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("regions still live: %d, %d", liveRegions(gs[0]), liveRegions(gs[1]))
}
