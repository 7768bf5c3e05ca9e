package tensor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// The fused float32 GRUSequence (dense operands, rows split into chunks
// per thread) agrees with the step-by-step tensor-op path (reached through
// a transposed weight), forward and backward, in both directions, with and
// without bias.
func TestGRUSequenceFusedMatchesSteps(t *testing.T) {
	t.Cleanup(func() { tensor.SetNumThreads(0) })
	g := tensor.NewGenerator(21)
	steps, n, hidden := 5, 40, 27
	gi := g.Randn([]int{steps, n, 3 * hidden})
	h0 := g.Randn([]int{n, hidden})
	whh := g.Randn([]int{3 * hidden, hidden}).MulScalar(0.3)
	whhT := whh.T().Contiguous().T() // same values, not contiguous
	bhh := g.Randn([]int{3 * hidden})
	gout := g.Randn([]int{steps, n, hidden})
	for _, threads := range []int{1, 3} {
		tensor.SetNumThreads(threads)
		for _, reverse := range []bool{false, true} {
			for _, b := range []*tensor.Tensor{bhh, nil} {
				name := fmt.Sprintf("threads=%d reverse=%t bias=%t", threads, reverse, b != nil)
				out, gates, gh := tensor.GRUSequence(gi, h0, whh, b, reverse)
				out2, gates2, gh2 := tensor.GRUSequence(gi, h0, whhT, b, reverse)
				assert.InDeltaSlice(t, out2.Float32s(), out.Float32s(), 1e-5, name)
				assert.InDeltaSlice(t, gates2.Float32s(), gates.Float32s(), 1e-5, name)
				assert.InDeltaSlice(t, gh2.Float32s(), gh.Float32s(), 1e-4, name)
				d := make([][]float32, 4)
				d2 := make([][]float32, 4)
				a, bb, c, e := tensor.GRUSequenceBackward(gout, h0, whh, out, gates, gh, b != nil, reverse)
				a2, bb2, c2, e2 := tensor.GRUSequenceBackward(gout, h0, whhT, out2, gates2, gh2, b != nil, reverse)
				d[0], d[1], d[2] = a.Float32s(), bb.Float32s(), c.Float32s()
				d2[0], d2[1], d2[2] = a2.Float32s(), bb2.Float32s(), c2.Float32s()
				if b != nil {
					d[3], d2[3] = e.Float32s(), e2.Float32s()
				} else {
					assert.Nil(t, e)
					assert.Nil(t, e2)
				}
				for i := range d {
					assert.InDeltaSlice(t, d2[i], d[i], 2e-4, "%s gradient %d", name, i)
				}
			}
		}
	}
	require.Panics(t, func() { tensor.GRUSequence(gi, h0, whh.T(), nil, false) })
}
