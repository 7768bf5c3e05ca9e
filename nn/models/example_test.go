package models_test

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
)

// A torchvision ResNet-18. Its state dict has torchvision's names, so
// weights saved from torchvision as safetensors load with
// nn.LoadSafetensors(path, m).
func ExampleResNet18() {
	g := tensor.NewGenerator(0)
	m := models.ResNet18(g, models.ResNetConfig{NumClasses: 10})
	m.Train(false)
	keys := nn.StateDictKeys(m)
	fmt.Println(len(keys), keys[0], keys[len(keys)-1])
	logits := m.Forward(autograd.New(g.Randn([]int{1, 3, 64, 64})))
	fmt.Println(logits.Shape())
	// Output:
	// 122 conv1.weight fc.bias
	// [1 10]
}

// A tiny GPT with its head tied to the token embedding.
func ExampleNewGPT() {
	g := tensor.NewGenerator(0)
	m := models.NewGPT(g, models.GPTConfig{VocabSize: 32, BlockSize: 8, NumLayers: 2, NumHeads: 2, EmbedDim: 16, TiedHead: true})
	ids := tensor.FromSlice([]int64{1, 2, 3, 4, 5}, 1, 5)
	fmt.Println(m.Forward(autograd.New(ids)).Shape())
	fmt.Println(m.LMHead.Weight == m.WTE.Weight)
	// Output:
	// [1 5 32]
	// true
}
