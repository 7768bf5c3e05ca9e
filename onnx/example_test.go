package onnx_test

import (
	"context"
	"fmt"
	"log"

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
