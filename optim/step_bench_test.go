package optim_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// mlpStep builds the MNIST-size MLP (784-512-512-10, float32, batch 128) on
// synthetic data and returns one training step: forward, cross-entropy,
// backward and the optimizer's Step.
func mlpStep(b *testing.B, newOpt func([]*autograd.Var) optim.Optimizer) func() {
	b.Helper()
	g := tensor.NewGenerator(1)
	model := nn.NewSequential(
		nn.NewLinear(g, 784, 512, true),
		nn.NewReLU(),
		nn.NewLinear(g, 512, 512, true),
		nn.NewReLU(),
		nn.NewLinear(g, 512, 10, true),
	)
	x := autograd.New(g.Randn([]int{128, 784}))
	y := g.RandInt([]int{128}, 0, 10)
	loss := nn.NewCrossEntropyLoss()
	opt := newOpt(model.Parameters())
	return func() {
		opt.ZeroGrad()
		l := loss.Forward(model.Forward(x), y)
		if err := l.Backward(); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStep(b *testing.B, step func()) {
	step() // create the optimizer state outside the timed loop
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// BenchmarkMLPStepSGDMomentum is one training step of the MLP with SGD
// (momentum 0.9).
func BenchmarkMLPStepSGDMomentum(b *testing.B) {
	benchStep(b, mlpStep(b, func(p []*autograd.Var) optim.Optimizer {
		return optim.NewSGD(p, optim.SGDOptions{LR: 0.01, Momentum: 0.9})
	}))
}

// BenchmarkMLPStepAdam is one training step of the MLP with Adam.
func BenchmarkMLPStepAdam(b *testing.B) {
	benchStep(b, mlpStep(b, func(p []*autograd.Var) optim.Optimizer {
		return optim.NewAdam(p, optim.AdamOptions{})
	}))
}

// BenchmarkOptimizerStepOnly times only the optimizers' Step over the MLP's
// parameters (gradients computed once, kept between steps).
func BenchmarkOptimizerStepOnly(b *testing.B) {
	for _, tc := range []struct {
		name   string
		newOpt func([]*autograd.Var) optim.Optimizer
	}{
		{"SGDMomentum", func(p []*autograd.Var) optim.Optimizer {
			return optim.NewSGD(p, optim.SGDOptions{LR: 0.01, Momentum: 0.9})
		}},
		{"Adam", func(p []*autograd.Var) optim.Optimizer { return optim.NewAdam(p, optim.AdamOptions{}) }},
		{"AdamW", func(p []*autograd.Var) optim.Optimizer {
			return optim.NewAdamW(p, optim.AdamOptions{WeightDecay: optim.DefaultAdamWWeightDecay})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := tensor.NewGenerator(2)
			shapes := [][]int{{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}}
			ps := make([]*autograd.Var, len(shapes))
			for i, s := range shapes {
				ps[i] = autograd.Param(g.Randn(s))
				ps[i].Sum(nil, false).MulScalar(0.5).Backward()
			}
			opt := tc.newOpt(ps)
			benchStep(b, func() {
				if err := opt.Step(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
