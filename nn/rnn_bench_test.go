package nn_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// BenchmarkGRULongSequence is a forward and backward pass of a GRU over 150
// time steps (the sequence length of the gru bench workload), where the
// per-step gradient bookkeeping dominates if it grows with the length.
func BenchmarkGRULongSequence(b *testing.B) {
	g := tensor.NewGenerator(1)
	m := nn.NewGRU(g, 125, 100, nn.RNNOptions{})
	x := autograd.New(g.Randn([]int{150, 16, 125}))
	b.ReportAllocs()
	for b.Loop() {
		m.ZeroGrad()
		out, _ := m.ForwardState(x, nil, nil)
		if err := out.Sum(nil, false).Backward(); err != nil {
			b.Fatal(err)
		}
	}
}
