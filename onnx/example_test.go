package onnx_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// Load a model exported by torch.onnx.export, prepare a session once and
// run it (Run is safe to call from many goroutines).
func ExampleModel_NewSession() {
	m, err := onnx.Load("testdata/models/cnn_opset13/model.onnx")
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range m.Inputs {
		fmt.Println("input", in.Name, in.ElemType, in.Shape)
	}
	sess, err := m.NewSession(onnx.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	x := tensor.Zeros([]int{3, 3, 9, 9})
	out, err := sess.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	probs := out["probs"]
	fmt.Println("probs", probs.Shape())
	fmt.Printf("row sums to %.3f\n", probs.Select(0, 0).Sum(nil, false).Item())
	// Output:
	// input x FLOAT [N 3 9 9]
	// probs [3 5]
	// row sums to 1.000
}

// Run a model whose output is a sequence: RunValues takes and returns
// onnx.Sequence and onnx.Optional values beside tensors.
func ExampleSession_RunValues() {
	m, err := onnx.Load("testdata/values/split_sequence.onnx")
	if err != nil {
		log.Fatal(err)
	}
	for _, out := range m.Outputs {
		fmt.Println("output", out.Name, out.Kind)
	}
	sess, err := m.NewSession(onnx.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	x := tensor.Arange(0, 20, 1).To(tensor.Float32).Reshape(5, 4)
	out, err := sess.RunValues(context.Background(), map[string]any{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	for i, chunk := range out["chunks"].(onnx.Sequence) {
		fmt.Println("chunk", i, chunk.Shape(), chunk.Float32s()[0])
	}
	fmt.Println("count", out["count"].(*tensor.Tensor).Int64s())
	// Output:
	// output chunks sequence
	// output count tensor
	// chunk 0 [2 4] 0
	// chunk 1 [2 4] 8
	// chunk 2 [1 4] 16
	// count [3]
}

// Load a model from a source you do not trust with a memory budget and a
// deadline: loading stops at the deadline, and a session refuses any
// allocation the model asks for beyond its budget with an error naming the
// node and the bytes.
func ExampleLoadContext() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const budget = 64 << 20 // bytes
	m, err := onnx.LoadContext(ctx, "testdata/models/cnn_opset13/model.onnx", onnx.LoadOptions{MaxBytes: budget})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := m.NewSession(onnx.SessionOptions{MaxBytes: budget})
	if err != nil {
		log.Fatal(err)
	}
	out, err := sess.Run(ctx, map[string]*tensor.Tensor{"x": tensor.Zeros([]int{2, 3, 9, 9})})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("probs", out["probs"].Shape())
	// A budget smaller than the model's weights refuses it.
	_, err = onnx.LoadContext(ctx, "testdata/models/cnn_opset13/model.onnx", onnx.LoadOptions{MaxBytes: 2 << 10})
	fmt.Println(err != nil)
	// Output:
	// probs [2 5]
	// true
}

// Parse model bytes with a budget: ReadContext is LoadContext for a model
// that is not a file (it refuses external data).
func ExampleReadContext() {
	b, err := os.ReadFile("testdata/models/cnn_opset13/model.onnx")
	if err != nil {
		log.Fatal(err)
	}
	m, err := onnx.ReadContext(context.Background(), bytes.NewReader(b), onnx.LoadOptions{MaxBytes: 64 << 20})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(m.Inputs), "input,", len(m.Outputs), "output")
	fmt.Println("default budget is positive:", onnx.DefaultMaxBytes() > 0)
	// Output:
	// 1 input, 1 output
	// default budget is positive: true
}
