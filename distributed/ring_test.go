package distributed

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestRingReduceScatterAndAllGather(t *testing.T) {
	for _, w := range []int{1, 2, 3, 4} {
		for _, n := range []int{1, 3, 67, 1001} {
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
				t.Run(fmt.Sprintf("W=%d/n=%d/%s", w, n, dt), func(t *testing.T) {
					gs := localGroups(t, w)
					requireAll(t, gs, func(g *TCPGroup) error {
						r := g.Rank()
						x := rankTensor(r, 0, n, dt)
						if err := wait(g.ringReduceScatterAsync(x, Avg)); err != nil {
							return err
						}
						lo, hi := ringSegment(r+1, n, w)
						got := x.Float64s()
						for i := lo; i < hi; i++ {
							sum := 0.0
							for j := range w {
								sum += val(j, i, 0, dt)
							}
							assert.InDelta(t, sum/float64(w), got[i], 1e-6, "rank %d element %d", r, i)
						}
						// Each rank contributes its segment r+1 of y.
						y := tensor.Full([]int{n}, -1, dt)
						for i := lo; i < hi; i++ {
							y.Narrow(0, i, 1).Fill(float64(i + 1))
						}
						if err := wait(g.ringAllGatherAsync(y)); err != nil {
							return err
						}
						want := make([]float64, n)
						for i := range want {
							want[i] = float64(i + 1)
						}
						assert.Equal(t, want, y.Float64s(), "rank %d", r)
						return nil
					})
				})
			}
		}
	}
}

func TestRingSegmentsCoverInOrder(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5} {
		for _, n := range []int{0, 1, 4, 17} {
			end := 0
			for i := range size {
				lo, hi := ringSegment(i, n, size)
				require.Equal(t, end, lo)
				require.LessOrEqual(t, lo, hi)
				end = hi
			}
			assert.Equal(t, n, end)
			lo, hi := ringSegment(-1, n, size)
			wlo, whi := ringSegment(size-1, n, size)
			assert.Equal(t, [2]int{wlo, whi}, [2]int{lo, hi}, "segments wrap round")
		}
	}
}
