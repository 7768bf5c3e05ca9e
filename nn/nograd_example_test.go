package nn_test

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Evaluating a model whose parameters are being trained: marking the input
// with autograd.NoGrad makes the whole forward pass, and the validation loss
// after it, record nothing, with the values of a recorded pass.
func Example_noGradEvaluation() {
	g := tensor.NewGenerator(1)
	model := nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewReLU(), nn.NewLinear(g, 8, 3, true))
	x := g.Randn([]int{5, 4})
	labels := tensor.FromSlice([]int64{0, 2, 1, 1, 0}, 5)
	lossFn := nn.NewCrossEntropyLoss()

	recorded := lossFn.Forward(model.Forward(autograd.New(x)), labels)
	loss := lossFn.Forward(model.Forward(autograd.NoGrad(autograd.New(x))), labels)
	_, isNode := loss.Node()
	fmt.Println("recorded:", isNode, "marked:", loss.IsNoGrad())
	fmt.Println("same value:", slices.Equal(recorded.Value().Float32s(), loss.Value().Float32s()))
	// Output:
	// recorded: false marked: true
	// same value: true
}
