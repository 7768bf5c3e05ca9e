package distributed

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestCombineRanksSplitRuns checks combineRanks' one-pass float sum
// against adding the ranks' contributions one by one when the ranks hand
// them in runs cut at different places, as a ZeRO rank's own share comes
// from several tensors: the bits must agree for every rank count, dtype
// and cut.
func TestCombineRanksSplitRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const lo, n = 3, 41
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for size := 1; size <= 6; size++ {
			for _, op := range []ReduceOp{Sum, Avg} {
				t.Run(fmt.Sprintf("%v/ranks=%d/%v", dt, size, op), func(t *testing.T) {
					contribs := make([]vec, size)
					cuts := make([][]int, size)
					for j := range contribs {
						vals := make([]float64, n)
						for i := range vals {
							vals[i] = rng.NormFloat64() * 100
						}
						contribs[j] = hostVec(tensor.FromSlice(vals).To(dt))
						// Rank j's runs end at random cuts (none for some).
						cuts[j] = []int{0}
						for c := 1; c < n; c++ {
							if rng.IntN(4) == 0 {
								cuts[j] = append(cuts[j], c)
							}
						}
						cuts[j] = append(cuts[j], n)
					}
					contrib := func(j int, use func(int, []byte)) {
						es := contribs[j].elemSize()
						raw := sliceBytes(contribs[j].data)
						for k := 1; k < len(cuts[j]); k++ {
							a, b := cuts[j][k-1], cuts[j][k]
							use(a, raw[a*es:b*es])
						}
					}
					var runs []rankRun
					for j := range size {
						contrib(j, func(at int, b []byte) { runs = append(runs, rankRun{j, at, b}) })
					}
					require.True(t, sumWhole(newVec(dt, lo+n), lo, lo+n, size, runs, op), "the one-pass sum refused")
					fused := newVec(dt, lo+n)
					combineRanks(fused, lo, lo+n, size, contrib, op)
					// The reference: rank by rank, elementwise.
					want := newVec(dt, lo+n)
					want.decode(lo, lo+n, sliceBytes(contribs[0].data))
					for j := 1; j < size; j++ {
						want.reduceBytes(lo, lo+n, sliceBytes(contribs[j].data), op)
					}
					if op == Avg {
						vec{dt, want.slice(lo, lo+n)}.divide(size)
					}
					require.Equal(t, want.data, fused.data)
				})
			}
		}
	}
}
