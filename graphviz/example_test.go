package graphviz_test

import (
	"os"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/graphviz"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Draw the graph autograd recorded for a small expression; render it with
// "dot -Tsvg".
func ExampleWriteAutograd() {
	w := autograd.Param(tensor.FromSlice([]float32{1, 2}, 2))
	x := autograd.New(tensor.FromSlice([]float32{3, 4}, 2))
	y := w.Mul(x).Relu()
	if err := graphviz.WriteAutograd(os.Stdout, y, map[*autograd.Var]string{w: "w", x: "x"}); err != nil {
		panic(err)
	}
	// Output:
	// digraph "autograd" {
	//   rankdir=TB;
	//   node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];
	//   edge [fontname="Helvetica", fontsize=8];
	//   n0 [label="w\n[2]", shape=ellipse, style=filled, fillcolor="#e8f5d8"];
	//   n1 [label="x\n[2]", shape=ellipse];
	//   n2 [label="Mul"];
	//   n3 [label="Relu"];
	//   n0 -> n2 [label="[2]"];
	//   n1 -> n2 [label="[2]"];
	//   n2 -> n3 [label="[2]"];
	//   out0 [label="output_0\n[2]", shape=ellipse, style=filled, fillcolor="#ffe1c4"];
	//   n3 -> out0;
	// }
}

// Draw a model traced on an example input: each module applied through
// nn.Call becomes a cluster.
func ExampleWriteModule() {
	model := nn.NewSequential(nn.NewLinear(tensor.NewGenerator(1), 2, 1, false))
	if err := graphviz.WriteModule(os.Stdout, model, tensor.Zeros([]int{4, 2})); err != nil {
		panic(err)
	}
	// Output:
	// digraph "Sequential" {
	//   rankdir=TB;
	//   node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];
	//   edge [fontname="Helvetica", fontsize=8];
	//   n0 [label="input_0\n[4 2]", shape=ellipse, style=filled, fillcolor="#cde4ff"];
	//   subgraph cluster_0 {
	//     label="Sequential"; style=rounded; color="#888888";
	//     subgraph cluster_1 {
	//       label="0 (Linear)"; style=rounded; color="#888888";
	//       n1 [label="0.weight\n[1 2]", shape=ellipse, style=filled, fillcolor="#e8f5d8"];
	//       n2 [label="Transpose"];
	//       n3 [label="MatMul"];
	//     }
	//   }
	//   n1 -> n2 [label="[1 2]"];
	//   n0 -> n3 [label="[4 2]"];
	//   n2 -> n3 [label="[2 1]"];
	//   out0 [label="output_0\n[4 1]", shape=ellipse, style=filled, fillcolor="#ffe1c4"];
	//   n3 -> out0;
	// }
}
