package nn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Every module that draws random numbers in training lets its generator be
// replaced.
var (
	_ nn.RandomModule = (*nn.Dropout)(nil)
	_ nn.RandomModule = (*nn.Dropout2d)(nil)
	_ nn.RandomModule = (*nn.AlphaDropout)(nil)
	_ nn.RandomModule = (*nn.RReLU)(nil)
	_ nn.RandomModule = (*nn.MultiheadAttention)(nil)
	_ nn.RandomModule = (*nn.TransformerEncoderLayer)(nil)
	_ nn.RandomModule = (*nn.TransformerDecoderLayer)(nil)
	_ nn.RandomModule = (*nn.RNN)(nil)
	_ nn.RandomModule = (*nn.LSTM)(nil)
	_ nn.RandomModule = (*nn.GRU)(nil)
)

func TestSetGeneratorReplacesTheDraws(t *testing.T) {
	x := autograd.New(tensor.Full([]int{4, 8, 3, 3}, -1, tensor.Float64)) // negative, for RReLU
	mods := map[string]nn.RandomModule{
		"Dropout":      nn.NewDropout(0.5, tensor.NewGenerator(1)),
		"Dropout2d":    nn.NewDropout2d(0.5, tensor.NewGenerator(1)),
		"AlphaDropout": nn.NewAlphaDropout(0.5, tensor.NewGenerator(1)),
		"RReLU":        nn.NewRReLU(0.1, 0.3, tensor.NewGenerator(1)),
	}
	for name, m := range mods {
		fresh := tensor.NewGenerator(99)
		m.SetGenerator(fresh)
		assert.Same(t, fresh, m.Generator(), name)
		got := m.Forward(x).Value().Float64s()

		m.SetGenerator(tensor.NewGenerator(99))
		assert.Equal(t, got, m.Forward(x).Value().Float64s(), "%s: the same seed draws the same", name)
		m.SetGenerator(tensor.NewGenerator(100))
		assert.NotEqual(t, got, m.Forward(x).Value().Float64s(), "%s: another seed draws otherwise", name)
	}
	assert.PanicsWithValue(t, "nn.Dropout.SetGenerator: nil *tensor.Generator; pass a seeded one (tensor.NewGenerator(seed))",
		func() { mods["Dropout"].SetGenerator(nil) })
}

func TestRestoredGeneratorRepeatsTheMask(t *testing.T) {
	g := tensor.NewGenerator(3)
	d := nn.NewDropout(0.3, g)
	x := autograd.New(tensor.Ones([]int{64}, tensor.Float32))
	d.Forward(x)
	state, err := g.MarshalBinary()
	require.NoError(t, err)
	want := d.Forward(x).Value().Float64s()
	require.NoError(t, g.UnmarshalBinary(state))
	assert.Equal(t, want, d.Forward(x).Value().Float64s())
}

func TestSetGeneratorsWalksTheModel(t *testing.T) {
	g1, g2 := tensor.NewGenerator(1), tensor.NewGenerator(2)
	enc := nn.NewTransformerEncoderLayer(g1, 8, 2, nn.TransformerOptions{DimFeedforward: 16, Dropout: 0.1})
	model := nn.NewSequential(
		nn.NewLinear(g1, 8, 8, true),
		nn.NewDropout(0.2, g1),
		nn.NewSequential(nn.NewRReLU(0.1, 0.3, g2), enc),
		nn.NewLSTM(g2, 8, 4, nn.RNNOptions{NumLayers: 2, Dropout: 0.1}),
	)
	gens := nn.Generators(model)
	assert.Equal(t, map[string]*tensor.Generator{"1": g1, "2.0": g2}, gens)

	g3 := tensor.NewGenerator(3)
	// Dropout, RReLU, the encoder layer and its self-attention, the LSTM.
	assert.Equal(t, 5, nn.SetGenerators(model, g3))
	assert.Equal(t, map[string]*tensor.Generator{"1": g3}, nn.Generators(model))
	assert.Same(t, g3, enc.SelfAttn.Generator())

	g4 := tensor.NewGenerator(4)
	enc.SetGenerator(g4)
	assert.Same(t, g4, enc.SelfAttn.Generator(), "a layer's SetGenerator reaches its attention")
}

// SetGenerators points every dropout of a model at one generator, whose
// state a checkpoint can then save and restore.
func ExampleSetGenerators() {
	g := tensor.NewGenerator(0)
	model := nn.NewSequential(
		nn.NewLinear(g, 4, 8, true),
		nn.NewDropout(0.1, g),
		nn.NewLinear(g, 8, 2, true),
		nn.NewDropout(0.1, g),
	)
	dropouts := tensor.NewGenerator(42)
	fmt.Println(nn.SetGenerators(model, dropouts))
	for name := range nn.Generators(model) {
		fmt.Printf("%q\n", name)
	}
	// Output:
	// 2
	// "1"
}
