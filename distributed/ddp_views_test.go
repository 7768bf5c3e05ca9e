package distributed

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor"
)

// TestDataParallelGradientsOutliveTheNextRound checks that the averaged
// gradients SyncGradients hands out (views of the bucket buffers) are not
// overwritten by the next round, and that writing to one of them does not
// leak into the next round's all-reduce.
func TestDataParallelGradientsOutliveTheNextRound(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(5), g, DDPOptions{})
		if err != nil {
			return err
		}
		ps := m.Parameters()
		round := func(base float64) error {
			for i, p := range ps {
				p.SetGrad(tensor.Full(p.Value().Shape(), base+float64(2*i+g.Rank())))
			}
			return m.SyncGradients()
		}
		if err := round(0); err != nil {
			return err
		}
		first := make([]*tensor.Tensor, len(ps))
		for i, p := range ps {
			first[i] = p.Grad()
		}
		first[0].CopyFrom(tensor.FullLike(first[0], -7)) // an in-place edit, as gradient clipping makes
		if err := round(10); err != nil {
			return err
		}
		for i, p := range ps {
			want := 10 + float64(2*i) + 0.5
			assert.Equal(t, tensor.Full(p.Value().Shape(), want).Float32s(), p.Grad().Float32s(), "round 2, parameter %d", i)
			old := float64(2*i) + 0.5
			if i == 0 {
				old = -7
			}
			assert.Equal(t, tensor.Full(p.Value().Shape(), old).Float32s(), first[i].Float32s(), "round 1, parameter %d", i)
		}
		return nil
	})
}
