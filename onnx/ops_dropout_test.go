package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMT19937MatchesReferenceStreams(t *testing.T) {
	// The reference implementation's first output for its default seed
	// 5489, and NumPy's RandomState(0).random_sample(700) at 0, 1 and 699
	// (the last after the state has been regenerated).
	assert.Equal(t, uint32(3499211612), newMT19937(5489).uint32())
	g := newMT19937(0)
	var got []float64
	for range 700 {
		got = append(got, g.float64())
	}
	assert.Equal(t, 0.5488135039273248, got[0])
	assert.Equal(t, 0.7151893663724195, got[1])
	assert.Equal(t, 0.8427768626848423, got[699])
}

func TestTrainingDropout(t *testing.T) {
	model := func(seed bool) []byte {
		var attrs [][]byte
		if seed {
			attrs = append(attrs, mkAttrInt("seed", 0))
		}
		return mkModel(13, graphParts{
			nodes:   [][]byte{mkNode("Dropout", []string{"x", "r", "t"}, []string{"y", "mask"}, attrs...)},
			inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat), mkValueInfoAnyShape("r", dtFloat), mkValueInfoAnyShape("t", dtBool)},
			outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat), mkValueInfoAnyShape("mask", dtBool)},
		})
	}
	x := tensor.FromSlice([]float32{1, 2, 3, 4})
	in := func(ratio float32) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{
			"x": x, "r": tensor.FromSlice([]float32{ratio}, []int{}...), "t": tensor.FromSlice([]bool{true}, []int{}...),
		}
	}
	// Seed 0 draws 0.549, 0.715, 0.603, 0.545: with ratio 0.6 the second
	// and third elements survive, scaled by 1/0.4.
	s := newSession(t, model(true))
	out, err := s.Run(context.Background(), in(0.6))
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true, true, false}, out["mask"].Bools())
	assert.InDeltaSlice(t, []float32{0, 5, 7.5, 0}, out["y"].Float32s(), 1e-6)

	// Unseeded: a fresh mask each run, always consistent with y.
	s = newSession(t, model(false))
	out, err = s.Run(context.Background(), in(0.5))
	require.NoError(t, err)
	for i, keep := range out["mask"].Bools() {
		want := float32(0)
		if keep {
			want = 2 * x.Float32s()[i]
		}
		assert.Equal(t, want, out["y"].Float32s()[i])
	}
	_, err = s.Run(context.Background(), in(1))
	require.ErrorContains(t, err, "ratio 1 must be in [0, 1)")
}
