package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

func transformerOptions(c golden.Case) nn.TransformerOptions {
	return nn.TransformerOptions{
		DimFeedforward: c.Int("dim_feedforward"),
		Dropout:        0.1, // off in eval mode
		Activation:     c.String("activation"),
		LayerNormEps:   c.Float("layer_norm_eps"),
		BatchFirst:     c.Bool("batch_first"),
		NormFirst:      c.Bool("norm_first"),
	}
}

// TestTransformerGolden checks the encoder and decoder layers and stacks
// against PyTorch in eval mode: outputs and the gradients of the inputs and
// of every parameter.
func TestTransformerGolden(t *testing.T) {
	g := tensor.NewGenerator(13)
	f64 := tensor.Float64
	ops := map[string]bool{"encoder_layer": true, "decoder_layer": true, "encoder": true, "decoder": true}
	for _, c := range golden.Load(t, rnnAttnGolden) {
		if !ops[c.Op] {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			opt := transformerOptions(c)
			d, h, layers := c.Int("d_model"), c.Int("nhead"), c.Int("num_layers")
			var maskNames []string
			for _, n := range c.Attrs["masks"].([]any) {
				maskNames = append(maskNames, n.(string))
			}
			nFixed := 1
			if c.Op == "decoder_layer" || c.Op == "decoder" {
				nFixed = 2
			}
			var m nn.Module
			switch c.Op {
			case "encoder_layer":
				m = nn.NewTransformerEncoderLayer(g, d, h, opt, f64)
			case "decoder_layer":
				m = nn.NewTransformerDecoderLayer(g, d, h, opt, f64)
			case "encoder":
				m = nn.NewTransformerEncoder(g, layers, d, h, opt, c.Bool("final_norm"), f64)
			case "decoder":
				m = nn.NewTransformerDecoder(g, layers, d, h, opt, c.Bool("final_norm"), f64)
			}
			r := raLoad(t, c, m, nFixed+len(maskNames))
			masks := map[string]*tensor.Tensor{}
			for i, n := range maskNames {
				masks[n] = r.data[nFixed+i].Value()
			}
			var out *autograd.Var
			switch m := m.(type) {
			case *nn.TransformerEncoderLayer:
				out = m.ForwardMasked(r.data[0], masks["src_mask"], masks["src_key_padding_mask"])
			case *nn.TransformerEncoder:
				out = m.ForwardMasked(r.data[0], masks["mask"], masks["src_key_padding_mask"])
			case *nn.TransformerDecoderLayer:
				out = m.Decode(r.data[0], r.data[1], decoderMasks(masks))
			case *nn.TransformerDecoder:
				out = m.Decode(r.data[0], r.data[1], decoderMasks(masks))
			}
			r.check(t, out)
		})
	}
}

func decoderMasks(m map[string]*tensor.Tensor) nn.DecoderMasks {
	return nn.DecoderMasks{TgtMask: m["tgt_mask"], MemoryMask: m["memory_mask"],
		TgtKeyPaddingMask: m["tgt_key_padding_mask"], MemoryKeyPaddingMask: m["memory_key_padding_mask"]}
}

func TestTransformerParameterNames(t *testing.T) {
	g := tensor.NewGenerator(1)
	enc := nn.NewTransformerEncoder(g, 2, 8, 2, nn.TransformerOptions{DimFeedforward: 16}, true)
	keys := nn.StateDictKeys(enc)
	assert.Equal(t, []string{
		"layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias",
		"layers.0.self_attn.out_proj.weight", "layers.0.self_attn.out_proj.bias",
		"layers.0.linear1.weight", "layers.0.linear1.bias", "layers.0.linear2.weight", "layers.0.linear2.bias",
		"layers.0.norm1.weight", "layers.0.norm1.bias", "layers.0.norm2.weight", "layers.0.norm2.bias",
	}, keys[:12])
	assert.Equal(t, "layers.1.norm2.bias", keys[23])
	assert.Equal(t, []string{"norm.weight", "norm.bias"}, keys[24:])
	dec := nn.NewTransformerDecoderLayer(g, 8, 2, nn.TransformerOptions{})
	sd := nn.StateDict(dec)
	assert.Equal(t, []int{2048, 8}, sd["linear1.weight"].Shape(), "dim_feedforward defaults to 2048")
	assert.Contains(t, sd, "multihead_attn.out_proj.weight")
	assert.Contains(t, sd, "norm3.bias")
	assert.Equal(t, 1e-5, dec.Norm1.Eps)
	assert.Len(t, dec.Parameters(), 18)
	// Train propagates through the stacks.
	enc.Train(false)
	assert.False(t, enc.Layers[1].SelfAttn.IsTraining())
}

func TestTransformerTraining(t *testing.T) {
	g := tensor.NewGenerator(4)
	f64 := tensor.Float64
	enc := nn.NewTransformerEncoder(g, 2, 4, 2, nn.TransformerOptions{DimFeedforward: 8, Dropout: 0.3, BatchFirst: true}, false, f64)
	x := autograd.New(g.Randn([]int{2, 3, 4}, f64))
	tr := enc.Forward(x).Value().Float64s()
	enc.Train(false)
	e1 := enc.Forward(x).Value().Float64s()
	assert.Equal(t, e1, enc.Forward(x).Value().Float64s())
	assert.NotEqual(t, tr, e1)
	// A training step reaches every parameter.
	enc.Train(true)
	require.NoError(t, enc.Forward(x).Square().Sum(nil, false).Backward())
	for _, p := range enc.NamedParameters() {
		require.NotNil(t, p.Param.Grad(), p.Name)
	}
}

func TestGenerateSquareSubsequentMask(t *testing.T) {
	inf := math.Inf(-1)
	m := nn.GenerateSquareSubsequentMask(3, tensor.Float64)
	assert.Equal(t, []float64{0, inf, inf, 0, 0, inf, 0, 0, 0}, m.Float64s())
}

func TestTransformerPanics(t *testing.T) {
	g := tensor.NewGenerator(1)
	for _, tc := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"activation", func() { nn.NewTransformerEncoderLayer(g, 4, 2, nn.TransformerOptions{Activation: "tanh"}) }, "activation \"tanh\""},
		{"heads", func() { nn.NewTransformerDecoderLayer(g, 6, 4, nn.TransformerOptions{DimFeedforward: 4}) }, "divisible by num_heads=4"},
		{"dropout", func() { nn.NewTransformerEncoderLayer(g, 4, 2, nn.TransformerOptions{Dropout: 2}) }, "dropout 2"},
		{"layers", func() { nn.NewTransformerEncoder(g, 0, 4, 2, nn.TransformerOptions{}, false) }, "num_layers=0"},
		{"decoder forward", func() {
			nn.NewTransformerDecoder(g, 1, 4, 2, nn.TransformerOptions{DimFeedforward: 4}, false).Forward(autograd.New(tensor.Zeros([]int{1, 1, 4})))
		}, "call Decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.f()
		})
	}
}
