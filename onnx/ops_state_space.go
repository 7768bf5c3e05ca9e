package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// The recurrent-state operators of opset 27 that hybrid and linear
// transformers (Mamba-style blocks, gated delta networks) use:
// CausalConvWithState and LinearAttention. Both carry a state from one call
// to the next, so a decoder runs them a token at a time.

// stateSpaceOps registers them.
func stateSpaceOps() opTable {
	return opTable{
		"CausalConvWithState": {{since: 27, impl: opCausalConvWithState}},
		"LinearAttention":     {{since: 27, impl: opLinearAttention}},
	}
}

// opCausalConvWithState is CausalConvWithState 27: a depthwise 1-d
// convolution of input [B, C, L] by weight [C, 1, k] (plus bias [C]) over
// the input prefixed by past_state [B, C, k−1] (zeros when absent), so
// that output position t sees inputs t−k+1..t; activation "silu" (or its
// alias "swish") applies x·sigmoid(x). present_state holds the last k−1
// positions of the prefixed input, the next call's past_state.
func opCausalConvWithState(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	w, err := n.needFloat(in, 1)
	if err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	if len(xs) != 3 || len(ws) != 3 || ws[0] != xs[1] || ws[1] != 1 || ws[2] < 1 {
		return nil, fmt.Errorf("onnx: %v: input %v and weight %v must be [B, C, L] and [C, 1, k]", n, xs, ws)
	}
	act := n.attrString("activation", "none")
	if act != "none" && act != "silu" && act != "swish" {
		return nil, fmt.Errorf("onnx: %v: activation %q, want none, silu or swish", n, act)
	}
	B, C, L, k := xs[0], xs[1], xs[2], ws[2]
	var bias []float64
	if b := arg(in, 2); b != nil {
		if b.Numel() != C {
			return nil, fmt.Errorf("onnx: %v: bias %v must have %d elements", n, b.Shape(), C)
		}
		bias = b.Float64s()
	}
	P := L + k - 1
	padded := make([]float64, B*C*P)
	if p := arg(in, 3); p != nil {
		if fmt.Sprint(p.Shape()) != fmt.Sprint([]int{B, C, k - 1}) {
			return nil, fmt.Errorf("onnx: %v: past_state %v must be [%d %d %d]", n, p.Shape(), B, C, k-1)
		}
		pv := p.Float64s()
		for bc := range B * C {
			copy(padded[bc*P:], pv[bc*(k-1):(bc+1)*(k-1)])
		}
	}
	xv, wv := x.Float64s(), w.Float64s()
	for bc := range B * C {
		copy(padded[bc*P+k-1:], xv[bc*L:(bc+1)*L])
	}
	out := make([]float64, B*C*L)
	state := make([]float64, B*C*(k-1))
	for bc := range B * C {
		c := bc % C
		row, taps := padded[bc*P:(bc+1)*P], wv[c*k:(c+1)*k]
		for t := range L {
			var s float64
			if bias != nil {
				s = bias[c]
			}
			for j, wj := range taps {
				s += wj * row[t+j]
			}
			if act != "none" {
				s *= 1 / (1 + math.Exp(-s))
			}
			out[bc*L+t] = s
		}
		copy(state[bc*(k-1):], row[P-(k-1):])
	}
	dt := x.DType()
	return []*tensor.Tensor{tensor.FromSlice(out, B, C, L).To(dt), tensor.FromSlice(state, B, C, k-1).To(dt)}, nil
}

// opLinearAttention is LinearAttention 27: attention whose memory is a
// fixed-size state S [B, kv heads, d_k, d_v] updated once per token
// instead of a growing cache. Query, key and value are [B, T, heads·d]
// (q_num_heads query heads sharing kv_num_heads state heads). For each
// token t, by update_rule:
//
//   - gated and gated_delta first decay the state, S ← S·exp(g_t), with
//     decay g [B, T, kv heads] or [B, T, kv heads·d_k];
//   - delta and gated_delta replace v_t by β_t·(v_t − Sᵀk_t) (beta [B, T,
//     kv heads or 1]; an erase_gate [B, T, kv heads·d_k] multiplies the
//     k_t of that read);
//   - every rule then writes S ← S + k_t ⊗ v_t and reads
//     o_t = scale·Sᵀq_t (scale defaults to 1/√d_k).
//
// It computes in float32 and returns the output [B, T, q heads·d_v] and
// present_state, the state after the last token (past_state's dtype, or
// the query's).
func opLinearAttention(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	qkv, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	q, k, v := qkv[0], qkv[1], qkv[2]
	rule := n.attrString("update_rule", "gated_delta")
	gating := rule == "gated" || rule == "gated_delta"
	delta := rule == "delta" || rule == "gated_delta"
	if !gating && !delta && rule != "linear" {
		return nil, fmt.Errorf("onnx: %v: update_rule %q, want linear, gated, delta or gated_delta", n, rule)
	}
	hq, hk := int(n.attrInt("q_num_heads", 0)), int(n.attrInt("kv_num_heads", 0))
	if hq <= 0 || hk <= 0 || hq%hk != 0 {
		return nil, fmt.Errorf("onnx: %v: q_num_heads %d must be a positive multiple of kv_num_heads %d", n, hq, hk)
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) != 3 || len(ks) != 3 || len(vs) != 3 || qs[2]%hq != 0 || vs[2]%hk != 0 ||
		ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || ks[2] != qs[2]/hq*hk {
		return nil, fmt.Errorf("onnx: %v: query %v, key %v and value %v must be [B, T, heads·d] with matching B, T and d_k", n, qs, ks, vs)
	}
	B, T := qs[0], qs[1]
	dk, dv := qs[2]/hq, vs[2]/hk
	decay, beta, erase := arg(in, 4), arg(in, 5), arg(in, 6)
	if gating != (decay != nil) || delta != (beta != nil) || (erase != nil && !delta) {
		return nil, fmt.Errorf("onnx: %v: update_rule %q takes decay %v, beta %v and erase_gate only with delta", n, rule, gating, delta)
	}
	var gv, bv, ev []float32
	gPer, bPer := 0, 0
	if decay != nil {
		ds := decay.Shape()
		if len(ds) != 3 || ds[0] != B || ds[1] != T || (ds[2] != hk && ds[2] != hk*dk) {
			return nil, fmt.Errorf("onnx: %v: decay %v must be [%d %d %d] or [%d %d %d]", n, ds, B, T, hk, B, T, hk*dk)
		}
		gv, gPer = decay.Float32s(), ds[2]/hk
	}
	if beta != nil {
		bs := beta.Shape()
		if len(bs) != 3 || bs[0] != B || bs[1] != T || (bs[2] != hk && bs[2] != 1) {
			return nil, fmt.Errorf("onnx: %v: beta %v must be [%d %d %d] or [%d %d 1]", n, bs, B, T, hk, B, T)
		}
		bv, bPer = beta.Float32s(), bs[2]
	}
	if erase != nil {
		if fmt.Sprint(erase.Shape()) != fmt.Sprint([]int{B, T, hk * dk}) {
			return nil, fmt.Errorf("onnx: %v: erase_gate %v must be [%d %d %d]", n, erase.Shape(), B, T, hk*dk)
		}
		ev = erase.Float32s()
	}
	if err := checkElements(n, int64(B)*int64(hk)*int64(dk)*int64(dv)+int64(B)*int64(T)*int64(hq)*int64(dv)); err != nil {
		return nil, err
	}
	stateDT := q.DType()
	state := make([]float32, B*hk*dk*dv)
	if p := arg(in, 3); p != nil {
		if fmt.Sprint(p.Shape()) != fmt.Sprint([]int{B, hk, dk, dv}) {
			return nil, fmt.Errorf("onnx: %v: past_state %v must be [%d %d %d %d]", n, p.Shape(), B, hk, dk, dv)
		}
		state, stateDT = p.Float32s(), p.DType()
	}
	scale := n.attrFloat("scale", 0)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(dk))
	}
	qv, kv, vv := q.Float32s(), k.Float32s(), v.Float32s()
	out := make([]float32, B*T*hq*dv)
	group := hq / hk
	vt := make([]float32, dv)
	for b := range B {
		for t := range T {
			for h := range hk {
				S := state[(b*hk+h)*dk*dv:][:dk*dv]
				kt := kv[((b*T+t)*hk+h)*dk:][:dk]
				copy(vt, vv[((b*T+t)*hk+h)*dv:][:dv])
				if gating {
					g := gv[((b*T+t)*hk+h)*gPer:][:gPer]
					for d := range dk {
						f := float32(math.Exp(float64(g[min(d, gPer-1)])))
						for m := range dv {
							S[d*dv+m] *= f
						}
					}
				}
				if delta {
					bt := bv[(b*T+t)*bPer+min(h, bPer-1)]
					for m := range dv {
						var got float32
						for d := range dk {
							kd := kt[d]
							if ev != nil {
								kd *= ev[((b*T+t)*hk+h)*dk+d]
							}
							got += S[d*dv+m] * kd
						}
						vt[m] = bt * (vt[m] - got)
					}
				}
				for d := range dk {
					for m := range dv {
						S[d*dv+m] += kt[d] * vt[m]
					}
				}
				for g := range group {
					hh := h*group + g
					qt := qv[((b*T+t)*hq+hh)*dk:][:dk]
					o := out[((b*T+t)*hq+hh)*dv:][:dv]
					for m := range dv {
						var s float32
						for d := range dk {
							s += qt[d] * S[d*dv+m]
						}
						o[m] = float32(scale) * s
					}
				}
			}
		}
	}
	return []*tensor.Tensor{
		tensor.FromSlice(out, B, T, hq*dv).To(q.DType()),
		tensor.FromSlice(state, B, hk, dk, dv).To(stateDT),
	}, nil
}
