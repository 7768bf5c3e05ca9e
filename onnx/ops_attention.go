package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Attention (opsets 23 to 25) as one fused kernel: for each batch, query
// head and query position it scores every key, adds the mask, caps and
// normalizes the scores and mixes the values, without materializing the
// [batch, heads, q, kv] score tensor unless the qk_matmul_output output is
// asked for.
//
// Inputs: Q, K, V, attn_mask, past_key, past_value and (opset 24)
// nonpad_kv_seqlen. Outputs: Y, present_key, present_value,
// qk_matmul_output. Q, K and V are 4-D [batch, heads, seq, head size] or
// 3-D [batch, seq, heads*head size] (then q_num_heads and kv_num_heads say
// how many heads). Grouped-query attention shares key/value head h/g among
// g consecutive query heads. A boolean mask says which keys a query may
// see, a float mask is added to the scores; either broadcasts to [batch,
// q heads, q, total] and one shorter than the total sequence is padded with
// "hidden". is_causal hides the keys after a query's own position, offset by
// the past length (or, with nonpad_kv_seqlen and no past, by each batch's
// valid length minus the query length). softcap c replaces a score s by
// c·tanh(s/c).
//
// left_window_size and right_window_size (opset 26) limit a query to the
// keys that many positions before and after its own (-1: no limit).
//
// qk_matmul_output_mode picks what the fourth output holds, as ONNX's
// reference and test data compute it: 0 and 1 the scaled (and capped)
// Q·Kᵀ, 2 with the mask added, 3 after the softmax. The cap comes before
// the mask in every opset.

// attentionOps registers Attention.
func attentionOps() opTable {
	return opTable{
		"Attention": {{since: 23, impl: opAttention}},
	}
}

// attention holds one Attention call's geometry and settings.
type attention struct {
	batch, qHeads, kvHeads  int
	qLen, kvLen, pastLen    int
	headDim, vHeadDim       int
	scale, softcap          float64
	causal                  bool
	leftWindow, rightWindow int // keys seen before and after a query's position (-1: all)
	mode                    int64
	mask                    []float64 // additive bias, nil when absent
	maskShape, maskStrides  [4]int
	maskLen                 int     // the mask's last dimension
	nonpad                  []int64 // valid keys per batch (opset 24), nil when absent
	threeD                  bool
	wantScores, wantPresent bool
}

// total is the number of keys a query scores: past and new.
func (a *attention) total() int { return a.pastLen + a.kvLen }

func opAttention(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	qkv, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	q, k, v := qkv[0], qkv[1], qkv[2]
	for i, t := range qkv {
		if err := n.wantFloat(t, i); err != nil {
			return nil, err
		}
	}
	if k.DType() != q.DType() || v.DType() != q.DType() {
		return nil, fmt.Errorf("onnx: %v: Q, K and V have dtypes %s, %s and %s; they must match", n, q.DType(), k.DType(), v.DType())
	}
	a := &attention{
		causal:      n.attrInt("is_causal", 0) != 0,
		leftWindow:  int(n.attrInt("left_window_size", -1)),
		rightWindow: int(n.attrInt("right_window_size", -1)),
		mode:        n.attrInt("qk_matmul_output_mode", 0),
		softcap:     n.attrFloat("softcap", 0),
		wantScores:  len(n.outputs) > 3 && n.outputs[3] != "",
		wantPresent: len(n.outputs) > 1 && (n.outputs[1] != "" || len(n.outputs) > 2 && n.outputs[2] != ""),
	}
	if a.mode < 0 || a.mode > 3 {
		return nil, fmt.Errorf("onnx: %v: qk_matmul_output_mode %d is not 0, 1, 2 or 3", n, a.mode)
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	switch {
	case len(qs) == 4 && len(ks) == 4 && len(vs) == 4:
		a.batch, a.qHeads, a.qLen, a.headDim = qs[0], qs[1], qs[2], qs[3]
		a.kvHeads, a.kvLen, a.vHeadDim = ks[1], ks[2], vs[3]
		if ks[0] != a.batch || vs[0] != a.batch || ks[3] != a.headDim || vs[1] != a.kvHeads || vs[2] != a.kvLen {
			return nil, fmt.Errorf("onnx: %v: Q %v, K %v and V %v are not [batch, heads, seq, head size] with matching batch, heads, key length and head size", n, qs, ks, vs)
		}
	case len(qs) == 3 && len(ks) == 3 && len(vs) == 3:
		a.threeD = true
		qh, kh := int(n.attrInt("q_num_heads", 0)), int(n.attrInt("kv_num_heads", 0))
		if qh <= 0 || kh <= 0 || qs[2]%qh != 0 || ks[2]%kh != 0 || vs[2]%kh != 0 {
			return nil, fmt.Errorf("onnx: %v: 3-D Q %v, K %v, V %v need q_num_heads and kv_num_heads (got %d and %d) dividing their hidden sizes", n, qs, ks, vs, qh, kh)
		}
		a.batch, a.qLen, a.qHeads, a.headDim = qs[0], qs[1], qh, qs[2]/qh
		a.kvLen, a.kvHeads, a.vHeadDim = ks[1], kh, vs[2]/kh
		if ks[0] != a.batch || vs[0] != a.batch || vs[1] != a.kvLen || ks[2]/kh != a.headDim {
			return nil, fmt.Errorf("onnx: %v: Q %v, K %v and V %v disagree on batch, key length or head size", n, qs, ks, vs)
		}
	default:
		return nil, fmt.Errorf("onnx: %v: Q %v, K %v and V %v must all be 3-D or all 4-D", n, qs, ks, vs)
	}
	if a.kvHeads == 0 || a.qHeads%a.kvHeads != 0 {
		return nil, fmt.Errorf("onnx: %v: %d query heads are not a multiple of %d key/value heads", n, a.qHeads, a.kvHeads)
	}
	a.scale = n.attrFloat("scale", 0)
	if !n.has("scale") {
		a.scale = 1 / math.Sqrt(float64(a.headDim))
	}
	pastK, pastV := arg(in, 4), arg(in, 5)
	if (pastK == nil) != (pastV == nil) {
		return nil, fmt.Errorf("onnx: %v: past_key and past_value come together", n)
	}
	if pastK != nil {
		pk, pv := pastK.Shape(), pastV.Shape()
		if len(pk) != 4 || len(pv) != 4 || pk[0] != a.batch || pk[1] != a.kvHeads || pk[3] != a.headDim ||
			pv[0] != a.batch || pv[1] != a.kvHeads || pv[2] != pk[2] || pv[3] != a.vHeadDim {
			return nil, fmt.Errorf("onnx: %v: past_key %v and past_value %v must be [%d, %d, past, %d] and [%d, %d, past, %d]",
				n, pk, pv, a.batch, a.kvHeads, a.headDim, a.batch, a.kvHeads, a.vHeadDim)
		}
		if pastK.DType() != q.DType() || pastV.DType() != q.DType() {
			return nil, fmt.Errorf("onnx: %v: past_key and past_value must have Q's dtype %s", n, q.DType())
		}
		a.pastLen = pk[2]
	}
	if err := a.setMask(n, arg(in, 3)); err != nil {
		return nil, err
	}
	if nk := arg(in, 6); nk != nil {
		if nk.DType().IsFloat() || nk.Numel() != a.batch {
			return nil, fmt.Errorf("onnx: %v: nonpad_kv_seqlen %s %v must hold one integer per batch (%d)", n, nk.DType(), nk.Shape(), a.batch)
		}
		a.nonpad = nk.Int64s()
	}
	if err := checkElements(n, int64(a.batch)*int64(a.qHeads)*int64(a.qLen)*int64(a.total())); err != nil {
		return nil, err
	}
	if q.DType() == tensor.Float64 {
		return runAttention[float64](a, q, k, v, pastK, pastV)
	}
	return runAttention[float32](a, q, k, v, pastK, pastV)
}

// checkElements refuses an intermediate larger than the session's element
// limit.
func checkElements(n *node, elems int64) error {
	limit := n.maxElements
	if limit <= 0 {
		limit = math.MaxInt64
	}
	if elems < 0 || elems > limit || elems*8 > n.byteLimit() {
		return fmt.Errorf("onnx: %v: %d score elements exceed the session's limits", n, elems)
	}
	return nil
}

// setMask reads attn_mask as an additive bias broadcast to [batch, q
// heads, q, total].
func (a *attention) setMask(n *node, m *tensor.Tensor) error {
	if m == nil {
		return nil
	}
	ms := m.Shape()
	if len(ms) < 1 || len(ms) > 4 {
		return fmt.Errorf("onnx: %v: attn_mask %v must have rank 1 to 4", n, ms)
	}
	full := [4]int{a.batch, a.qHeads, a.qLen, a.total()}
	off := 4 - len(ms)
	for i := range a.maskShape {
		a.maskShape[i] = 1
	}
	copy(a.maskShape[off:], ms)
	for i := 0; i < 3; i++ {
		if d := a.maskShape[i]; d != 1 && d != full[i] {
			return fmt.Errorf("onnx: %v: attn_mask %v does not broadcast to %v", n, ms, full)
		}
	}
	a.maskLen = a.maskShape[3]
	if a.maskLen > full[3] {
		return fmt.Errorf("onnx: %v: attn_mask %v is longer than the %d keys", n, ms, full[3])
	}
	stride := 1
	for i := 3; i >= 0; i-- {
		if a.maskShape[i] == 1 && i < 3 {
			a.maskStrides[i] = 0
		} else {
			a.maskStrides[i] = stride
		}
		stride *= a.maskShape[i]
	}
	if m.DType() == tensor.Bool {
		bits := m.Bools()
		a.mask = make([]float64, len(bits))
		for i, ok := range bits {
			if !ok {
				a.mask[i] = math.Inf(-1)
			}
		}
		return nil
	}
	if !m.DType().IsFloat() {
		return fmt.Errorf("onnx: %v: attn_mask has dtype %s; want bool or a float type", n, m.DType())
	}
	a.mask = m.Float64s()
	return nil
}

// heads returns t's elements laid out [batch, heads, seq, dim]: a 4-D
// input as it is, a 3-D [batch, seq, heads*dim] one transposed.
func heads[T float32 | float64](t *tensor.Tensor, threeD bool, batch, nHeads, seq, dim int) []T {
	src := floatData[T](t)
	if !threeD {
		return src
	}
	out := make([]T, len(src))
	for b := range batch {
		for s := range seq {
			for h := range nHeads {
				copy(out[((b*nHeads+h)*seq+s)*dim:][:dim], src[((b*seq+s)*nHeads+h)*dim:][:dim])
			}
		}
	}
	return out
}

// withPast prepends the past cache to the new keys or values of each
// batch and head.
func withPast[T float32 | float64](past *tensor.Tensor, cur []T, batch, nHeads, pastLen, seq, dim int) []T {
	if past == nil {
		return cur
	}
	p := heads[T](past, false, batch, nHeads, pastLen, dim)
	out := make([]T, 0, len(p)+len(cur))
	for bh := range batch * nHeads {
		out = append(out, p[bh*pastLen*dim:(bh+1)*pastLen*dim]...)
		out = append(out, cur[bh*seq*dim:(bh+1)*seq*dim]...)
	}
	return out
}

// runAttention computes the outputs in T (float32 for the 16- and 32-bit
// float types, float64 for double) and converts them to Q's dtype. The two
// products (Q·Kᵀ and P·V) run as batched matrix products of the tensor
// package: grouped query heads share their key/value head, so Q viewed as
// [batch, kv heads, group·q, dim] multiplies K [batch, kv heads, total,
// dim] directly. Scaling, the cap, the mask and the softmax are one pass
// over each row of scores.
func runAttention[T float32 | float64](a *attention, q, k, v, pastK, pastV *tensor.Tensor) ([]*tensor.Tensor, error) {
	total := a.total()
	group := a.qHeads / a.kvHeads
	qd := heads[T](q, a.threeD, a.batch, a.qHeads, a.qLen, a.headDim)
	kd := withPast(pastK, heads[T](k, a.threeD, a.batch, a.kvHeads, a.kvLen, a.headDim), a.batch, a.kvHeads, a.pastLen, a.kvLen, a.headDim)
	vd := withPast(pastV, heads[T](v, a.threeD, a.batch, a.kvHeads, a.kvLen, a.vHeadDim), a.batch, a.kvHeads, a.pastLen, a.kvLen, a.vHeadDim)
	rows := group * a.qLen
	qt := tensor.FromSlice(qd, a.batch, a.kvHeads, rows, a.headDim)
	kt := tensor.FromSlice(kd, a.batch, a.kvHeads, total, a.headDim)
	probs := floatData[T](qt.MatMul(kt.Transpose(2, 3))) // [batch, q heads, q, total]
	var scores []T
	if a.wantScores {
		scores = make([]T, len(probs))
	}
	var blank []int // the rows whose keys are all hidden, by offset
	negInf := math.Inf(-1)
	for b := range a.batch {
		valid := total
		offset := a.pastLen
		if a.nonpad != nil {
			valid = int(a.nonpad[b])
			if a.pastLen == 0 {
				offset = valid - a.qLen
			}
		}
		for h := range a.qHeads {
			for i := range a.qLen {
				at := ((b*a.qHeads+h)*a.qLen + i) * total
				pr := probs[at : at+total]
				var out []T
				if scores != nil {
					out = scores[at : at+total]
				}
				seen := false
				for j, dot := range pr {
					// The cap comes before the mask, so that a hidden key
					// stays hidden (-Inf) instead of scoring -softcap.
					s := a.cap(float64(dot) * a.scale)
					if out != nil && a.mode <= 1 {
						out[j] = T(s)
					}
					if a.mask != nil {
						s += a.bias(b, h, i, j)
					}
					if j >= valid || a.hidden(i+offset, j) {
						s = negInf
					}
					if out != nil && a.mode == 2 {
						out[j] = T(s)
					}
					pr[j] = T(s)
					seen = seen || !math.IsInf(s, -1)
				}
				if !seen {
					blank = append(blank, at)
				}
			}
		}
	}
	// The softmax runs on the whole score tensor with the tensor package's
	// vector kernels; a row whose keys are all hidden attends to nothing.
	probs = floatData[T](tensor.FromSlice(probs, len(probs)/max(total, 1), total).Softmax(1))
	for _, at := range blank {
		clear(probs[at : at+total])
	}
	if scores != nil && a.mode == 3 {
		copy(scores, probs)
	}
	pt := tensor.FromSlice(probs, a.batch, a.kvHeads, rows, total)
	y := floatData[T](pt.MatMul(tensor.FromSlice(vd, a.batch, a.kvHeads, total, a.vHeadDim))) // [batch, q heads, q, v dim]
	dt := q.DType()
	var yt *tensor.Tensor
	if a.threeD {
		out := make([]T, len(y))
		for b := range a.batch {
			for h := range a.qHeads {
				for i := range a.qLen {
					copy(out[((b*a.qLen+i)*a.qHeads+h)*a.vHeadDim:][:a.vHeadDim], y[((b*a.qHeads+h)*a.qLen+i)*a.vHeadDim:][:a.vHeadDim])
				}
			}
		}
		yt = tensor.FromSlice(out, a.batch, a.qLen, a.qHeads*a.vHeadDim).To(dt)
	} else {
		yt = tensor.FromSlice(y, a.batch, a.qHeads, a.qLen, a.vHeadDim).To(dt)
	}
	outs := []*tensor.Tensor{yt, nil, nil, nil}
	if a.wantPresent {
		outs[1] = tensor.FromSlice(kd, a.batch, a.kvHeads, total, a.headDim).To(dt)
		outs[2] = tensor.FromSlice(vd, a.batch, a.kvHeads, total, a.vHeadDim).To(dt)
	}
	if scores != nil {
		outs[3] = tensor.FromSlice(scores, a.batch, a.qHeads, a.qLen, total).To(dt)
	}
	return outs, nil
}

// hidden reports whether the query at absolute position pos may not see
// key j: after it under is_causal, or outside its window.
func (a *attention) hidden(pos, j int) bool {
	return a.causal && j > pos || a.leftWindow >= 0 && j < pos-a.leftWindow || a.rightWindow >= 0 && j > pos+a.rightWindow
}

// cap applies the soft cap c·tanh(s/c) when one is set.
func (a *attention) cap(s float64) float64 {
	if a.softcap > 0 {
		return a.softcap * math.Tanh(s/a.softcap)
	}
	return s
}

// bias returns the mask's value for query i of batch b and head h at key
// j: 0 without a mask, -Inf past a short mask's end.
func (a *attention) bias(b, h, i, j int) float64 {
	if a.mask == nil {
		return 0
	}
	if j >= a.maskLen {
		return math.Inf(-1)
	}
	return a.mask[b*a.maskStrides[0]+h*a.maskStrides[1]+i*a.maskStrides[2]+j*a.maskStrides[3]]
}
