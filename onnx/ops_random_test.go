package onnx

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runRandom runs a one-node model of op (inputs named in0…) twice and
// returns both outputs.
func runRandom(t *testing.T, op string, feeds []*tensor.Tensor, attrs ...[]byte) (first, second *tensor.Tensor) {
	t.Helper()
	var names []string
	var inputs [][]byte
	in := map[string]*tensor.Tensor{}
	for i, x := range feeds {
		name := string(rune('a' + i))
		names = append(names, name)
		inputs = append(inputs, mkValueInfoAnyShape(name, dtFloat))
		in[name] = x
	}
	s := newSession(t, mkModel(15, graphParts{
		nodes:   [][]byte{mkNode(op, names, []string{"y"}, attrs...)},
		inputs:  inputs,
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
	var outs [2]*tensor.Tensor
	for i := range outs {
		out, err := s.Run(context.Background(), in)
		require.NoError(t, err)
		outs[i] = out["y"]
	}
	return outs[0], outs[1]
}

func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

func TestRandomOpsDistributions(t *testing.T) {
	const n = 20000
	// Uniform on [-2, 6): mean 2, standard deviation 8/√12.
	a, b := runRandom(t, "RandomUniform", nil, mkAttrInts("shape", 100, n/100), mkAttrFloat("low", -2), mkAttrFloat("high", 6))
	require.Equal(t, []int{100, n / 100}, a.Shape())
	m, s := meanStd(a.Float64s())
	assert.InDelta(t, 2, m, 0.1)
	assert.InDelta(t, 8/math.Sqrt(12), s, 0.05)
	assert.NotEqual(t, a.Float32s(), b.Float32s(), "unseeded draws differ between runs (never constant-folded)")
	for _, v := range a.Float64s() {
		require.True(t, v >= -2 && v < 6, "%v outside [-2, 6)", v)
	}

	// Normal with mean 3 and scale 0.5, seeded: both runs agree.
	a, b = runRandom(t, "RandomNormalLike", []*tensor.Tensor{tensor.Zeros([]int{n})}, mkAttrFloat("mean", 3), mkAttrFloat("scale", 0.5), mkAttrFloat("seed", 7))
	m, s = meanStd(a.Float64s())
	assert.InDelta(t, 3, m, 0.02)
	assert.InDelta(t, 0.5, s, 0.02)
	assert.Equal(t, a.Float32s(), b.Float32s(), "a seeded model draws the same values every run")

	// Bernoulli: frequency of ones near p.
	p := tensor.Full([]int{n}, 0.3)
	a, _ = runRandom(t, "Bernoulli", []*tensor.Tensor{p})
	m, _ = meanStd(a.Float64s())
	assert.InDelta(t, 0.3, m, 0.02)

	// Multinomial over log-probabilities of (0.1, 0.2, 0.7).
	logits := tensor.FromSlice([]float32{float32(math.Log(0.1)), float32(math.Log(0.2)), float32(math.Log(0.7))}, 1, 3)
	a, _ = runRandom(t, "Multinomial", []*tensor.Tensor{logits}, mkAttrInt("sample_size", n), mkAttrInt("dtype", dtInt64))
	require.Equal(t, tensor.Int64, a.DType())
	var counts [3]float64
	for _, c := range a.Int64s() {
		counts[c]++
	}
	assert.InDeltaSlice(t, []float64{0.1, 0.2, 0.7}, []float64{counts[0] / n, counts[1] / n, counts[2] / n}, 0.02)
}

func TestRandomOpsRejectBadInput(t *testing.T) {
	s := newSession(t, mkModel(15, graphParts{
		nodes:   [][]byte{mkNode("Bernoulli", []string{"p"}, []string{"y"})},
		inputs:  [][]byte{mkValueInfoAnyShape("p", dtFloat)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
	_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"p": tensor.FromSlice([]float32{0.5, 1.5})})
	require.ErrorContains(t, err, "probability 1.5 at 1 outside [0, 1]")

	m, err := Read(bytes.NewReader(mkModel(15, graphParts{
		nodes:   [][]byte{mkNode("RandomUniform", nil, []string{"y"}, mkAttrInts("shape", 1<<40, 1<<40))},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	})))
	require.NoError(t, err)
	sess, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = sess.Run(context.Background(), nil)
	require.Error(t, err, "a huge declared shape is refused before anything is allocated")
}
