package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// EmbeddingBagOptions configures NewEmbeddingBag. The zero value is
// PyTorch's default: mean of each bag, no padding index.
type EmbeddingBagOptions struct {
	// Mode reduces each bag: "sum", "mean" (the default when empty) or
	// "max".
	Mode string
	// HasPaddingIdx enables PaddingIdx: that row starts at zero, is left
	// out of every bag (and of the mean's count) and gets no gradient (a
	// negative index counts from the end).
	HasPaddingIdx bool
	PaddingIdx    int
	// IncludeLastOffset makes offsets hold one more entry than there are
	// bags: the end of the last bag (the CSR layout).
	IncludeLastOffset bool
	// MaxNorm, when positive, renormalizes in place every looked-up row
	// whose NormType-norm exceeds it to norm MaxNorm before the lookup.
	MaxNorm float64
	// NormType is the p of the max-norm check; 0 means 2.
	NormType float64
}

// EmbeddingBag looks up bags of ids and reduces each bag to one vector
// (sum, mean or max) without materializing the per-id embeddings of the
// batch as separate outputs, as torch.nn.EmbeddingBag. Weight has shape
// [num, dim]; an empty bag gives zeros.
type EmbeddingBag struct {
	Base
	NumEmbeddings, EmbeddingDim int
	Mode                        string
	// PaddingIdx is the padding row, or -1 for none.
	PaddingIdx        int
	IncludeLastOffset bool
	MaxNorm           float64
	NormType          float64
	Weight            *autograd.Var
}

// NewEmbeddingBag returns an embedding-bag table with weights drawn from
// N(0, 1) using g (the padding row, if any, zeroed), as PyTorch
// initializes it.
func NewEmbeddingBag(g *tensor.Generator, num, dim int, opt EmbeddingBagOptions, dt ...tensor.DType) *EmbeddingBag {
	if num <= 0 || dim <= 0 {
		panic(fmt.Sprintf("nn.NewEmbeddingBag: num_embeddings=%d and embedding_dim=%d must be positive", num, dim))
	}
	mode := opt.Mode
	if mode == "" {
		mode = "mean"
	}
	if mode != "sum" && mode != "mean" && mode != "max" {
		panic(fmt.Sprintf("nn.NewEmbeddingBag: mode %q must be \"sum\", \"mean\" or \"max\"", opt.Mode))
	}
	checkGen("NewEmbeddingBag", g)
	d := pickDType(dt)
	if !d.IsFloat() {
		panic(fmt.Sprintf("nn.NewEmbeddingBag: parameters need a floating-point dtype, got %s", d))
	}
	e := &EmbeddingBag{NumEmbeddings: num, EmbeddingDim: dim, Mode: mode, PaddingIdx: -1, IncludeLastOffset: opt.IncludeLastOffset,
		MaxNorm: opt.MaxNorm, NormType: orDefault(opt.NormType, 2)}
	if opt.HasPaddingIdx {
		p := opt.PaddingIdx
		if p < 0 {
			p += num
		}
		if p < 0 || p >= num {
			panic(fmt.Sprintf("nn.NewEmbeddingBag: padding_idx %d out of range for %d embeddings", opt.PaddingIdx, num))
		}
		e.PaddingIdx = p
	}
	w := Normal(g, tensor.Zeros([]int{num, dim}, d), 0, 1)
	if e.PaddingIdx >= 0 {
		w.Narrow(0, e.PaddingIdx, 1).Fill(0)
	}
	e.Weight = e.RegisterParameter("weight", autograd.Param(w))
	return e
}

// Forward reduces the bags of a 2-d integer id tensor [B, L] (a Var
// wrapping it): one bag of L ids per row. The result is [B, dim]. It is
// Bag(ids.Value(), nil, nil), annotated as Bag describes. When ids is
// marked autograd.NoGrad nothing is recorded and the result is marked too.
func (e *EmbeddingBag) Forward(ids *autograd.Var) *autograd.Var {
	if ids.IsNoGrad() {
		return e.bag(ids.Value(), nil, nil, autograd.NoGrad(e.Weight))
	}
	return e.Bag(ids.Value(), nil, nil)
}

// Bag reduces bags of ids to [B, dim]. ids is either 2-d [B, L] (fixed
// bags, offsets nil) or 1-d, with offsets (1-d, integer) holding the start
// of each bag in ids (plus the end with IncludeLastOffset); offsets must
// start at 0 and not decrease. perSampleWeights (nil, or floats shaped
// like ids) scales each looked-up row before the sum; it needs mode "sum".
//
// The result is annotated as the composite op "EmbeddingBag" with the
// attributes ids, mode and, when set, paddingIdx, offsets,
// includeLastOffset, perSampleWeights and maxNorm, so that onnx.Export
// writes it with the ids as a graph value (or refuses the forms it cannot
// write exactly).
func (e *EmbeddingBag) Bag(ids, offsets, perSampleWeights *tensor.Tensor) *autograd.Var {
	out := e.bag(ids, offsets, perSampleWeights, e.Weight)
	attrs := map[string]any{"ids": ids, "mode": e.Mode}
	if e.PaddingIdx >= 0 {
		attrs["paddingIdx"] = e.PaddingIdx
	}
	if offsets != nil {
		attrs["offsets"] = offsets
		attrs["includeLastOffset"] = e.IncludeLastOffset
	}
	if perSampleWeights != nil {
		attrs["perSampleWeights"] = perSampleWeights
	}
	if e.MaxNorm > 0 {
		attrs["maxNorm"] = e.MaxNorm
	}
	return autograd.AnnotateOp(out, EmbeddingBagOp, attrs, e.Weight)
}

// bag computes Bag from weight (Weight, or a no-grad view of it).
func (e *EmbeddingBag) bag(ids, offsets, perSampleWeights *tensor.Tensor, weight *autograd.Var) *autograd.Var {
	if ids.DType().IsFloat() {
		panic(fmt.Sprintf("nn.EmbeddingBag.Bag: ids must be integers, got %s", ids.DType()))
	}
	if perSampleWeights != nil {
		if e.Mode != "sum" {
			panic(fmt.Sprintf("nn.EmbeddingBag.Bag: per-sample weights need mode \"sum\", got %q", e.Mode))
		}
		if !sameShape(perSampleWeights.Shape(), ids.Shape()) {
			panic(fmt.Sprintf("nn.EmbeddingBag.Bag: per-sample weights shape %v must equal the ids shape %v", perSampleWeights.Shape(), ids.Shape()))
		}
	}
	flat := ids.To(tensor.Int64).Contiguous().Int64s()
	var starts []int
	switch ids.Dim() {
	case 2:
		if offsets != nil {
			panic(fmt.Sprintf("nn.EmbeddingBag.Bag: offsets must be nil for 2-d ids %v", ids.Shape()))
		}
		b, l := ids.Shape()[0], ids.Shape()[1]
		starts = make([]int, b+1)
		for i := range starts {
			starts[i] = i * l
		}
	case 1:
		if offsets == nil || offsets.Dim() != 1 || offsets.DType().IsFloat() {
			panic("nn.EmbeddingBag.Bag: 1-d ids need 1-d integer offsets")
		}
		for _, o := range offsets.To(tensor.Int64).Contiguous().Int64s() {
			starts = append(starts, int(o))
		}
		if !e.IncludeLastOffset {
			starts = append(starts, len(flat))
		}
		if len(starts) < 2 || starts[0] != 0 {
			panic(fmt.Sprintf("nn.EmbeddingBag.Bag: offsets %v must start at 0 and name at least one bag", offsets.Shape()))
		}
		for i := 1; i < len(starts); i++ {
			if starts[i] < starts[i-1] || starts[i] > len(flat) {
				panic(fmt.Sprintf("nn.EmbeddingBag.Bag: offsets must not decrease and stay within the %d ids, got %d after %d", len(flat), starts[i], starts[i-1]))
			}
		}
	default:
		panic(fmt.Sprintf("nn.EmbeddingBag.Bag: ids must be 1-d (with offsets) or 2-d, got shape %v", ids.Shape()))
	}
	nb := len(starts) - 1
	// Keep the non-padding positions, in order, with their bag number.
	var keep, bagOf []int64
	counts := make([]int, nb)
	for b := range nb {
		for i := starts[b]; i < starts[b+1]; i++ {
			id := flat[i]
			if id < 0 || id >= int64(e.NumEmbeddings) {
				panic(fmt.Sprintf("nn.EmbeddingBag.Bag: id %d out of range for %d embeddings", id, e.NumEmbeddings))
			}
			if int(id) == e.PaddingIdx {
				continue
			}
			keep = append(keep, int64(i))
			bagOf = append(bagOf, int64(b))
			counts[b]++
		}
	}
	dt := weight.DType()
	// The bag bookkeeping is done on the host; its index tensors are copied
	// to the weight's device, where the work happens.
	wv := weight.Value()
	if len(keep) == 0 {
		zeros := autograd.New(tensor.ZerosOn(wv.Device(), []int{nb, e.EmbeddingDim}, dt))
		if weight.IsNoGrad() {
			zeros = autograd.NoGrad(zeros)
		}
		return zeros
	}
	if e.MaxNorm > 0 {
		e.renorm(flat)
	}
	pos := tensor.FromSlice(keep, len(keep)).ToDeviceOf(wv)
	rows := autograd.Embedding(tensor.FromSlice(flat, len(flat)).ToDeviceOf(wv).IndexSelect(0, pos), weight)
	if perSampleWeights != nil {
		w := perSampleWeights.To(dt).Reshape(-1).IndexSelect(0, pos)
		rows = rows.Mul(autograd.New(w.Unsqueeze(1)))
	}
	if e.Mode == "max" {
		out := make([]*autograd.Var, nb)
		at := 0
		for b, n := range counts {
			if n == 0 {
				out[b] = autograd.New(tensor.ZerosOn(wv.Device(), []int{e.EmbeddingDim}, dt))
				continue
			}
			out[b] = rows.Narrow(0, at, n).Max([]int{0}, false)
			at += n
		}
		return autograd.Stack(out, 0)
	}
	sum := autograd.New(tensor.ZerosOn(wv.Device(), []int{nb, e.EmbeddingDim}, dt)).IndexAdd(0, tensor.FromSlice(bagOf, len(bagOf)).ToDeviceOf(wv), rows)
	if e.Mode == "sum" {
		return sum
	}
	div := make([]float64, nb)
	for b, n := range counts {
		div[b] = float64(max(n, 1))
	}
	return sum.Div(autograd.New(tensor.FromSlice(div, nb, 1).To(dt).ToDeviceOf(wv)))
}

// renorm scales the rows named in ids whose norm exceeds MaxNorm to norm
// MaxNorm, in place and without gradient (PyTorch's embedding_renorm_:
// scale max_norm/(norm+1e-7)).
func (e *EmbeddingBag) renorm(ids []int64) {
	w := e.Weight.Value()
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		row := w.Narrow(0, int(id), 1)
		if norm := row.Norm(e.NormType, nil, false).Item(); norm > e.MaxNorm {
			row.CopyFrom(row.MulScalar(e.MaxNorm / (norm + 1e-7)))
		}
	}
}

// sameShape reports whether two shapes are equal.
func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// String describes the layer as PyTorch prints it.
func (e *EmbeddingBag) String() string {
	s := fmt.Sprintf("EmbeddingBag(%d, %d", e.NumEmbeddings, e.EmbeddingDim)
	if e.MaxNorm > 0 {
		s += ", max_norm=" + pyFloat(e.MaxNorm)
	}
	if e.NormType != 2 {
		s += ", norm_type=" + pyFloat(e.NormType)
	}
	s += ", mode=" + e.Mode
	if e.PaddingIdx >= 0 {
		s += fmt.Sprintf(", padding_idx=%d", e.PaddingIdx)
	}
	return s + ")"
}

// EmbeddingBagOp is the composite op EmbeddingBag marks its output with
// (autograd.AnnotateOp), which onnx.Export recognises by identity. Do not
// reassign it.
var EmbeddingBagOp = autograd.NewOpKey("EmbeddingBag")
