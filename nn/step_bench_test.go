package nn_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// BenchmarkMLPStep times one training step of examples/ddp's MNIST
// perceptron (784→256→10, ReLU, cross-entropy, Adam) at the batch sizes a
// rank sees with one and two processes: the cost of a step that does not
// shrink with the batch is what limits data-parallel scaling. It holds a
// 188 MB slice, as examples/ddp holds the MNIST training set: with a small
// heap the garbage collector would run every few steps and hand the next
// step the memory the last one freed, still in cache, which a training
// program with its data in memory does not get.
func BenchmarkMLPStep(b *testing.B) {
	ballast := make([]float32, 47<<20)
	defer runtime.KeepAlive(ballast)
	for _, batch := range []int{32, 64} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			g := tensor.NewGenerator(1)
			net := nn.NewSequential(nn.NewLinear(g, 784, 256, true), nn.NewReLU(), nn.NewLinear(g, 256, 10, true))
			opt := optim.NewAdam(net.Parameters(), optim.AdamOptions{LR: 1e-3})
			lossFn := nn.NewCrossEntropyLoss()
			x := g.Rand([]int{batch, 784}, tensor.Float32)
			y := g.RandInt([]int{batch}, 0, 10)
			b.ReportAllocs()
			for b.Loop() {
				opt.ZeroGrad()
				loss := lossFn.Forward(net.Forward(autograd.New(x)), y)
				if err := loss.Backward(); err != nil {
					b.Fatal(err)
				}
				if err := opt.Step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
