package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Load-time graph rewrites. Each one changes a plan's results at most by
// float rounding and applies only where nothing else can observe the values
// it removes: a rewritten intermediate must have exactly one consumer, must
// not be an output of the graph, and must not be read by a control-flow
// node (whose subgraphs refer to values by name). SessionOptions'
// DisableOptimizations turns them off.

// optimize rewrites p.nodes in place after constant folding: Identity and
// inference-mode Dropout nodes are dropped (their consumers read the input
// directly), a BatchNormalization in inference mode that follows a Conv
// with constant weights is folded into the Conv's weights and bias, an Add
// of a Conv's output and another value (a residual connection) and a Relu
// following a Conv or such an Add run inside the convolution's output
// pass, and the constant weights of 2-d convolutions are packed once for
// the matrix product.
func (p *plan) optimize(outputs []*valueInfo) error {
	graphOut := make(map[string]bool, len(outputs))
	for _, o := range outputs {
		graphOut[o.name] = true
	}
	p.dropPassThrough(graphOut)
	if err := p.foldBatchNorm(graphOut); err != nil {
		return err
	}
	ep := map[*node]convEpilogue{}
	p.fuseConvAdd(graphOut, ep)
	p.fuseConvRelu(graphOut, ep)
	p.packConvWeights(ep)
	return nil
}

// consumers maps each value to the indices of the nodes of p reading it.
func (p *plan) consumers() map[string][]int {
	use := map[string][]int{}
	for i, n := range p.nodes {
		for _, name := range n.inputs {
			if name != "" {
				use[name] = append(use[name], i)
			}
		}
	}
	return use
}

// soleConsumer returns the index of the only node reading name, or -1 when
// name is a graph output, is read by no node or by several, or is read by a
// control-flow node.
func (p *plan) soleConsumer(use map[string][]int, graphOut map[string]bool, name string) int {
	idx := use[name]
	if graphOut[name] || len(idx) != 1 {
		return -1
	}
	if n := p.nodes[idx[0]]; n.graphs != nil || countOf(n.inputs, name) != 1 {
		return -1
	}
	return idx[0]
}

// countOf returns how many times name occurs in names.
func countOf(names []string, name string) int {
	k := 0
	for _, s := range names {
		if s == name {
			k++
		}
	}
	return k
}

// isOp reports whether n is the default-domain operator op.
func isOp(n *node, op string) bool { return n.domain == "" && n.opType == op }

// dropPassThrough removes Identity nodes and Dropout nodes in inference
// mode whose mask output is unused, renaming their output to their input in
// every consumer. Nodes whose output is a graph output or is read by a
// control-flow node are kept.
func (p *plan) dropPassThrough(graphOut map[string]bool) {
	use := p.consumers()
	keep := p.nodes[:0:0]
	rename := map[string]string{}
	for _, n := range p.nodes {
		for i, name := range n.inputs {
			if r, ok := rename[name]; ok {
				n.inputs[i] = r
			}
		}
		if !p.passThrough(n, use, graphOut) {
			keep = append(keep, n)
			continue
		}
		rename[n.outputs[0]] = n.inputs[0]
	}
	p.nodes = keep
}

// passThrough reports whether n returns its first input unchanged and may
// be removed.
func (p *plan) passThrough(n *node, use map[string][]int, graphOut map[string]bool) bool {
	if n.numIn < 1 || n.inputs[0] == "" || len(n.outputs) < 1 || n.outputs[0] == "" || graphOut[n.outputs[0]] {
		return false
	}
	switch {
	case isOp(n, "Identity") && len(n.outputs) == 1 && n.numIn == 1:
	case isOp(n, "Dropout"):
		if n.opset < 7 && n.attrInt("is_test", 0) == 0 {
			return false
		}
		if len(n.outputs) > 1 && n.outputs[1] != "" && (len(use[n.outputs[1]]) > 0 || graphOut[n.outputs[1]]) {
			return false
		}
		if n.numIn > 2 && n.inputs[2] != "" {
			return false // a training_mode input may be true at run time
		}
	default:
		return false
	}
	for _, i := range use[n.outputs[0]] {
		if p.nodes[i].graphs != nil {
			return false
		}
	}
	return true
}

// foldBatchNorm folds each inference-mode BatchNormalization whose input is
// the sole use of a Conv output into that Conv, when the Conv's weight and
// bias and all four normalization parameters are constants:
// W' = W·γ/√(var+ε) per output channel, b' = (b−mean)·γ/√(var+ε)+β,
// computed in float64 and stored in the weight's dtype.
func (p *plan) foldBatchNorm(graphOut map[string]bool) error {
	use := p.consumers()
	drop := map[int]bool{}
	for ci, cv := range p.nodes {
		if !isOp(cv, "Conv") || len(cv.outputs) != 1 || cv.numIn < 2 || cv.numIn > 3 {
			continue
		}
		bi := p.soleConsumer(use, graphOut, cv.outputs[0])
		if bi < 0 {
			continue
		}
		bn := p.nodes[bi]
		w, ok := p.consts[cv.inputs[1]]
		if !ok || !isOp(bn, "BatchNormalization") || bn.numIn != 5 || bn.inputs[0] != cv.outputs[0] || !inferenceBN(bn) {
			continue
		}
		var b *tensor.Tensor
		if cv.numIn == 3 && cv.inputs[2] != "" {
			if b, ok = p.consts[cv.inputs[2]]; !ok {
				continue
			}
		}
		params := make([]*tensor.Tensor, 4)
		for k := range params {
			if params[k], ok = p.consts[bn.inputs[k+1]]; !ok {
				break
			}
		}
		if !ok {
			continue
		}
		nw, nb, ok := foldedConvParams(w, b, params, bn.attrFloat("epsilon", 1e-5))
		if !ok {
			continue
		}
		fused := *cv
		fused.inputs = []string{cv.inputs[0], p.freshConst(bn.outputs[0]+"::folded_weight", nw), p.freshConst(bn.outputs[0]+"::folded_bias", nb)}
		fused.numIn = 3
		fused.outputs = []string{bn.outputs[0]}
		p.nodes[ci] = &fused
		drop[bi] = true
	}
	p.removeNodes(drop)
	return nil
}

// inferenceBN reports whether bn normalizes with its running statistics,
// per channel, and returns only Y.
func inferenceBN(bn *node) bool {
	if bn.attrInt("training_mode", 0) != 0 || bn.attrInt("spatial", 1) != 1 {
		return false
	}
	if bn.opset < 7 && bn.attrInt("is_test", 0) == 0 {
		return false
	}
	for _, o := range bn.outputs[1:] {
		if o != "" {
			return false
		}
	}
	return len(bn.outputs) >= 1 && bn.outputs[0] != ""
}

// foldedConvParams returns the Conv weight and bias with the normalization
// (scale, bias, mean, var) and epsilon eps folded in, or ok = false when
// the shapes or dtypes do not allow it.
func foldedConvParams(w, b *tensor.Tensor, bn []*tensor.Tensor, eps float64) (nw, nb *tensor.Tensor, ok bool) {
	dt := w.DType()
	if (dt != tensor.Float32 && dt != tensor.Float64) || w.Dim() < 3 {
		return nil, nil, false
	}
	o := w.Shape()[0]
	for _, t := range append([]*tensor.Tensor{b}, bn...) {
		if t == nil {
			continue
		}
		if !t.DType().IsFloat() || t.Dim() != 1 || t.Shape()[0] != o {
			return nil, nil, false
		}
	}
	gamma, beta, mean, variance := bn[0].Float64s(), bn[1].Float64s(), bn[2].Float64s(), bn[3].Float64s()
	bias := make([]float64, o)
	if b != nil {
		copy(bias, b.Float64s())
	}
	wv := w.Float64s()
	per := len(wv) / o
	nwv := make([]float64, len(wv))
	nbv := make([]float64, o)
	for c := range o {
		s := gamma[c] / math.Sqrt(variance[c]+eps)
		for j := c * per; j < (c+1)*per; j++ {
			nwv[j] = wv[j] * s
		}
		nbv[c] = (bias[c]-mean[c])*s + beta[c]
	}
	return tensor.FromSlice(nwv, w.Shape()...).To(dt), tensor.FromSlice(nbv, o).To(dt), true
}

// freshConst stores t as a new constant under a name derived from base that
// no constant or node output of p uses, and returns the name.
func (p *plan) freshConst(base string, t *tensor.Tensor) string {
	taken := map[string]bool{}
	for _, n := range p.nodes {
		for _, o := range n.outputs {
			taken[o] = true
		}
	}
	name := base
	for k := 1; taken[name] || p.consts[name] != nil; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	p.consts[name] = t
	return name
}

// fuseConvAdd replaces each Conv whose output's sole use is an Add (of
// opset 7 or later) with another value by one node computing conv + other,
// followed by the Relu that is the sole use of the Add's output, if any.
// The fused node reads the other value as a fourth input, so it takes the
// Add's place in the order (where that value exists); the Conv and the
// Relu are removed. Epilogues of the fused nodes are recorded in ep.
func (p *plan) fuseConvAdd(graphOut map[string]bool, ep map[*node]convEpilogue) {
	use := p.consumers()
	drop := map[int]bool{}
	for ci, cv := range p.nodes {
		if _, fused := ep[cv]; fused || drop[ci] || !isOp(cv, "Conv") || len(cv.outputs) != 1 || cv.numIn < 2 || cv.numIn > 3 {
			continue
		}
		ai := p.soleConsumer(use, graphOut, cv.outputs[0])
		if ai < 0 || drop[ai] {
			continue
		}
		ad := p.nodes[ai]
		if !isOp(ad, "Add") || ad.opset < 7 || ad.numIn != 2 || len(ad.outputs) != 1 || ad.outputs[0] == "" {
			continue
		}
		other := ad.inputs[0]
		if other == cv.outputs[0] {
			other = ad.inputs[1]
		}
		if other == "" || other == cv.outputs[0] {
			continue
		}
		bias := ""
		if cv.numIn == 3 {
			bias = cv.inputs[2]
		}
		fused := *cv
		fused.inputs = []string{cv.inputs[0], cv.inputs[1], bias, other}
		fused.numIn = 4
		fused.outputs = []string{ad.outputs[0]}
		e := convEpilogue{residual: true}
		if ri := p.soleConsumer(use, graphOut, ad.outputs[0]); ri >= 0 {
			if r := p.nodes[ri]; isOp(r, "Relu") && r.numIn == 1 && len(r.outputs) == 1 && r.outputs[0] != "" {
				fused.outputs = []string{r.outputs[0]}
				e.relu = true
				drop[ri] = true
			}
		}
		fused.impl = convImpl(e, nil)
		p.nodes[ai] = &fused
		ep[&fused] = e
		drop[ci] = true
	}
	p.removeNodes(drop)
}

// fuseConvRelu replaces each Conv not fused yet whose output's sole use is
// a Relu by one node computing max(conv, 0) in the convolution's output
// pass, recording it in ep.
func (p *plan) fuseConvRelu(graphOut map[string]bool, ep map[*node]convEpilogue) {
	use := p.consumers()
	drop := map[int]bool{}
	for ci, cv := range p.nodes {
		if _, fused := ep[cv]; fused || !isOp(cv, "Conv") || len(cv.outputs) != 1 {
			continue
		}
		ri := p.soleConsumer(use, graphOut, cv.outputs[0])
		if ri < 0 {
			continue
		}
		r := p.nodes[ri]
		if !isOp(r, "Relu") || r.numIn != 1 || len(r.outputs) != 1 || r.outputs[0] == "" {
			continue
		}
		fused := *cv
		fused.outputs = []string{r.outputs[0]}
		e := convEpilogue{relu: true}
		fused.impl = convImpl(e, nil)
		p.nodes[ci] = &fused
		ep[&fused] = e
		drop[ri] = true
	}
	p.removeNodes(drop)
}

// packConvWeights gives each 2-d Conv node (plain, or fused with the
// epilogue ep records) whose weight is a constant 4-d float32 tensor a copy
// of that weight packed for the matrix product, built here once instead of
// on every run. The node keeps reading the weight input; the pack is used
// only while that input is the packed constant.
func (p *plan) packConvWeights(ep map[*node]convEpilogue) {
	for i, cv := range p.nodes {
		if !isOp(cv, "Conv") || cv.numIn < 2 || len(cv.outputs) != 1 {
			continue
		}
		w, ok := p.consts[cv.inputs[1]]
		groups := cv.attrInt("group", 1)
		if !ok || w.DType() != tensor.Float32 || w.Dim() != 4 || groups < 1 || int64(w.Shape()[0])%groups != 0 {
			continue
		}
		withPack := *cv
		withPack.impl = convImpl(ep[cv], tensor.PackConv2dWeight(w, int(groups)))
		p.nodes[i] = &withPack
	}
}

// removeNodes deletes the nodes at the indices in drop, keeping the order
// of the rest.
func (p *plan) removeNodes(drop map[int]bool) {
	if len(drop) == 0 {
		return
	}
	keep := p.nodes[:0:0]
	for i, n := range p.nodes {
		if !drop[i] {
			keep = append(keep, n)
		}
	}
	p.nodes = keep
}
