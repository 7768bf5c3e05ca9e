package models

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// GPTConfig configures NewGPT.
type GPTConfig struct {
	// VocabSize is the number of token ids.
	VocabSize int
	// BlockSize is the longest sequence (the number of position
	// embeddings).
	BlockSize int
	// NumLayers is the number of transformer blocks.
	NumLayers int
	// NumHeads is the number of attention heads; it must divide EmbedDim.
	NumHeads int
	// EmbedDim is the model width.
	EmbedDim int
	// Dropout is the probability of every dropout (embeddings, attention
	// weights, the attention and MLP outputs), in training only.
	Dropout float64
	// TiedHead makes lm_head share its weight with wte (as GPT-2); the state
	// dict then holds the same tensor under both names, as PyTorch's does.
	TiedHead bool
}

// GPTMLP is the feed-forward half of a GPT block: c_fc (EmbedDim →
// 4·EmbedDim), GELU (tanh approximation, as GPT-2) and c_proj back to
// EmbedDim.
type GPTMLP struct {
	nn.Base
	CFC, CProj *nn.Linear
}

// Forward maps x of shape [..., EmbedDim] to the same shape.
func (m *GPTMLP) Forward(x *autograd.Var) *autograd.Var {
	return nn.Call(m.CProj, autograd.GELU(nn.Call(m.CFC, x), "tanh"))
}

// GPTBlock is one pre-norm transformer decoder block:
// x + attn(ln_1(x)) with a causal mask, then x + mlp(ln_2(x)). The
// attention is a batch-first torch.nn.MultiheadAttention, so its
// parameters are attn.in_proj_weight, attn.in_proj_bias,
// attn.out_proj.weight and attn.out_proj.bias.
type GPTBlock struct {
	nn.Base
	LN1, LN2 *nn.LayerNorm
	Attn     *nn.MultiheadAttention
	MLP      *GPTMLP
	Drop     *nn.Dropout
}

// Forward applies the block to x of shape [N, T, EmbedDim]; position t
// attends to positions 0..t only.
func (b *GPTBlock) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) != 3 {
		panic(fmt.Sprintf("models.GPTBlock.Forward: input must be [N, T, E], got shape %v", s))
	}
	h := nn.Call(b.LN1, x)
	a, _ := b.Attn.Attend(h, h, h, nn.MHAOptions{AttnMask: nn.GenerateSquareSubsequentMask(s[1], x.Value().DType())})
	x = x.Add(nn.Call(b.Drop, a))
	return x.Add(nn.Call(b.Drop, nn.Call(b.MLP, nn.Call(b.LN2, x))))
}

// GPT is a GPT-2-style decoder-only language model: token (wte) and
// position (wpe) embeddings, NumLayers pre-norm causal GPTBlocks (h.0,
// h.1, ...), a final layer norm (ln_f) and a bias-free linear head
// (lm_head). Its state dict names, in order, are
//
//	wte.weight [VocabSize, EmbedDim]
//	wpe.weight [BlockSize, EmbedDim]
//	h.<i>.ln_1.weight, h.<i>.ln_1.bias
//	h.<i>.attn.in_proj_weight [3·EmbedDim, EmbedDim], h.<i>.attn.in_proj_bias
//	h.<i>.attn.out_proj.weight, h.<i>.attn.out_proj.bias
//	h.<i>.ln_2.weight, h.<i>.ln_2.bias
//	h.<i>.mlp.c_fc.weight [4·EmbedDim, EmbedDim], h.<i>.mlp.c_fc.bias
//	h.<i>.mlp.c_proj.weight [EmbedDim, 4·EmbedDim], h.<i>.mlp.c_proj.bias
//	ln_f.weight, ln_f.bias
//	lm_head.weight [VocabSize, EmbedDim]
//
// as the PyTorch reference module GPT in internal/golden/gen/gen_models.py
// (torch.nn.Embedding, LayerNorm, MultiheadAttention(batch_first=True) and
// Linear layers). The weights are laid out as torch.nn.Linear, not as
// Hugging Face's GPT-2 Conv1D (whose c_attn packs the same three
// projections transposed).
type GPT struct {
	nn.Base
	Config   GPTConfig
	WTE, WPE *nn.Embedding
	H        *nn.ModuleList
	LNF      *nn.LayerNorm
	LMHead   *nn.Linear
	Drop     *nn.Dropout
}

// NewGPT returns a GPT initialized as GPT-2 from g (which also draws the
// dropout masks): embeddings and every weight matrix from N(0, 0.02²),
// except the residual projections (attn.out_proj and mlp.c_proj) from
// N(0, (0.02/sqrt(2·NumLayers))²); biases zero; layer norms weight 1,
// bias 0.
func NewGPT(g *tensor.Generator, cfg GPTConfig) *GPT {
	if cfg.VocabSize < 1 || cfg.BlockSize < 1 || cfg.NumLayers < 1 || cfg.NumHeads < 1 || cfg.EmbedDim < 1 || cfg.EmbedDim%cfg.NumHeads != 0 {
		panic(fmt.Sprintf("models.NewGPT: sizes must be positive and NumHeads must divide EmbedDim, got %+v", cfg))
	}
	d := cfg.EmbedDim
	const std = 0.02
	projStd := std / math.Sqrt(2*float64(cfg.NumLayers))
	m := &GPT{
		Config: cfg,
		WTE:    nn.NewEmbedding(g, cfg.VocabSize, d, nn.EmbeddingOptions{}),
		WPE:    nn.NewEmbedding(g, cfg.BlockSize, d, nn.EmbeddingOptions{}),
		H:      nn.NewModuleList(),
		LNF:    nn.NewLayerNorm([]int{d}, 0, true),
		Drop:   nn.NewDropout(cfg.Dropout, g),
	}
	nn.Normal(g, m.WTE.Weight.Value(), 0, std)
	nn.Normal(g, m.WPE.Weight.Value(), 0, std)
	for range cfg.NumLayers {
		b := &GPTBlock{
			LN1:  nn.NewLayerNorm([]int{d}, 0, true),
			Attn: nn.NewMultiheadAttention(g, d, cfg.NumHeads, nn.MultiheadAttentionOptions{BatchFirst: true, Dropout: cfg.Dropout}),
			LN2:  nn.NewLayerNorm([]int{d}, 0, true),
			MLP:  &GPTMLP{CFC: normalLinear(g, d, 4*d, std, true), CProj: normalLinear(g, 4*d, d, projStd, true)},
			Drop: nn.NewDropout(cfg.Dropout, g),
		}
		nn.Normal(g, b.Attn.InProjWeight.Value(), 0, std)
		nn.Normal(g, b.Attn.OutProj.Weight.Value(), 0, projStd)
		b.MLP.RegisterModule("c_fc", b.MLP.CFC)
		b.MLP.RegisterModule("c_proj", b.MLP.CProj)
		b.RegisterModule("ln_1", b.LN1)
		b.RegisterModule("attn", b.Attn)
		b.RegisterModule("ln_2", b.LN2)
		b.RegisterModule("mlp", b.MLP)
		b.RegisterModule("drop", b.Drop)
		m.H.Append(b)
	}
	if cfg.TiedHead {
		m.LMHead = &nn.Linear{InFeatures: d, OutFeatures: cfg.VocabSize}
		m.LMHead.Weight = m.LMHead.RegisterParameter("weight", m.WTE.Weight)
	} else {
		m.LMHead = normalLinear(g, d, cfg.VocabSize, std, false)
	}
	m.RegisterModule("wte", m.WTE)
	m.RegisterModule("wpe", m.WPE)
	m.RegisterModule("drop", m.Drop)
	m.RegisterModule("h", m.H)
	m.RegisterModule("ln_f", m.LNF)
	m.RegisterModule("lm_head", m.LMHead)
	return m
}

// Forward maps integer token ids of shape [N, T] (a Var wrapping an Int64
// tensor, T <= BlockSize) to next-token logits [N, T, VocabSize].
func (m *GPT) Forward(ids *autograd.Var) *autograd.Var {
	s := ids.Shape()
	if len(s) != 2 || s[1] < 1 || s[1] > m.Config.BlockSize {
		panic(fmt.Sprintf("models.GPT.Forward: ids must be [N, T] with 1 <= T <= BlockSize=%d, got shape %v", m.Config.BlockSize, s))
	}
	pos := tensor.Arange(0, float64(s[1]), 1, tensor.Int64)
	x := nn.Call(m.WTE, ids).Add(m.WPE.Lookup(pos))
	x = nn.Call(m.Drop, x)
	for _, b := range m.H.Modules() {
		x = nn.Call(b, x)
	}
	return nn.Call(m.LMHead, nn.Call(m.LNF, x))
}
