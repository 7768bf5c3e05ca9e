package nn_test

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Build a small classifier, compute a cross-entropy loss and its gradients,
// and round-trip the weights through a safetensors state dict.
func Example() {
	g := tensor.NewGenerator(7) // all initialization randomness comes from here
	model := nn.NewSequential(
		nn.NewLinear(g, 4, 8, true),
		nn.NewReLU(),
		nn.NewLinear(g, 8, 3, true),
	)
	for _, p := range model.NamedParameters() {
		fmt.Println(p.Name, p.Param.Shape())
	}

	x := autograd.New(g.Randn([]int{5, 4}))
	labels := tensor.FromSlice([]int64{0, 2, 1, 1, -100}) // the last sample is ignored
	loss := nn.NewCrossEntropyLoss(nn.WithLabelSmoothing(0.1)).Forward(model.Forward(x), labels)
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	fmt.Println("loss is a scalar:", loss.Dim() == 0, "grad shape:", model.Parameters()[0].Grad().Shape())

	// Save the state dict (PyTorch can load it) and load it into a twin.
	var buf bytes.Buffer
	if err := nn.WriteSafetensors(&buf, model); err != nil {
		panic(err)
	}
	twin := nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewReLU(), nn.NewLinear(g, 8, 3, true))
	if err := nn.ReadSafetensors(&buf, twin); err != nil {
		panic(err)
	}
	same := model.Forward(x).Value().Eq(twin.Forward(x).Value()).Bools()
	fmt.Println("twin agrees:", !slices.Contains(same, false))
	// Output:
	// 0.weight [8 4]
	// 0.bias [8]
	// 2.weight [3 8]
	// 2.bias [3]
	// loss is a scalar: true grad shape: [8 4]
	// twin agrees: true
}

// LoadStateDict reports every missing, unexpected and mismatched entry.
func ExampleLoadStateDict() {
	g := tensor.NewGenerator(1)
	model := nn.NewSequential(nn.NewLinear(g, 2, 2, true))
	sd := map[string]*tensor.Tensor{
		"0.weight": tensor.Zeros([]int{2, 3}),
		"1.bias":   tensor.Zeros([]int{2}),
	}
	fmt.Println(nn.LoadStateDict(model, sd, true))
	// Output:
	// nn.LoadStateDict: missing keys: "0.bias"; unexpected keys: "1.bias"; mismatches: "0.weight" has shape [2 3] in the state dict, [2 2] in the module
}
