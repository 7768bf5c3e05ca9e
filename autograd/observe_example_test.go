package autograd_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// A gradient that turns infinite is traced back to the op that made it
// and the line that created the op.
func ExampleDetectAnomaly() {
	x := autograd.DetectAnomaly(autograd.New(tensor.FromSlice([]float32{0, 1, 4}, 3)), autograd.AnomalyOptions{})
	w := autograd.Param(tensor.FromSlice([]float32{1, 2, 3}, 3))
	loss := x.Mul(w).Sqrt().Sum(nil, false) // d√u/du is infinite at u = 0

	err := loss.Backward()
	var anomaly *autograd.AnomalyError
	if errors.As(err, &anomaly) {
		fmt.Printf("%s: %d Inf in the gradient for input %d, inputs %v\n", anomaly.Op, anomaly.Infs, anomaly.Input, anomaly.InputShapes)
		fmt.Println("created in", filepath.Base(anomaly.Site[0].File))
	}
	// Output:
	// Sqrt: 1 Inf in the gradient for input 0, inputs [[3]]
	// created in observe_example_test.go
}

// printObserver prints the ops it is told of as they begin, indented by
// nesting.
type printObserver struct{ depth int }

func (o *printObserver) BeginOp(op string, backward bool) {
	if backward {
		op += " (backward)"
	}
	fmt.Printf("%s%s\n", strings.Repeat("  ", o.depth), op)
	o.depth++
}

func (o *printObserver) EndOp(autograd.OpEvent) { o.depth-- }

// An observer sees the ops computed from the input it marks, forward and
// backward; the ops a gradient rule runs are nested in its backward. Here
// MatMul's rule runs one product, for the parameter's gradient: the input
// needs none.
func ExampleObserve() {
	x := autograd.Observe(autograd.New(tensor.Ones([]int{2, 3})), &printObserver{})
	w := autograd.Param(tensor.Ones([]int{3, 4}))
	loss := x.MatMul(w).Relu().Sum(nil, false)
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	// Output:
	// MatMul
	// Relu
	// Sum
	// Sum (backward)
	//   Reshape
	//   Expand
	// Relu (backward)
	//   ReluBackward
	// MatMul (backward)
	//   Transpose
	//   MatMul
	//   Reshape
}

// Integer ids get no gradient, but an embedding of them passes their marks
// on: the observer of the ids sees the lookup and what follows it.
func ExampleEmbeddingOf() {
	ids := autograd.Observe(autograd.New(tensor.FromSlice([]int64{2, 0, 1}, 3)), &printObserver{})
	table := autograd.Param(tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 3, 2))
	rows := autograd.EmbeddingOf(ids, table).Relu()
	fmt.Println(rows.Value().Float32s())
	// Output:
	// Embedding
	// Relu
	// [4 5 0 1 2 3]
}

// A value computed by a kernel outside the tape (an inference-only fused
// kernel) is reported to the inputs' observer as an op of its own.
func ExampleUnrecordedOp() {
	x := autograd.Observe(autograd.New(tensor.FromSlice([]float32{-1, 2}, 2)), &printObserver{})
	y := autograd.UnrecordedOp("ScaledRelu", func() *tensor.Tensor {
		return x.Value().Relu().MulScalar(3)
	}, x)
	fmt.Println(y.Value().Float32s(), y.Observer() != nil)
	// Output:
	// ScaledRelu
	// [0 6] true
}
