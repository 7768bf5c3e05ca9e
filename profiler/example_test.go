package profiler_test

import (
	"bytes"
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/profiler"
	"github.com/emberml/ember/tensor"
)

// A profiler recording the second and third steps of a small training
// loop (one step waited, one warmed up): the table of the window sums each
// op's calls, times, bytes and FLOPs, and the trace opens in Perfetto.
func ExampleProfiler() {
	g := tensor.NewGenerator(0)
	w1 := autograd.Param(g.Randn([]int{8, 16}))
	w2 := autograd.Param(g.Randn([]int{16, 4}))
	batch := g.Randn([]int{32, 8})

	var window *profiler.Trace
	p := profiler.New(profiler.Options{
		Schedule:     profiler.Schedule{Wait: 1, Warmup: 1, Active: 2, Repeat: 1},
		OnTraceReady: func(t *profiler.Trace) { window = t },
	})
	for range 5 {
		x := p.Watch(autograd.New(batch))
		loss := x.MatMul(w1).Relu().MatMul(w2).Square().Mean(nil, false)
		if err := loss.Backward(); err != nil {
			panic(err)
		}
		p.Step()
	}

	// Print(window.Table(profiler.SortBySelfTime, 10)) shows the times;
	// the calls and FLOPs do not depend on the machine:
	for _, op := range window.KeyAverages(profiler.SortByCalls) {
		if op.FLOPs > 0 {
			fmt.Printf("%s: %d calls, %d FLOPs\n", op.Name, op.Calls, op.FLOPs)
		}
	}
	var trace bytes.Buffer // or an *os.File named trace.json
	if err := window.WriteChromeTrace(&trace); err != nil {
		panic(err)
	}
	// Per step: two products forward (2·32·16·8 + 2·32·4·16 FLOPs), and
	// backward the second layer's input and weight gradients and the
	// first layer's weight gradient (its input needs none).

	// Output:
	// MatMul: 10 calls, 57344 FLOPs
}
