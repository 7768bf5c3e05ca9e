package distributed

import (
	"sync"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// BenchmarkDataParallelStep measures one training step of the MNIST MLP
// (784-256-10, Adam) on each of 2 loopback ranks with 32 samples each:
// forward, backward and the update, with the all-reduce and the whole Adam
// step on every rank, or with ZeroOptimizer. It reports the CPU time of
// the process per step as well.
func BenchmarkDataParallelStep(b *testing.B) {
	const ranks, perRank = 2, 32
	for _, zero := range []bool{false, true} {
		name := "allreduce"
		if zero {
			name = "zero"
		}
		b.Run(name, func(b *testing.B) {
			gs, err := newLocalGroups(b.Context(), ranks, Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, g := range gs {
					g.Close()
				}
			}()
			type rank struct {
				m    *DDP
				opt  Optimizer
				x, y *tensor.Tensor
			}
			rs := make([]rank, ranks)
			var wg sync.WaitGroup
			for i, g := range gs {
				wg.Go(func() {
					gen := tensor.NewGenerator(1)
					net := nn.NewSequential(nn.NewLinear(gen, 784, 256, true), nn.NewReLU(), nn.NewLinear(gen, 256, 10, true))
					m, err := DataParallel(net, g, DDPOptions{})
					if err != nil {
						b.Error(err)
						return
					}
					adam := func(ps []*autograd.Var) Optimizer { return optim.NewAdam(ps, optim.AdamOptions{}) }
					var opt Optimizer = adam(m.Parameters())
					if zero {
						opt = NewZeroOptimizer(m, adam)
					}
					rs[i] = rank{m, opt, gen.Rand([]int{perRank, 784}), gen.RandInt([]int{perRank}, 0, 10)}
				})
			}
			wg.Wait()
			loss := nn.NewCrossEntropyLoss()
			cpu := cpuSeconds()
			b.ResetTimer()
			for _, r := range rs {
				wg.Go(func() {
					for range b.N {
						r.opt.ZeroGrad()
						if err := loss.Forward(r.m.Forward(autograd.New(r.x)), r.y).Backward(); err != nil {
							b.Error(err)
							return
						}
						if err := r.m.SyncGradients(); err != nil {
							b.Error(err)
							return
						}
						if err := r.opt.Step(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e3, "cpu-ms/step")
		})
	}
}
