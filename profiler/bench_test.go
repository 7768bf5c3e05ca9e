package profiler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/profiler"
	"github.com/emberml/ember/tensor"
)

// cifarCNN is the CNN of "ember bench -workload cnn" (the CIFAR-10 CNN of
// the DeepLearningFrameworks benchmark): two blocks of conv3×3-relu-
// conv3×3, maxpool 2, relu, dropout, then fc 6400→512, relu, dropout, fc
// 512→10.
type cifarCNN struct {
	nn.Base
	conv1, conv2, conv3, conv4 *nn.Conv2d
	fc1, fc2                   *nn.Linear
	drop1, drop2, drop3        *nn.Dropout
	pool                       *nn.MaxPool2d
}

func newCIFARCNN(g *tensor.Generator) *cifarCNN {
	same := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	k3 := [2]int{3, 3}
	m := &cifarCNN{
		conv1: nn.NewConv2d(g, 3, 50, k3, same, true),
		conv2: nn.NewConv2d(g, 50, 50, k3, same, true),
		conv3: nn.NewConv2d(g, 50, 100, k3, same, true),
		conv4: nn.NewConv2d(g, 100, 100, k3, same, true),
		fc1:   nn.NewLinear(g, 100*8*8, 512, true),
		fc2:   nn.NewLinear(g, 512, 10, true),
		drop1: nn.NewDropout(0.25, g),
		drop2: nn.NewDropout(0.25, g),
		drop3: nn.NewDropout(0.5, g),
		pool:  nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}}),
	}
	for name, mod := range map[string]nn.Module{"conv1": m.conv1, "conv2": m.conv2, "conv3": m.conv3, "conv4": m.conv4,
		"fc1": m.fc1, "fc2": m.fc2, "drop1": m.drop1, "drop2": m.drop2, "drop3": m.drop3, "pool": m.pool} {
		m.RegisterModule(name, mod)
	}
	return m
}

func (m *cifarCNN) Forward(x *autograd.Var) *autograd.Var {
	x = m.drop1.Forward(m.pool.Forward(m.conv2.Forward(m.conv1.Forward(x).Relu())).Relu())
	x = m.drop2.Forward(m.pool.Forward(m.conv4.Forward(m.conv3.Forward(x).Relu())).Relu())
	x = m.drop3.Forward(m.fc1.Forward(x.Flatten(1, -1)).Relu())
	return m.fc2.Forward(x)
}

// BenchmarkCNNTrainStep times training steps of the cnn workload (batch
// 64, cross-entropy, SGD with momentum) not profiled, profiled (every op
// timed and kept, with shapes, bytes and FLOPs) and profiled with pprof
// labels, alternated step by step so that all three meet the same load on
// a shared machine. It reports each variant's mean time per step and the
// median over iterations of the ratio of a profiled step to the plain step
// next to it:
//
//	go test ./profiler -run '^$' -bench CNNTrainStep -benchtime 10x
func BenchmarkCNNTrainStep(b *testing.B) {
	g := tensor.NewGenerator(0)
	m := newCIFARCNN(g)
	m.Train(true)
	x := g.Randn([]int{64, 3, 32, 32})
	y := g.RandInt([]int{64}, 0, 10)
	opt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.01, Momentum: 0.9})
	lossFn := nn.NewCrossEntropyLoss()
	step := func(in *autograd.Var) {
		opt.ZeroGrad()
		loss := lossFn.Forward(m.Forward(in), y)
		if err := loss.Backward(); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
	step(autograd.New(x)) // warm caches and the allocator
	profiled := profiler.New(profiler.Options{})
	labelled := profiler.New(profiler.Options{PprofLabels: true})
	alternate(b, []func(){
		func() { step(autograd.New(x)) },
		func() { step(profiled.Watch(autograd.New(x))); profiled.Step() },
		func() { step(labelled.Watch(autograd.New(x))); labelled.Step() },
	}, []string{"off", "profiled", "labels"})
	b.ReportMetric(float64(len(profiled.Trace().Events))/float64(b.N), "events/step")
}

// alternate runs each of runs once per iteration, in turn, and reports the
// mean time of each (name-ns/run) and the median ratio of each run after
// the first to the first (name/off).
func alternate(b *testing.B, runs []func(), names []string) {
	total := make([]time.Duration, len(runs))
	ratios := make([][]float64, len(runs))
	took := make([]time.Duration, len(runs))
	for b.Loop() {
		for i, run := range runs {
			start := time.Now()
			run()
			took[i] = time.Since(start)
			total[i] += took[i]
		}
		for i := 1; i < len(runs); i++ {
			ratios[i] = append(ratios[i], float64(took[i])/float64(took[0]))
		}
	}
	for i, name := range names {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N), name+"-ns/run")
		if i > 0 {
			slices.Sort(ratios[i])
			b.ReportMetric(ratios[i][len(ratios[i])/2], name+"/"+names[0])
		}
	}
}

// BenchmarkSmallOps runs 24 elementwise ops on 16-element tensors and
// their backward, not profiled and profiled, alternated: the profiler's
// cost per event where ops are too small to hide it (the difference of the
// two times over events/iter).
func BenchmarkSmallOps(b *testing.B) {
	g := tensor.NewGenerator(1)
	x := autograd.New(g.Randn([]int{16}))
	w := autograd.Param(g.Randn([]int{16}))
	chain := func(x *autograd.Var) {
		w.ZeroGrad()
		h := x
		for range 6 {
			h = h.Mul(w).Add(x).Tanh().MulScalar(0.5)
		}
		if err := h.Sum(nil, false).Backward(); err != nil {
			b.Fatal(err)
		}
	}
	// A schedule that hands each step's trace over keeps the trace from
	// growing over a long run.
	events := 0
	p := profiler.New(profiler.Options{Schedule: profiler.Schedule{Active: 1}, OnTraceReady: func(t *profiler.Trace) { events = len(t.Events) }})
	alternate(b, []func(){
		func() { chain(x) },
		func() { chain(p.Watch(x)); p.Step() },
	}, []string{"off", "profiled"})
	b.ReportMetric(float64(events), "events/iter")
}
