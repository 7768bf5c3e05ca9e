package main

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// workload is one benchmark of "ember bench". Each mirrors the workload of
// the same name in bench/torch_workloads.py (model, batch, optimizer, loss,
// synthetic data, default steps and warm-up).
type workload struct {
	name          string
	steps, warmup int
	// gpu marks the workloads "-workload all" runs on a GPU; gpuOnly those
	// it runs only there (the CPU's "all" leaves them out).
	gpu, gpuOnly bool
	// build constructs the model, optimizer and data. tiny shrinks the batch
	// (and the GRU's sequence and vocabulary) for tests.
	build func(tiny bool) (*benchRun, error)
}

// benchRun is a built workload: one step and its batch size.
type benchRun struct {
	step  func() error
	batch int
	// loss returns the loss of the latest training step (NaN before the
	// first, or for inference workloads).
	loss func() float64
	// model and data are what "-device" moves to the device before the
	// first step (in place: step keeps using the same tensors).
	model nn.Module
	data  []*tensor.Tensor
	// watch, when set (-profile, -trace), marks each step's input for a
	// profiler; steps pass their input through in.
	watch func(*autograd.Var) *autograd.Var
}

// in returns the step's input x, marked for the profiler when one watches.
func (r *benchRun) in(x *autograd.Var) *autograd.Var {
	if r.watch == nil {
		return x
	}
	return r.watch(x)
}

// workloads returns every workload in the order "-workload all" runs them.
func workloads() []workload {
	return []workload{
		{name: "gemm", gpu: true},
		{name: "mlp", steps: 200, warmup: 20, build: buildMLP, gpu: true},
		{name: "cnn", steps: 30, warmup: 5, build: buildCNN, gpu: true},
		{name: "resnet18_b1", build: buildResNet(18, 1), steps: 40, warmup: 3},
		{name: "resnet18_b16", build: buildResNet(18, 16), steps: 8, warmup: 3},
		{name: "resnet50_b1", build: buildResNet(50, 1), steps: 20, warmup: 3},
		{name: "resnet50_b16", build: buildResNet(50, 16), steps: 5, warmup: 3},
		{name: "resnet50_b64", build: buildResNet(50, 64), steps: 20, warmup: 5, gpu: true, gpuOnly: true},
		{name: "resnet50_train_b64", build: buildResNetTrain(50, 64), steps: 20, warmup: 5, gpu: true, gpuOnly: true},
		{name: "gru", steps: 30, warmup: 5, build: buildGRU},
		{name: "transformer", steps: 50, warmup: 5, build: buildTransformer},
	}
}

// trainStep returns one training step: zero the gradients, cross-entropy of
// the model's logits against y, backward, optimizer step.
func trainStep(m nn.Module, opt optim.Optimizer, x, y *tensor.Tensor) *benchRun {
	m.Train(true)
	lossf := nn.NewCrossEntropyLoss()
	in := autograd.New(x)
	// The loss stays where it was computed until loss() reads it, so a step
	// on a GPU does not wait for a copy to the host.
	var last *tensor.Tensor
	r := &benchRun{
		batch: x.Shape()[0],
		loss: func() float64 {
			if last == nil {
				return math.NaN()
			}
			return last.Item()
		},
		model: m,
		data:  []*tensor.Tensor{x, y},
	}
	r.step = func() error {
		opt.ZeroGrad()
		loss := lossf.Forward(m.Forward(r.in(in)), y)
		if err := loss.Backward(); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		last = loss.Value()
		return opt.Step()
	}
	return r
}

// buildMLP is the 784-512-512-10 ReLU MLP, batch 128, cross-entropy, SGD
// (lr 0.01, momentum 0.9).
func buildMLP(tiny bool) (*benchRun, error) {
	batch := 128
	if tiny {
		batch = 2
	}
	pg := tensor.NewGenerator(0)
	m := nn.NewSequential(
		nn.NewLinear(pg, 784, 512, true), nn.NewReLU(),
		nn.NewLinear(pg, 512, 512, true), nn.NewReLU(),
		nn.NewLinear(pg, 512, 10, true),
	)
	dg := tensor.NewGenerator(0)
	x := dg.Randn([]int{batch, 784})
	y := dg.RandInt([]int{batch}, 0, 10)
	opt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.01, Momentum: 0.9})
	return trainStep(m, opt, x, y), nil
}

// cifarCNN is the CIFAR-10 CNN of the DeepLearningFrameworks benchmark
// (ilkarman, PyTorch_CNN notebook): two blocks of conv3×3-relu-conv3×3,
// maxpool 2, relu, dropout .25, then fc 6400→512, relu, dropout .5, fc 512→10.
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
	for _, c := range []struct {
		name string
		mod  nn.Module
	}{
		{"conv1", m.conv1}, {"conv2", m.conv2}, {"conv3", m.conv3}, {"conv4", m.conv4},
		{"fc1", m.fc1}, {"fc2", m.fc2}, {"drop1", m.drop1}, {"drop2", m.drop2}, {"drop3", m.drop3},
		{"pool", m.pool},
	} {
		m.RegisterModule(c.name, c.mod)
	}
	return m
}

// Forward maps [N, 3, 32, 32] images to [N, 10] logits.
func (m *cifarCNN) Forward(x *autograd.Var) *autograd.Var {
	x = m.drop1.Forward(m.pool.Forward(m.conv2.Forward(m.conv1.Forward(x).Relu())).Relu())
	x = m.drop2.Forward(m.pool.Forward(m.conv4.Forward(m.conv3.Forward(x).Relu())).Relu())
	x = m.drop3.Forward(m.fc1.Forward(x.Flatten(1, -1)).Relu())
	return m.fc2.Forward(x)
}

// buildCNN is the CIFAR-10 CNN, batch 64, cross-entropy, SGD (lr 0.01,
// momentum 0.9).
func buildCNN(tiny bool) (*benchRun, error) {
	batch := 64
	if tiny {
		batch = 2
	}
	m := newCIFARCNN(tensor.NewGenerator(0))
	dg := tensor.NewGenerator(0)
	x := dg.Randn([]int{batch, 3, 32, 32})
	y := dg.RandInt([]int{batch}, 0, 10)
	opt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.01, Momentum: 0.9})
	return trainStep(m, opt, x, y), nil
}

// runGEMM times square float32 products a·b with tensor.MatMul for each
// size: two warm-up products, then o.steps samples (default 15), each the
// mean over enough products to last about 50 ms, as bench/torch_workloads.py.
// On a GPU the operands live on the device, each sample ends with a device
// synchronization, and the rate is reported in TFLOP/s too.
func runGEMM(o benchOptions) ([]benchResult, error) {
	samples := 15
	if o.steps > 0 {
		samples = o.steps
	}
	warmup := 2
	if o.warmup > 0 {
		warmup = o.warmup
	}
	var out []benchResult
	for _, n := range o.sizes {
		resetPeakRSS()
		if o.dev.gpu() {
			runtime.GC()
		}
		base, err := o.dev.resetPeak()
		if err != nil {
			return nil, err
		}
		g := tensor.NewGenerator(0)
		a := g.Randn([]int{n, n})
		b := g.Randn([]int{n, n})
		if o.dev.gpu() {
			for _, t := range []*tensor.Tensor{a, b} {
				if err := t.MoveStorageTo(o.dev.dev); err != nil {
					return nil, err
				}
			}
		}
		t0 := time.Now()
		for range warmup {
			a.MatMul(b)
		}
		per := time.Since(t0).Seconds() / float64(warmup)
		if o.dev.gpu() {
			// The warm-up products were only queued (and the first one
			// set cuBLAS up): time one product on its own.
			if err := o.dev.sync(); err != nil {
				return nil, err
			}
			t0 = time.Now()
			a.MatMul(b)
			if err := o.dev.sync(); err != nil {
				return nil, err
			}
			per = time.Since(t0).Seconds()
		}
		inner := max(1, int(0.05/max(per, 1e-6)))
		if o.tiny {
			inner = 1
		}
		times := make([]float64, 0, samples)
		for range samples {
			t0 := time.Now()
			for range inner {
				a.MatMul(b)
			}
			if err := o.dev.sync(); err != nil {
				return nil, err
			}
			times = append(times, time.Since(t0).Seconds()/float64(inner))
			if o.dev.gpu() {
				// Device memory of the dropped products returns to the
				// allocator when the collector finds them: collect
				// between samples, untimed, so the next sample does not
				// run out of memory.
				runtime.GC()
			}
		}
		med := median(times)
		flops := 2 * float64(n) * float64(n) * float64(n) / med
		r := benchResult{
			Workload:    "gemm",
			Threads:     o.threads,
			Batch:       1,
			MedianMS:    round3(med * 1e3),
			SamplesPerS: round3(1 / med),
			PeakRSSMB:   peakRSSMB(),
			Steps:       samples,
			N:           n,
			GFLOPS:      round3(flops / 1e9),
			TF32:        o.tf32,
		}
		if o.dev.gpu() {
			r.TFLOPS = round3(flops / 1e12)
		}
		if err := o.dev.annotate(&r, base); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
