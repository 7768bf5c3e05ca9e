package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// flexAttentionOps registers FlexAttention of the ai.onnx.preview domain.
func flexAttentionOps() opTable {
	return opTable{
		"ai.onnx.preview.FlexAttention": {{since: 1, impl: halfLift(opFlexAttention)}},
	}
}

// opFlexAttention is FlexAttention (ai.onnx.preview 1): attention over Q
// [B, Hq, L, E], K [B, Hkv, S, E] and V [B, Hkv, S, Ev] (query head h reads
// key/value head h/(Hq/Hkv)) whose scores Q·Kᵀ·scale (scale defaults to
// 1/√E) pass through the graph attributes score_mod and then mask_mod, each
// taking and returning the [B, Hq, L, S] scores, before the softmax, and
// whose probabilities pass through prob_mod before they weight V.
func opFlexAttention(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	qkv, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	q, k, v := qkv[0], qkv[1], qkv[2]
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) != 4 || len(ks) != 4 || len(vs) != 4 || ks[0] != qs[0] || vs[0] != qs[0] || ks[3] != qs[3] ||
		vs[1] != ks[1] || vs[2] != ks[2] || ks[1] == 0 || qs[1]%ks[1] != 0 {
		return nil, fmt.Errorf("onnx: %v: Q %v, K %v and V %v must be [B, Hq, L, E], [B, Hkv, S, E] and [B, Hkv, S, Ev] with Hkv dividing Hq", n, qs, ks, vs)
	}
	if !q.DType().IsFloat() || k.DType() != q.DType() || v.DType() != q.DType() {
		return nil, fmt.Errorf("onnx: %v: Q, K and V must share one float dtype (have %s, %s, %s)", n, q.DType(), k.DType(), v.DType())
	}
	if err := checkElements(n, int64(qs[0])*int64(qs[1])*int64(qs[2])*int64(ks[2])); err != nil {
		return nil, err
	}
	if g := qs[1] / ks[1]; g > 1 {
		expand := func(t *tensor.Tensor) *tensor.Tensor {
			s := t.Shape()
			return t.Unsqueeze(2).Expand(s[0], s[1], g, s[2], s[3]).Reshape(s[0], s[1]*g, s[2], s[3])
		}
		k, v = expand(k), expand(v)
	}
	scale := n.attrFloat("scale", 0)
	if !n.has("scale") {
		scale = 1 / math.Sqrt(float64(qs[3]))
	}
	scores := q.MatMul(k.Transpose(2, 3)).MulScalar(scale)
	for _, mod := range []string{"score_mod", "mask_mod"} {
		if scores, err = n.flexMod(mod, in, scores); err != nil {
			return nil, err
		}
	}
	probs := scores.Softmax(3)
	if probs, err = n.flexMod("prob_mod", in, probs); err != nil {
		return nil, err
	}
	return one(probs.MatMul(v))
}

// flexMod runs graph attribute name on x when the node has it, checking
// that it keeps x's shape.
func (n *node) flexMod(name string, in []*tensor.Tensor, x *tensor.Tensor) (*tensor.Tensor, error) {
	if n.graphs[name] == nil {
		return x, nil
	}
	out, err := n.runGraph(name, in, []*tensor.Tensor{x})
	if err != nil {
		return nil, err
	}
	if len(out) != 1 || out[0] == nil || fmt.Sprint(out[0].Shape()) != fmt.Sprint(x.Shape()) {
		return nil, fmt.Errorf("onnx: %v: %s must return one tensor of shape %v", n, name, x.Shape())
	}
	return out[0].To(x.DType()), nil
}
