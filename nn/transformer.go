package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// TransformerOptions configures TransformerEncoderLayer,
// TransformerDecoderLayer and their stacks. Zero fields take PyTorch's
// defaults, except Dropout: PyTorch's default is 0.1, here 0 means none.
type TransformerOptions struct {
	// DimFeedforward is the hidden size of the feed-forward block (0 means
	// 2048).
	DimFeedforward int
	// Dropout is the probability used by every dropout of the layer in
	// training mode (after attention, inside and after the feed-forward
	// block, and on the attention weights).
	Dropout float64
	// Activation is "relu" (also for "") or "gelu" (exact, erf-based).
	Activation string
	// LayerNormEps is the epsilon of the layer norms (0 means 1e-5).
	LayerNormEps float64
	// BatchFirst takes and returns [N, T, E] instead of [T, N, E].
	BatchFirst bool
	// NormFirst applies each layer norm before its block (pre-norm) rather
	// than after the residual sum (post-norm).
	NormFirst bool
}

// resolve fills in the defaults and checks the options.
func (o TransformerOptions) resolve(op string, dModel, nhead int) TransformerOptions {
	if o.DimFeedforward == 0 {
		o.DimFeedforward = 2048
	}
	if o.LayerNormEps == 0 {
		o.LayerNormEps = 1e-5
	}
	if o.Activation == "" {
		o.Activation = "relu"
	}
	if o.Activation != "relu" && o.Activation != "gelu" {
		panic(fmt.Sprintf("nn.%s: activation %q must be \"relu\" or \"gelu\"", op, o.Activation))
	}
	if dModel <= 0 || nhead <= 0 || o.DimFeedforward < 0 || o.LayerNormEps < 0 {
		panic(fmt.Sprintf("nn.%s: d_model=%d, nhead=%d, dim_feedforward=%d and layer_norm_eps=%v must be positive",
			op, dModel, nhead, o.DimFeedforward, o.LayerNormEps))
	}
	if !(o.Dropout >= 0 && o.Dropout <= 1) {
		panic(fmt.Sprintf("nn.%s: dropout %v is not in [0, 1]", op, o.Dropout))
	}
	return o
}

// feedForward is the position-wise block shared by both layer kinds.
type feedForward struct {
	linear1, linear2 *Linear
	activation       string
}

func (f feedForward) apply(x *autograd.Var, p float64, training bool, g *tensor.Generator) *autograd.Var {
	h := f.linear1.Forward(x)
	if f.activation == "gelu" {
		h = autograd.GELU(h, "none")
	} else {
		h = h.Relu()
	}
	return f.linear2.Forward(autograd.Dropout(h, p, training, g))
}

// TransformerEncoderLayer is torch.nn.TransformerEncoderLayer: self-attention
// then a feed-forward block, each with a residual connection and a layer
// norm (after the sum, or before the block with NormFirst). Its state dict
// has PyTorch's names: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*.
type TransformerEncoderLayer struct {
	Base
	Options          TransformerOptions
	SelfAttn         *MultiheadAttention
	Linear1, Linear2 *Linear
	Norm1, Norm2     *LayerNorm
	gen              *tensor.Generator
}

// NewTransformerEncoderLayer returns an encoder layer of width dModel with
// nhead attention heads, initialized as PyTorch (see NewMultiheadAttention
// and NewLinear; layer norms start at weight 1, bias 0) from g, which also
// draws the dropout masks in training. The parameters are Float32 unless a
// dtype is given.
func NewTransformerEncoderLayer(g *tensor.Generator, dModel, nhead int, opt TransformerOptions, dt ...tensor.DType) *TransformerEncoderLayer {
	opt = opt.resolve("NewTransformerEncoderLayer", dModel, nhead)
	checkGen("NewTransformerEncoderLayer", g)
	l := &TransformerEncoderLayer{Options: opt, gen: g}
	l.SelfAttn = NewMultiheadAttention(g, dModel, nhead, MultiheadAttentionOptions{BatchFirst: opt.BatchFirst, Dropout: opt.Dropout}, dt...)
	l.Linear1 = NewLinear(g, dModel, opt.DimFeedforward, true, dt...)
	l.Linear2 = NewLinear(g, opt.DimFeedforward, dModel, true, dt...)
	l.Norm1 = NewLayerNorm([]int{dModel}, opt.LayerNormEps, true, dt...)
	l.Norm2 = NewLayerNorm([]int{dModel}, opt.LayerNormEps, true, dt...)
	l.RegisterModule("self_attn", l.SelfAttn)
	l.RegisterModule("linear1", l.Linear1)
	l.RegisterModule("linear2", l.Linear2)
	l.RegisterModule("norm1", l.Norm1)
	l.RegisterModule("norm2", l.Norm2)
	return l
}

// Forward is ForwardMasked without masks.
func (l *TransformerEncoderLayer) Forward(src *autograd.Var) *autograd.Var {
	return l.ForwardMasked(src, nil, nil)
}

// ForwardMasked encodes src ([T, N, E], [N, T, E] with BatchFirst, or
// unbatched [T, E]). srcMask is the self-attention mask and
// srcKeyPaddingMask marks padded positions, as MHAOptions.AttnMask and
// MHAOptions.KeyPaddingMask (either may be nil).
func (l *TransformerEncoderLayer) ForwardMasked(src *autograd.Var, srcMask, srcKeyPaddingMask *tensor.Tensor) *autograd.Var {
	p, tr := l.Options.Dropout, l.IsTraining()
	sa := func(x *autograd.Var) *autograd.Var {
		out, _ := l.SelfAttn.Attend(x, x, x, MHAOptions{AttnMask: srcMask, KeyPaddingMask: srcKeyPaddingMask})
		return autograd.Dropout(out, p, tr, l.gen)
	}
	ff := func(x *autograd.Var) *autograd.Var {
		y := feedForward{l.Linear1, l.Linear2, l.Options.Activation}.apply(x, p, tr, l.gen)
		return autograd.Dropout(y, p, tr, l.gen)
	}
	x := src
	if l.Options.NormFirst {
		x = x.Add(sa(l.Norm1.Forward(x)))
		return x.Add(ff(l.Norm2.Forward(x)))
	}
	x = l.Norm1.Forward(x.Add(sa(x)))
	return l.Norm2.Forward(x.Add(ff(x)))
}

// TransformerDecoderLayer is torch.nn.TransformerDecoderLayer: masked
// self-attention, attention over the encoder's memory and a feed-forward
// block, each with a residual connection and a layer norm. Its state dict
// has PyTorch's names: self_attn.*, multihead_attn.*, linear1.*, linear2.*,
// norm1.*, norm2.*, norm3.*.
type TransformerDecoderLayer struct {
	Base
	Options                 TransformerOptions
	SelfAttn, MultiheadAttn *MultiheadAttention
	Linear1, Linear2        *Linear
	Norm1, Norm2, Norm3     *LayerNorm
	gen                     *tensor.Generator
}

// DecoderMasks are the optional masks of a decoder: TgtMask and MemoryMask
// as MHAOptions.AttnMask for the self-attention and the memory attention,
// TgtKeyPaddingMask and MemoryKeyPaddingMask as MHAOptions.KeyPaddingMask.
type DecoderMasks struct {
	TgtMask, MemoryMask, TgtKeyPaddingMask, MemoryKeyPaddingMask *tensor.Tensor
}

// NewTransformerDecoderLayer returns a decoder layer initialized as
// NewTransformerEncoderLayer.
func NewTransformerDecoderLayer(g *tensor.Generator, dModel, nhead int, opt TransformerOptions, dt ...tensor.DType) *TransformerDecoderLayer {
	opt = opt.resolve("NewTransformerDecoderLayer", dModel, nhead)
	checkGen("NewTransformerDecoderLayer", g)
	l := &TransformerDecoderLayer{Options: opt, gen: g}
	mo := MultiheadAttentionOptions{BatchFirst: opt.BatchFirst, Dropout: opt.Dropout}
	l.SelfAttn = NewMultiheadAttention(g, dModel, nhead, mo, dt...)
	l.MultiheadAttn = NewMultiheadAttention(g, dModel, nhead, mo, dt...)
	l.Linear1 = NewLinear(g, dModel, opt.DimFeedforward, true, dt...)
	l.Linear2 = NewLinear(g, opt.DimFeedforward, dModel, true, dt...)
	l.Norm1 = NewLayerNorm([]int{dModel}, opt.LayerNormEps, true, dt...)
	l.Norm2 = NewLayerNorm([]int{dModel}, opt.LayerNormEps, true, dt...)
	l.Norm3 = NewLayerNorm([]int{dModel}, opt.LayerNormEps, true, dt...)
	l.RegisterModule("self_attn", l.SelfAttn)
	l.RegisterModule("multihead_attn", l.MultiheadAttn)
	l.RegisterModule("linear1", l.Linear1)
	l.RegisterModule("linear2", l.Linear2)
	l.RegisterModule("norm1", l.Norm1)
	l.RegisterModule("norm2", l.Norm2)
	l.RegisterModule("norm3", l.Norm3)
	return l
}

// Forward panics: a decoder needs the encoder's memory; use Decode.
func (l *TransformerDecoderLayer) Forward(*autograd.Var) *autograd.Var {
	panic("nn.TransformerDecoderLayer.Forward: a decoder layer needs the memory; call Decode(tgt, memory, masks)")
}

// Decode decodes tgt ([T, N, E], [N, T, E] with BatchFirst, or unbatched
// [T, E]) attending to memory ([S, N, E] likewise) under the given masks.
func (l *TransformerDecoderLayer) Decode(tgt, memory *autograd.Var, masks DecoderMasks) *autograd.Var {
	p, tr := l.Options.Dropout, l.IsTraining()
	sa := func(x *autograd.Var) *autograd.Var {
		out, _ := l.SelfAttn.Attend(x, x, x, MHAOptions{AttnMask: masks.TgtMask, KeyPaddingMask: masks.TgtKeyPaddingMask})
		return autograd.Dropout(out, p, tr, l.gen)
	}
	mha := func(x *autograd.Var) *autograd.Var {
		out, _ := l.MultiheadAttn.Attend(x, memory, memory, MHAOptions{AttnMask: masks.MemoryMask, KeyPaddingMask: masks.MemoryKeyPaddingMask})
		return autograd.Dropout(out, p, tr, l.gen)
	}
	ff := func(x *autograd.Var) *autograd.Var {
		y := feedForward{l.Linear1, l.Linear2, l.Options.Activation}.apply(x, p, tr, l.gen)
		return autograd.Dropout(y, p, tr, l.gen)
	}
	x := tgt
	if l.Options.NormFirst {
		x = x.Add(sa(l.Norm1.Forward(x)))
		x = x.Add(mha(l.Norm2.Forward(x)))
		return x.Add(ff(l.Norm3.Forward(x)))
	}
	x = l.Norm1.Forward(x.Add(sa(x)))
	x = l.Norm2.Forward(x.Add(mha(x)))
	return l.Norm3.Forward(x.Add(ff(x)))
}

// TransformerEncoder is torch.nn.TransformerEncoder: a stack of encoder
// layers (registered as layers.0, layers.1, ...) and an optional final
// layer norm (registered as norm).
type TransformerEncoder struct {
	Base
	Layers []*TransformerEncoderLayer
	// Norm is the final layer norm, or nil.
	Norm   *LayerNorm
	layers *moduleList
}

// NewTransformerEncoder returns numLayers encoder layers configured by
// dModel, nhead and opt, with a final layer norm when finalNorm is true.
// Each layer is drawn independently from g (PyTorch deep-copies one layer,
// so its layers start out equal); load a state dict to reproduce a torch
// model exactly.
func NewTransformerEncoder(g *tensor.Generator, numLayers, dModel, nhead int, opt TransformerOptions, finalNorm bool, dt ...tensor.DType) *TransformerEncoder {
	if numLayers <= 0 {
		panic(fmt.Sprintf("nn.NewTransformerEncoder: num_layers=%d must be positive", numLayers))
	}
	e := &TransformerEncoder{layers: &moduleList{}}
	for i := range numLayers {
		l := NewTransformerEncoderLayer(g, dModel, nhead, opt, dt...)
		e.Layers = append(e.Layers, l)
		e.layers.RegisterModule(fmt.Sprint(i), l)
	}
	e.RegisterModule("layers", e.layers)
	if finalNorm {
		e.Norm = NewLayerNorm([]int{dModel}, e.Layers[0].Options.LayerNormEps, true, dt...)
		e.RegisterModule("norm", e.Norm)
	}
	return e
}

// Forward is ForwardMasked without masks.
func (e *TransformerEncoder) Forward(src *autograd.Var) *autograd.Var {
	return e.ForwardMasked(src, nil, nil)
}

// ForwardMasked passes src through every layer with the same masks (see
// TransformerEncoderLayer.ForwardMasked), then through the final norm.
func (e *TransformerEncoder) ForwardMasked(src *autograd.Var, mask, srcKeyPaddingMask *tensor.Tensor) *autograd.Var {
	x := src
	for _, l := range e.Layers {
		x = l.ForwardMasked(x, mask, srcKeyPaddingMask)
	}
	if e.Norm != nil {
		x = e.Norm.Forward(x)
	}
	return x
}

// TransformerDecoder is torch.nn.TransformerDecoder: a stack of decoder
// layers (layers.0, layers.1, ...) and an optional final layer norm (norm).
type TransformerDecoder struct {
	Base
	Layers []*TransformerDecoderLayer
	// Norm is the final layer norm, or nil.
	Norm   *LayerNorm
	layers *moduleList
}

// NewTransformerDecoder returns numLayers decoder layers, as
// NewTransformerEncoder.
func NewTransformerDecoder(g *tensor.Generator, numLayers, dModel, nhead int, opt TransformerOptions, finalNorm bool, dt ...tensor.DType) *TransformerDecoder {
	if numLayers <= 0 {
		panic(fmt.Sprintf("nn.NewTransformerDecoder: num_layers=%d must be positive", numLayers))
	}
	d := &TransformerDecoder{layers: &moduleList{}}
	for i := range numLayers {
		l := NewTransformerDecoderLayer(g, dModel, nhead, opt, dt...)
		d.Layers = append(d.Layers, l)
		d.layers.RegisterModule(fmt.Sprint(i), l)
	}
	d.RegisterModule("layers", d.layers)
	if finalNorm {
		d.Norm = NewLayerNorm([]int{dModel}, d.Layers[0].Options.LayerNormEps, true, dt...)
		d.RegisterModule("norm", d.Norm)
	}
	return d
}

// Forward panics: a decoder needs the encoder's memory; use Decode.
func (d *TransformerDecoder) Forward(*autograd.Var) *autograd.Var {
	panic("nn.TransformerDecoder.Forward: a decoder needs the memory; call Decode(tgt, memory, masks)")
}

// Decode passes tgt through every layer, each attending to memory under
// the same masks (see TransformerDecoderLayer.Decode), then through the
// final norm.
func (d *TransformerDecoder) Decode(tgt, memory *autograd.Var, masks DecoderMasks) *autograd.Var {
	x := tgt
	for _, l := range d.Layers {
		x = l.Decode(x, memory, masks)
	}
	if d.Norm != nil {
		x = d.Norm.Forward(x)
	}
	return x
}

// moduleList holds numbered sub-modules, as torch.nn.ModuleList.
type moduleList struct{ Base }

// Forward panics: a module list only groups its modules.
func (*moduleList) Forward(*autograd.Var) *autograd.Var {
	panic("nn: a layer list has no Forward of its own")
}

// GenerateSquareSubsequentMask returns the [n, n] float causal mask of
// torch.nn.Transformer.generate_square_subsequent_mask: 0 on and below the
// diagonal, -inf above, in dtype dt (Float32 unless given).
func GenerateSquareSubsequentMask(n int, dt ...tensor.DType) *tensor.Tensor {
	return additiveMask(causalMask(n, n), false, pickDType(dt))
}
