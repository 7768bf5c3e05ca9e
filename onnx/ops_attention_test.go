package onnx

import (
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// testNode returns a node of opType at opset with integer and float
// attributes, for calling an operator directly.
func testNode(opType string, opset int64, outputs int, ints map[string]int64, floats map[string]float32) *node {
	n := &node{opType: opType, opset: opset, attrs: map[string]*attribute{}}
	for i := range outputs {
		n.outputs = append(n.outputs, string(rune('a'+i)))
	}
	for k, v := range ints {
		n.attrs[k] = &attribute{name: k, i: v}
	}
	for k, v := range floats {
		n.attrs[k] = &attribute{name: k, f: v}
	}
	return n
}

func TestAttentionByHand(t *testing.T) {
	// One head, one query [1 0], keys [1 0] and [0 1], scale 1: the scores
	// are 1 and 0, so the weights are e/(e+1) and 1/(e+1).
	q := tensor.FromSlice([]float32{1, 0}, 1, 1, 1, 2)
	k := tensor.FromSlice([]float32{1, 0, 0, 1}, 1, 1, 2, 2)
	v := tensor.FromSlice([]float32{1, 2, 3, 4}, 1, 1, 2, 2)
	out, err := opAttention(testNode("Attention", 23, 4, map[string]int64{"qk_matmul_output_mode": 3}, map[string]float32{"scale": 1}), []*tensor.Tensor{q, k, v})
	require.NoError(t, err)
	p0 := math.E / (math.E + 1)
	p1 := 1 - p0
	require.InDeltaSlice(t, []float64{p0*1 + p1*3, p0*2 + p1*4}, out[0].Float64s(), 1e-6)
	require.Equal(t, []int{1, 1, 1, 2}, out[0].Shape())
	require.InDeltaSlice(t, []float64{p0, p1}, out[3].Float64s(), 1e-6, "mode 3 returns the softmax")
	require.Equal(t, []int{1, 1, 2, 2}, out[1].Shape(), "present_key is the keys")

	// A boolean mask hiding the first key leaves only the second value.
	mask := tensor.FromSlice([]bool{false, true}, 1, 2)
	out, err = opAttention(testNode("Attention", 23, 1, nil, map[string]float32{"scale": 1}), []*tensor.Tensor{q, k, v, mask})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{3, 4}, out[0].Float64s(), 1e-6)

	// A mask hiding every key gives zeros, not NaN.
	none := tensor.FromSlice([]bool{false, false}, 1, 2)
	out, err = opAttention(testNode("Attention", 23, 1, nil, nil), []*tensor.Tensor{q, k, v, none})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 0}, out[0].Float64s())
}

func TestAttentionCausalPastAndGroups(t *testing.T) {
	// Two query heads share one key/value head; two new queries follow one
	// cached key. Under is_causal the first new query (position 1) sees
	// keys 0 and 1, the second all three.
	q := tensor.FromSlice([]float32{0, 0, 0, 0, 0, 0, 0, 0}, 1, 2, 2, 2) // zero scores: uniform weights
	k := tensor.FromSlice([]float32{1, 1, 1, 1}, 1, 1, 2, 2)
	v := tensor.FromSlice([]float32{2, 0, 4, 0}, 1, 1, 2, 2)
	pastK := tensor.FromSlice([]float32{1, 1}, 1, 1, 1, 2)
	pastV := tensor.FromSlice([]float32{0, 6}, 1, 1, 1, 2)
	out, err := opAttention(testNode("Attention", 23, 3, map[string]int64{"is_causal": 1}, nil),
		[]*tensor.Tensor{q, k, v, nil, pastK, pastV})
	require.NoError(t, err)
	// Query 0 averages values [0 6] and [2 0]; query 1 all three.
	want := []float64{1, 3, 2, 2}
	require.InDeltaSlice(t, append(append([]float64(nil), want...), want...), out[0].Float64s(), 1e-6, "both heads agree")
	require.Equal(t, []int{1, 1, 3, 2}, out[2].Shape())
	require.Equal(t, []float64{0, 6, 2, 0, 4, 0}, out[2].Float64s(), "present_value is past then new")
}

func TestAttentionThreeDAndSoftcap(t *testing.T) {
	// 3-D inputs [batch, seq, heads*dim] with two heads of size 1.
	q := tensor.FromSlice([]float32{1, -1}, 1, 1, 2)
	k := tensor.FromSlice([]float32{2, 2, 0, 0}, 1, 2, 2)
	v := tensor.FromSlice([]float32{1, 10, 0, 20}, 1, 2, 2)
	n := testNode("Attention", 23, 4, map[string]int64{"q_num_heads": 2, "kv_num_heads": 2, "qk_matmul_output_mode": 0},
		map[string]float32{"scale": 1, "softcap": 1})
	out, err := opAttention(n, []*tensor.Tensor{q, k, v})
	require.NoError(t, err)
	// Head 0 scores tanh(2) and 0; head 1 tanh(-2) and 0.
	t2 := math.Tanh(2)
	require.InDeltaSlice(t, []float64{t2, 0, -t2, 0}, out[3].Float64s(), 1e-6)
	w0 := math.Exp(t2) / (math.Exp(t2) + 1)
	w1 := math.Exp(-t2) / (math.Exp(-t2) + 1)
	require.InDeltaSlice(t, []float64{w0 * 1, w1*10 + (1-w1)*20}, out[0].Float64s(), 1e-5)
	require.Equal(t, []int{1, 1, 2}, out[0].Shape())
}

func TestAttentionRejectsBadShapes(t *testing.T) {
	q := tensor.FromSlice([]float32{1, 0, 0}, 1, 1, 1, 3)
	k := tensor.FromSlice([]float32{1, 0}, 1, 1, 1, 2)
	_, err := opAttention(testNode("Attention", 23, 1, nil, nil), []*tensor.Tensor{q, k, k})
	require.ErrorContains(t, err, "head size")
	q3 := tensor.FromSlice([]float32{1, 0}, 1, 1, 2)
	_, err = opAttention(testNode("Attention", 23, 1, nil, nil), []*tensor.Tensor{q3, q3, q3})
	require.ErrorContains(t, err, "q_num_heads")
}

func TestRMSNormalizationByHand(t *testing.T) {
	x := tensor.FromSlice([]float32{3, 4, 0, 0}, 2, 2)
	scale := tensor.FromSlice([]float32{1, 2}, 2)
	out, err := opRMSNormalization(testNode("RMSNormalization", 23, 1, nil, map[string]float32{"epsilon": 0.5}), []*tensor.Tensor{x, scale})
	require.NoError(t, err)
	r := math.Sqrt(12.5 + 0.5)
	require.InDeltaSlice(t, []float64{3 / r, 8 / r, 0, 0}, out[0].Float64s(), 1e-6)
}

func TestRotaryEmbeddingByHand(t *testing.T) {
	// A quarter turn (cos 0, sin 1) maps a pair (x1, x2) to (-x2, x1);
	// position 0 of the caches is the identity.
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 1, 2, 3, 4}, 1, 2, 1, 4) // [batch, seq, heads*dim] with 1 head of 4
	x = x.Reshape(1, 2, 4)
	cos := tensor.FromSlice([]float32{1, 1, 0, 0}, 2, 2)
	sin := tensor.FromSlice([]float32{0, 0, 1, 1}, 2, 2)
	pos := tensor.FromSlice([]int64{0, 1}, 1, 2)
	out, err := opRotaryEmbedding(testNode("RotaryEmbedding", 23, 1, map[string]int64{"num_heads": 1}, nil), []*tensor.Tensor{x, cos, sin, pos})
	require.NoError(t, err)
	// Halves pair up: (1,3) and (2,4) turn to (-3,1) and (-4,2).
	require.Equal(t, []float64{1, 2, 3, 4, -3, -4, 1, 2}, out[0].Float64s())
	out, err = opRotaryEmbedding(testNode("RotaryEmbedding", 23, 1, map[string]int64{"num_heads": 1, "interleaved": 1}, nil), []*tensor.Tensor{x, cos, sin, pos})
	require.NoError(t, err)
	// Neighbours pair up: (1,2) and (3,4) turn to (-2,1) and (-4,3).
	require.Equal(t, []float64{1, 2, 3, 4, -2, 1, -4, 3}, out[0].Float64s())
	// A partial rotation (dim 2) leaves the rest alone.
	cos1 := tensor.FromSlice([]float32{1, 0}, 2, 1)
	sin1 := tensor.FromSlice([]float32{0, 1}, 2, 1)
	out, err = opRotaryEmbedding(testNode("RotaryEmbedding", 23, 1, map[string]int64{"num_heads": 1, "rotary_embedding_dim": 2}, nil), []*tensor.Tensor{x, cos1, sin1, pos})
	require.NoError(t, err)
	require.Equal(t, []float64{1, 2, 3, 4, -2, 1, 3, 4}, out[0].Float64s())
	_, err = opRotaryEmbedding(testNode("RotaryEmbedding", 23, 1, map[string]int64{"num_heads": 1}, nil), []*tensor.Tensor{x, cos, sin, tensor.FromSlice([]int64{0, 7}, 1, 2)})
	require.ErrorContains(t, err, "position id 7")
}

// BenchmarkAttention128 times the fused kernel on one transformer layer's
// self-attention: batch 1, 8 heads of 64, 128 tokens, causal.
func BenchmarkAttention128(b *testing.B) {
	gen := tensor.NewGenerator(1)
	q := gen.Randn([]int{1, 8, 128, 64})
	k := gen.Randn([]int{1, 8, 128, 64})
	v := gen.Randn([]int{1, 8, 128, 64})
	n := testNode("Attention", 23, 1, map[string]int64{"is_causal": 1}, nil)
	n.maxElements = 1 << 30
	b.ResetTimer()
	for range b.N {
		if _, err := opAttention(n, []*tensor.Tensor{q, k, v}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFlexAttentionWithoutModsIsAttention(t *testing.T) {
	gen := tensor.NewGenerator(3)
	q := gen.Randn([]int{1, 4, 3, 8})
	k := gen.Randn([]int{1, 2, 5, 8})
	v := gen.Randn([]int{1, 2, 5, 6})
	n := testNode("FlexAttention", 1, 1, nil, nil)
	n.maxElements = 1 << 20
	flex, err := opFlexAttention(n, []*tensor.Tensor{q, k, v})
	require.NoError(t, err)
	plain, err := opAttention(testNode("Attention", 23, 1, nil, nil), []*tensor.Tensor{q, k, v})
	require.NoError(t, err)
	require.Equal(t, []int{1, 4, 3, 6}, flex[0].Shape())
	require.InDeltaSlice(t, plain[0].Float64s(), flex[0].Float64s(), 1e-5)
	_, err = opFlexAttention(n, []*tensor.Tensor{q, gen.Randn([]int{1, 3, 5, 8}), v})
	require.ErrorContains(t, err, "Hkv dividing Hq")
}
