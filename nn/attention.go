package nn

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// AttentionOptions configures ScaledDotProductAttention. The zero value is
// plain attention without mask or dropout, scaled by 1/sqrt(E).
type AttentionOptions struct {
	// AttnMask, broadcastable to [..., L, S], restricts the attention as in
	// torch.nn.functional.scaled_dot_product_attention: a Bool mask marks
	// with true the pairs that may attend (false ones are excluded); a
	// floating mask is added to the scores.
	AttnMask *tensor.Tensor
	// IsCausal lets query i attend only to keys j <= i (the top-left
	// aligned lower triangle); it excludes AttnMask.
	IsCausal bool
	// DropoutP is the probability of dropping each attention weight; the
	// masks are drawn from Gen, which must then be set.
	DropoutP float64
	// Gen draws the dropout masks.
	Gen *tensor.Generator
	// Scale multiplies the scores; 0 means 1/sqrt(E).
	Scale float64
}

// ScaledDotProductAttention returns softmax(q·kᵀ·scale + mask)·v for q of
// shape [..., L, E], k [..., S, E] and v [..., S, Ev] (leading axes
// broadcast), shaped [..., L, Ev], as torch's
// scaled_dot_product_attention. Rows with every key masked out are NaN, as
// in PyTorch.
func ScaledDotProductAttention(q, k, v *autograd.Var, opt AttentionOptions) *autograd.Var {
	const op = "ScaledDotProductAttention"
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) < 2 || len(ks) < 2 || len(vs) < 2 || qs[len(qs)-1] != ks[len(ks)-1] || ks[len(ks)-2] != vs[len(vs)-2] {
		panic(fmt.Sprintf("nn.%s: q %v, k %v and v %v must be [..., L, E], [..., S, E] and [..., S, Ev]", op, qs, ks, vs))
	}
	if opt.IsCausal && opt.AttnMask != nil {
		panic(fmt.Sprintf("nn.%s: IsCausal and AttnMask exclude each other", op))
	}
	if !(opt.DropoutP >= 0 && opt.DropoutP <= 1) {
		panic(fmt.Sprintf("nn.%s: DropoutP %v is not in [0, 1]", op, opt.DropoutP))
	}
	if opt.DropoutP > 0 {
		checkGen(op, opt.Gen)
	}
	l, s := qs[len(qs)-2], ks[len(ks)-2]
	var mask *tensor.Tensor
	switch {
	case opt.IsCausal:
		mask = additiveMask(causalMask(l, s).ToDeviceOf(q.Value()), false, q.DType())
	case opt.AttnMask != nil:
		mask = additiveMask(opt.AttnMask, true, q.DType())
	}
	scale := opt.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(qs[len(qs)-1]))
	}
	out, _ := attend(q, k, v, mask, scale, opt.DropoutP, opt.Gen)
	return out
}

// causalMask returns the [l, s] Bool mask that is true above the diagonal
// (the pairs a causal attention excludes).
func causalMask(l, s int) *tensor.Tensor {
	m := make([]bool, l*s)
	for i := range l {
		for j := i + 1; j < s; j++ {
			m[i*s+j] = true
		}
	}
	return tensor.FromSlice(m, l, s)
}

// additiveMask turns a mask into the float tensor added to the scores: a
// Bool mask becomes -inf where it excludes a pair (where it is true, or
// false with allowTrue) and 0 elsewhere; a float mask is converted to dt.
func additiveMask(m *tensor.Tensor, allowTrue bool, dt tensor.DType) *tensor.Tensor {
	if m.DType() != tensor.Bool {
		if !m.DType().IsFloat() {
			panic(fmt.Sprintf("nn: attention masks must be Bool or floating point, got %s", m.DType()))
		}
		return m.To(dt)
	}
	if allowTrue {
		m = m.LogicalNot()
	}
	return tensor.Where(m, tensor.Scalar(math.Inf(-1)).To(dt), tensor.Scalar(0.0).To(dt))
}

// attend computes softmax(q·kᵀ·scale + mask) (with dropout p from gen when
// p > 0) and its product with v; it returns the output and the weights.
func attend(q, k, v *autograd.Var, mask *tensor.Tensor, scale, p float64, gen *tensor.Generator) (*autograd.Var, *autograd.Var) {
	scores := q.MulScalar(scale).MatMul(k.Transpose(k.Dim()-2, k.Dim()-1))
	if mask != nil {
		scores = scores.Add(autograd.New(mask))
	}
	w := autograd.Softmax(scores, -1)
	wd := autograd.Dropout(w, p, p > 0, gen)
	return wd.MatMul(v), w
}

// MultiheadAttentionOptions configures NewMultiheadAttention. The zero value
// is PyTorch's default: biases, sequence-first layout, no dropout.
type MultiheadAttentionOptions struct {
	// NoBias drops in_proj_bias and out_proj.bias (bias=False).
	NoBias bool
	// BatchFirst takes and returns [N, L, E] instead of [L, N, E].
	BatchFirst bool
	// Dropout is the probability of dropping attention weights in training.
	Dropout float64
}

// MultiheadAttention is torch.nn.MultiheadAttention with equal query, key
// and value sizes (kdim = vdim = embed_dim): the inputs are projected by
// the stacked InProjWeight [3E, E] (query, key, value blocks) and
// InProjBias [3E], split into NumHeads heads of E/NumHeads features that
// attend independently, and the concatenated heads pass through OutProj.
type MultiheadAttention struct {
	Base
	EmbedDim, NumHeads int
	Options            MultiheadAttentionOptions
	// InProjWeight and InProjBias (nil without bias) are registered as
	// in_proj_weight and in_proj_bias.
	InProjWeight, InProjBias *autograd.Var
	// OutProj is the output projection, registered as out_proj.
	OutProj *Linear
	gen     *tensor.Generator
}

// NewMultiheadAttention returns multi-head attention over embedDim features
// split into numHeads heads (which must divide embedDim), initialized as
// PyTorch: in_proj_weight Xavier-uniform, out_proj.weight
// U(-1/sqrt(E), 1/sqrt(E)), the biases zero. g draws the initial weights
// and, in training, the dropout masks. The parameters are Float32 unless a
// dtype is given.
func NewMultiheadAttention(g *tensor.Generator, embedDim, numHeads int, opt MultiheadAttentionOptions, dt ...tensor.DType) *MultiheadAttention {
	const op = "NewMultiheadAttention"
	if embedDim <= 0 || numHeads <= 0 || embedDim%numHeads != 0 {
		panic(fmt.Sprintf("nn.%s: embed_dim=%d must be positive and divisible by num_heads=%d", op, embedDim, numHeads))
	}
	if !(opt.Dropout >= 0 && opt.Dropout <= 1) {
		panic(fmt.Sprintf("nn.%s: dropout %v is not in [0, 1]", op, opt.Dropout))
	}
	checkGen(op, g)
	d := pickDType(dt)
	m := &MultiheadAttention{EmbedDim: embedDim, NumHeads: numHeads, Options: opt, gen: g}
	out := NewLinear(g, embedDim, embedDim, !opt.NoBias, d)
	w := tensor.Zeros([]int{3 * embedDim, embedDim}, d)
	XavierUniform(g, w, 1)
	m.InProjWeight = m.RegisterParameter("in_proj_weight", autograd.Param(w))
	if !opt.NoBias {
		m.InProjBias = m.RegisterParameter("in_proj_bias", autograd.Param(tensor.Zeros([]int{3 * embedDim}, d)))
		out.Bias.Value().Fill(0)
	}
	m.OutProj = out
	m.RegisterModule("out_proj", out)
	return m
}

// MHAOptions are the per-call options of MultiheadAttention.Attend.
type MHAOptions struct {
	// KeyPaddingMask [N, S] (or [S] unbatched) marks keys to ignore: true
	// in a Bool mask, or values added to the scores in a float mask.
	KeyPaddingMask *tensor.Tensor
	// AttnMask [L, S] or [N·NumHeads, L, S] restricts the attention: true
	// in a Bool mask excludes a pair (the opposite of
	// AttentionOptions.AttnMask, as in PyTorch); a float mask is added.
	AttnMask *tensor.Tensor
	// NeedWeights makes Attend return the attention weights.
	NeedWeights bool
	// PerHeadWeights returns the weights of every head, [N, NumHeads, L, S],
	// instead of their average [N, L, S] (average_attn_weights=False).
	PerHeadWeights bool
}

// Forward is self-attention: Attend(x, x, x) without masks.
func (m *MultiheadAttention) Forward(x *autograd.Var) *autograd.Var {
	out, _ := m.Attend(x, x, x, MHAOptions{})
	return out
}

// Attend lets query ([L, N, E], [N, L, E] with BatchFirst, or unbatched
// [L, E]) attend to key and value ([S, N, E] likewise). It returns the
// output, shaped as query, and with NeedWeights the attention weights
// ([N, L, S] averaged over heads, [N, NumHeads, L, S] with PerHeadWeights;
// without the N axis when unbatched), else nil.
func (m *MultiheadAttention) Attend(query, key, value *autograd.Var, opt MHAOptions) (out, weights *autograd.Var) {
	const op = "MultiheadAttention.Attend"
	e, h := m.EmbedDim, m.NumHeads
	qs, ks, vs := query.Shape(), key.Shape(), value.Shape()
	if len(qs) != len(ks) || len(qs) != len(vs) || (len(qs) != 2 && len(qs) != 3) ||
		qs[len(qs)-1] != e || ks[len(ks)-1] != e || vs[len(vs)-1] != e || !sameInts(ks, vs) {
		panic(fmt.Sprintf("nn.%s: query %v, key %v and value %v must be [L, N, %d], [S, N, %d], [S, N, %d] (batch first with BatchFirst) or unbatched [L, %d], [S, %d], [S, %d]",
			op, qs, ks, vs, e, e, e, e, e, e))
	}
	unbatched := len(qs) == 2
	toBatchFirst := func(x *autograd.Var) *autograd.Var {
		switch {
		case unbatched:
			return x.Unsqueeze(0)
		case m.Options.BatchFirst:
			return x
		}
		return x.Transpose(0, 1)
	}
	self := query == key && key == value
	q, k, v := toBatchFirst(query), toBatchFirst(key), toBatchFirst(value)
	n, l, s := q.Shape()[0], q.Shape()[1], k.Shape()[1]
	if k.Shape()[0] != n {
		panic(fmt.Sprintf("nn.%s: query %v and key %v have different batch sizes", op, qs, ks))
	}
	if self {
		// Unbind's backward stacks the three gradients in one pass, where
		// three Narrows would each fill a zero [N, L, 3E] gradient.
		qkv := m.project(q, 0, 3*e).Reshape(n, l, 3, e).Unbind(2)
		q, k, v = qkv[0], qkv[1], qkv[2]
	} else {
		q, k, v = m.project(q, 0, e), m.project(k, e, e), m.project(v, 2*e, e)
	}
	hd := e / h
	heads := func(x *autograd.Var, t int) *autograd.Var { return x.Reshape(n, t, h, hd).Permute(0, 2, 1, 3) }
	mask := m.masks(op, opt, n, l, s, unbatched, query.DType())
	p := 0.0
	if m.IsTraining() {
		p = m.Options.Dropout
	}
	o, w := attend(heads(q, l), heads(k, s), heads(v, s), mask, 1/math.Sqrt(float64(hd)), p, m.gen)
	out = m.OutProj.Forward(o.Permute(0, 2, 1, 3).Reshape(n, l, e))
	switch {
	case unbatched:
		out = out.Squeeze(0)
	case !m.Options.BatchFirst:
		out = out.Transpose(0, 1)
	}
	if opt.NeedWeights {
		weights = w
		if !opt.PerHeadWeights {
			weights = w.Mean([]int{1}, false)
		}
		if unbatched {
			weights = weights.Squeeze(0)
		}
	}
	return out, weights
}

// project applies the rows [from, from+size) of the input projection.
func (m *MultiheadAttention) project(x *autograd.Var, from, size int) *autograd.Var {
	y := x.MatMul(m.InProjWeight.Narrow(0, from, size).T())
	if m.InProjBias != nil {
		y = y.Add(m.InProjBias.Narrow(0, from, size))
	}
	return y
}

// masks merges the attention and key padding masks into one additive mask
// broadcastable to [N, H, L, S], or nil.
func (m *MultiheadAttention) masks(op string, opt MHAOptions, n, l, s int, unbatched bool, dt tensor.DType) *tensor.Tensor {
	var mask *tensor.Tensor
	if a := opt.AttnMask; a != nil {
		switch sh := a.Shape(); {
		case sameInts(sh, []int{l, s}):
			mask = additiveMask(a, false, dt)
		case sameInts(sh, []int{n * m.NumHeads, l, s}):
			mask = additiveMask(a, false, dt).Reshape(n, m.NumHeads, l, s)
		default:
			panic(fmt.Sprintf("nn.%s: attn_mask shape %v must be [%d, %d] or [%d, %d, %d]", op, sh, l, s, n*m.NumHeads, l, s))
		}
	}
	if kp := opt.KeyPaddingMask; kp != nil {
		want := []int{n, s}
		if unbatched {
			want = []int{s}
		}
		if !sameInts(kp.Shape(), want) {
			panic(fmt.Sprintf("nn.%s: key_padding_mask shape %v must be %v", op, kp.Shape(), want))
		}
		k := additiveMask(kp, false, dt).Reshape(n, 1, 1, s)
		if mask == nil {
			mask = k
		} else {
			mask = mask.Add(k)
		}
	}
	return mask
}

// String describes the layer as PyTorch prints it.
func (m *MultiheadAttention) String() string {
	return fmt.Sprintf("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=%d, out_features=%d, bias=%t)\n)",
		m.EmbedDim, m.EmbedDim, m.OutProj.Bias != nil)
}
