package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func melSession(t *testing.T) *Session {
	t.Helper()
	names := []string{"bands", "dft", "rate", "lo", "hi"}
	inputs := [][]byte{
		mkValueInfo("bands", dtInt64), mkValueInfo("dft", dtInt64), mkValueInfo("rate", dtInt64),
		mkValueInfo("lo", dtFloat), mkValueInfo("hi", dtFloat),
	}
	return newSession(t, mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("MelWeightMatrix", names, []string{"w"})},
		inputs:  inputs,
		outputs: [][]byte{mkValueInfoAnyShape("w", dtFloat)},
	}))
}

func melInputs(bands, dft, rate int64, lo, hi float32) map[string]*tensor.Tensor {
	i := func(v int64) *tensor.Tensor { return tensor.FromSlice([]int64{v}, []int{}...) }
	f := func(v float32) *tensor.Tensor { return tensor.FromSlice([]float32{v}, []int{}...) }
	return map[string]*tensor.Tensor{"bands": i(bands), "dft": i(dft), "rate": i(rate), "lo": f(lo), "hi": f(hi)}
}

func TestMelWeightMatrix(t *testing.T) {
	s := melSession(t)
	// 4 bands, 9-point DFT (5 bins, odd length), 16 kHz, 0 to 8 kHz. The
	// edges are 6 points a sixth of 0..2840.0 mel apart, i.e. 0, 365.4,
	// 921.5, 1767.8, 3055.9 and 5016.3 Hz, in bins floor(10·hz/16000) = 0,
	// 0, 0, 1, 1, 3 (values from ONNX's reference algorithm in NumPy).
	out, err := s.Run(context.Background(), melInputs(4, 9, 16000, 0, 8000))
	require.NoError(t, err)
	w := out["w"]
	require.Equal(t, []int{5, 4}, w.Shape())
	assert.Equal(t, []float32{
		1, 1, 0, 0,
		0, 0, 1, 1,
		0, 0, 0, 0.5,
		0, 0, 0, 0,
		0, 0, 0, 0,
	}, w.Float32s())
	for _, tc := range []struct {
		in  map[string]*tensor.Tensor
		msg string
	}{
		{melInputs(0, 16, 8000, 0, 4000), "must be positive"},
		{melInputs(8, 16, 8000, 100, 50), "must satisfy 0 <= lower <= upper"},
		{melInputs(8, 16, 8000, 0, 5000), "must satisfy 0 <= lower <= upper"},
	} {
		_, err := s.Run(context.Background(), tc.in)
		assert.ErrorContains(t, err, tc.msg)
	}
}
