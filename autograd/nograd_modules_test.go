package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// TestNoGradThroughModules runs a marked input through each kind of nn
// layer (with parameters that require gradients, where it has any): the
// result carries the mark,
// records no node, and equals the recorded forward's value (the layers in
// evaluation mode are deterministic). It catches a layer that drops the
// mark (a fused kernel wrapped without it, an input read as a plain
// tensor), after which the next layer would record again.
func TestNoGradThroughModules(t *testing.T) {
	g := tensor.NewGenerator(11)
	img := g.Randn([]int{2, 3, 8, 8})
	seq := g.Randn([]int{5, 2, 4}) // [T, N, features]
	vol := g.Randn([]int{1, 2, 4, 4, 4})
	ids := tensor.FromSlice([]int64{0, 3, 5, 3, 1, 0}, 2, 3)
	conv := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	cases := []struct {
		name  string
		m     nn.Module
		input *tensor.Tensor
	}{
		{"Linear", nn.NewLinear(g, 8, 4, true), img},
		{"Conv2d", nn.NewConv2d(g, 3, 4, [2]int{3, 3}, conv, true), img},
		{"Conv2d/float64", nn.NewConv2d(g, 3, 4, [2]int{3, 3}, conv, true, tensor.Float64), img.To(tensor.Float64)},
		{"Conv2d/reflect", func() nn.Module {
			c := nn.NewConv2d(g, 3, 2, [2]int{3, 3}, conv, false)
			c.PaddingMode = tensor.PadReflect
			return c
		}(), img},
		{"ConvTranspose2d", nn.NewConvTranspose2d(g, 3, 2, [2]int{2, 2}, tensor.ConvTranspose2dOptions{}, true), img},
		{"Conv3d", nn.NewConv3d(g, 2, 2, [3]int{3, 3, 3}, tensor.Conv3dOptions{}, true), vol},
		{"BatchNorm2d/eval", evalMode(nn.NewBatchNorm2d(3, nn.BatchNormOptions{})), img},
		{"LayerNorm", nn.NewLayerNorm([]int{8}, 1e-5, true), img},
		{"GroupNorm", nn.NewGroupNorm(1, 3, 1e-5, true), img},
		{"PReLU", nn.NewPReLU(3, 0.25), img},
		{"MaxPool2d", nn.NewMaxPool2d(pool), img},
		{"AdaptiveAvgPool2d", nn.NewAdaptiveAvgPool2d(2, 2), img},
		{"Dropout/eval", evalMode(nn.NewDropout(0.5, g)), img},
		{"RNN", evalMode(nn.NewRNN(g, 4, 3, nn.RNNOptions{NumLayers: 2})), seq},
		{"LSTM", evalMode(nn.NewLSTM(g, 4, 3, nn.RNNOptions{Bidirectional: true})), seq},
		{"GRU", evalMode(nn.NewGRU(g, 4, 3, nn.RNNOptions{})), seq},
		{"MultiheadAttention", evalMode(nn.NewMultiheadAttention(g, 4, 2, nn.MultiheadAttentionOptions{})), seq},
		{"TransformerEncoderLayer", evalMode(nn.NewTransformerEncoderLayer(g, 4, 2, nn.TransformerOptions{DimFeedforward: 8})), seq},
		{"Embedding", nn.NewEmbedding(g, 6, 4, nn.EmbeddingOptions{}), ids},
		{"Embedding/padding", func() nn.Module {
			opt := nn.EmbeddingOptions{}
			opt.HasPaddingIdx, opt.PaddingIdx = true, 0
			return nn.NewEmbedding(g, 6, 4, opt)
		}(), ids},
		{"EmbeddingBag/sum", nn.NewEmbeddingBag(g, 6, 4, nn.EmbeddingBagOptions{Mode: "sum"}), ids},
		{"EmbeddingBag/max", nn.NewEmbeddingBag(g, 6, 4, nn.EmbeddingBagOptions{Mode: "max"}), ids},
		{"Sequential", nn.NewSequential(nn.NewConv2d(g, 3, 4, [2]int{3, 3}, conv, true), nn.NewReLU(), nn.NewFlatten(1, -1), nn.NewLinear(g, 4*8*8, 2, false)), img},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recorded := nn.Call(tc.m, autograd.New(tc.input))
			if len(tc.m.Parameters()) > 0 {
				require.True(t, recorded.RequiresGrad(), "the plain forward records")
			}
			out := nn.Call(tc.m, autograd.NoGrad(autograd.New(tc.input)))
			_, isNode := out.Node()
			assert.False(t, isNode)
			assert.True(t, out.IsNoGrad())
			assert.False(t, out.RequiresGrad())
			assert.Equal(t, recorded.Shape(), out.Shape())
			assert.InDeltaSlice(t, recorded.Value().To(tensor.Float64).Float64s(), out.Value().To(tensor.Float64).Float64s(), 1e-5)
		})
	}
}

// evalMode switches m to evaluation mode and returns it.
func evalMode(m nn.Module) nn.Module {
	m.Train(false)
	return m
}
