package autograd_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// evaluation is one way of evaluating a model: how its parameters are set
// up and how an input batch is wrapped.
type evaluation struct {
	name  string
	setup func(nn.Module)
	wrap  func(*tensor.Tensor) *autograd.Var
}

var evaluations = []evaluation{
	// Parameters frozen (nn.Freeze): nothing requires a gradient.
	{"frozen", nn.Freeze, autograd.New},
	// Parameters trainable, input marked: no-grad evaluation.
	{"nograd", func(nn.Module) {}, func(x *tensor.Tensor) *autograd.Var { return autograd.NoGrad(autograd.New(x)) }},
	// Parameters trainable, input plain: the tape is recorded (the cost
	// no-grad evaluation removes).
	{"recorded", func(nn.Module) {}, autograd.New},
}

// evaluateAll runs model over images in batches and returns the number of
// argmax predictions equal to class 0, so that the work cannot be skipped.
func evaluateAll(model nn.Module, images *tensor.Tensor, batch int, wrap func(*tensor.Tensor) *autograd.Var) int {
	n := images.Shape()[0]
	zeros := 0
	for start := 0; start < n; start += batch {
		x := images.Narrow(0, start, min(batch, n-start))
		out := nn.Call(model, wrap(x))
		for _, c := range out.Value().ArgMax(1, false).Int64s() {
			if c == 0 {
				zeros++
			}
		}
	}
	return zeros
}

// BenchmarkEvaluate10k evaluates 10,000 28x28 images (a Fashion-MNIST test
// set's worth), in batches of 100, through a small CNN of nn modules
// (noGradCNN), three ways: frozen parameters, no-grad evaluation of
// trainable parameters, and the recorded evaluation no-grad replaces. B/op
// is the heap allocated per 10,000 images; issue 24's target is nograd
// within 5% of frozen.
func BenchmarkEvaluate10k(b *testing.B) {
	images := tensor.NewGenerator(5).Randn([]int{10000, 1, 28, 28})
	for _, e := range evaluations {
		b.Run(e.name, func(b *testing.B) {
			model := noGradCNN(6)
			e.setup(model)
			b.ReportAllocs()
			for b.Loop() {
				evaluateAll(model, images, 100, e.wrap)
			}
		})
	}
}

// heapBytes returns the bytes f allocates on the heap.
func heapBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestNoGradAllocatesAsFrozen is a small version of BenchmarkEvaluate10k's
// target: evaluating through trainable parameters with a marked input
// allocates within 5% of evaluating with frozen parameters (and less than
// the recorded evaluation), and predicts the same.
func TestNoGradAllocatesAsFrozen(t *testing.T) {
	images := tensor.NewGenerator(7).Randn([]int{200, 1, 28, 28})
	bytes := map[string]uint64{}
	predicted := map[string]int{}
	for _, e := range evaluations {
		model := noGradCNN(8)
		e.setup(model)
		evaluateAll(model, images.Narrow(0, 0, 50), 50, e.wrap) // warm the packed-weight cache
		bytes[e.name] = heapBytes(func() { predicted[e.name] = evaluateAll(model, images, 50, e.wrap) })
	}
	t.Logf("heap bytes for 200 images: %v", bytes)
	assert.Equal(t, predicted["frozen"], predicted["nograd"])
	assert.Equal(t, predicted["frozen"], predicted["recorded"])
	assert.LessOrEqual(t, float64(bytes["nograd"]), 1.05*float64(bytes["frozen"]))
	assert.Less(t, bytes["nograd"], bytes["recorded"])
}
