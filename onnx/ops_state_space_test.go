package onnx

import (
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

func TestCausalConvWithStateByHand(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3}, 1, 1, 3)
	w := tensor.FromSlice([]float32{1, 10}, 1, 1, 2)
	past := tensor.FromSlice([]float32{5}, 1, 1, 1)
	out, err := opCausalConvWithState(testNode("CausalConvWithState", 27, 2, nil, nil), []*tensor.Tensor{x, w, nil, past})
	require.NoError(t, err)
	// The prefixed input is 5 1 2 3; each output is p[t] + 10·p[t+1].
	require.Equal(t, []float64{15, 21, 32}, out[0].Float64s())
	require.Equal(t, []float64{3}, out[1].Float64s(), "the last k-1 inputs")
	_, err = opCausalConvWithState(testNode("CausalConvWithState", 27, 2, nil, nil), []*tensor.Tensor{x, w, nil, tensor.FromSlice([]float32{1, 2}, 1, 1, 2)})
	require.ErrorContains(t, err, "past_state")
}

func TestLinearAttentionRules(t *testing.T) {
	q := tensor.FromSlice([]float32{1, 2}, 1, 2, 1)
	k := tensor.FromSlice([]float32{3, 4}, 1, 2, 1)
	v := tensor.FromSlice([]float32{5, 6}, 1, 2, 1)
	n := func(rule string) *node {
		nd := testNode("LinearAttention", 27, 2, map[string]int64{"q_num_heads": 1, "kv_num_heads": 1}, map[string]float32{"scale": 1})
		nd.maxElements = 1 << 20
		nd.attrs["update_rule"] = &attribute{name: "update_rule", s: []byte(rule)}
		return nd
	}
	// linear: S = 3·5 = 15, o = 15; S = 15 + 4·6 = 39, o = 2·39.
	out, err := opLinearAttention(n("linear"), []*tensor.Tensor{q, k, v})
	require.NoError(t, err)
	require.Equal(t, []float64{15, 78}, out[0].Float64s())
	require.Equal(t, []float64{39}, out[1].Float64s())
	// delta with beta 1: the second value becomes 6 − 15·4 = −54, so
	// S = 15 + 4·(−54) = −201.
	beta := tensor.FromSlice([]float32{1, 1}, 1, 2, 1)
	out, err = opLinearAttention(n("delta"), []*tensor.Tensor{q, k, v, nil, nil, beta})
	require.NoError(t, err)
	require.Equal(t, []float64{15, -402}, out[0].Float64s())
	// gated with decay log(0.5) halves the state before each write.
	decay := tensor.FromSlice([]float32{-0.6931472, -0.6931472}, 1, 2, 1)
	out, err = opLinearAttention(n("gated"), []*tensor.Tensor{q, k, v, tensor.FromSlice([]float32{10}, 1, 1, 1, 1), decay})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{20, 2 * (10 + 24)}, out[0].Float64s(), 1e-4)
	_, err = opLinearAttention(n("gated"), []*tensor.Tensor{q, k, v})
	require.ErrorContains(t, err, "takes decay")
}
