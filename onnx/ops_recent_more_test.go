package onnx

import (
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

func TestCumProdModes(t *testing.T) {
	x := tensor.FromSlice([]int32{2, 3, 4}, 3)
	axis := tensor.FromSlice([]int64{0})
	cases := []struct {
		exclusive, reverse int64
		want               []int64
	}{
		{0, 0, []int64{2, 6, 24}},
		{1, 0, []int64{1, 2, 6}},
		{0, 1, []int64{24, 12, 4}},
		{1, 1, []int64{12, 4, 1}},
	}
	for _, c := range cases {
		out, err := opCumProd(testNode("CumProd", 26, 1, map[string]int64{"exclusive": c.exclusive, "reverse": c.reverse}, nil), []*tensor.Tensor{x, axis})
		require.NoError(t, err)
		require.Equal(t, tensor.Int32, out[0].DType())
		require.Equal(t, c.want, out[0].Int64s(), "exclusive %d reverse %d", c.exclusive, c.reverse)
	}
	// Along axis 1 of a matrix.
	m := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	out, err := opCumProd(testNode("CumProd", 26, 1, nil, nil), []*tensor.Tensor{m, tensor.FromSlice([]int64{-1})})
	require.NoError(t, err)
	require.Equal(t, []float64{1, 2, 6, 4, 20, 120}, out[0].Float64s())
}

func TestBitCastReinterprets(t *testing.T) {
	x := tensor.FromSlice([]float32{1, -2}, 2)
	out, err := opBitCast(testNode("BitCast", 26, 1, map[string]int64{"to": dtInt32}, nil), []*tensor.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []int32{int32(math.Float32bits(1)), int32(math.Float32bits(-2))}, out[0].Int32s())
	_, err = opBitCast(testNode("BitCast", 26, 1, map[string]int64{"to": dtInt64}, nil), []*tensor.Tensor{x})
	require.ErrorContains(t, err, "cannot reinterpret")
}

func TestTensorScatterLinearAndCircular(t *testing.T) {
	// Two batches, a cache of 3 positions of width 1; batch 0 writes at
	// 1, batch 1 at 2 (wrapping to 0 in circular mode).
	past := tensor.FromSlice([]float32{0, 0, 0, 0, 0, 0}, 2, 3, 1)
	upd := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2, 1)
	idx := tensor.FromSlice([]int64{1, 2}, 2)
	out, err := opTensorScatter(testNode("TensorScatter", 24, 1, nil, nil), []*tensor.Tensor{past, upd, tensor.FromSlice([]int64{1, 0}, 2)})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 1, 2, 3, 4, 0}, out[0].Float64s())
	circ := testNode("TensorScatter", 24, 1, nil, nil)
	circ.attrs["mode"] = &attribute{name: "mode", s: []byte("circular")}
	out, err = opTensorScatter(circ, []*tensor.Tensor{past, upd, idx})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 1, 2, 4, 0, 3}, out[0].Float64s())
	_, err = opTensorScatter(testNode("TensorScatter", 24, 1, nil, nil), []*tensor.Tensor{past, upd, idx})
	require.ErrorContains(t, err, "outside the cache")
	require.Equal(t, []float64{0, 0, 0, 0, 0, 0}, past.Float64s(), "the input is not modified")
}

func TestSwishAndSwiGLU(t *testing.T) {
	x := tensor.FromSlice([]float32{0, 2}, 2)
	out, err := opSwish(testNode("Swish", 24, 1, nil, map[string]float32{"alpha": 0.5}), []*tensor.Tensor{x})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{0, 2 / (1 + math.Exp(-1))}, out[0].Float64s(), 1e-6)
	out, err = opSwiGLU(testNode("SwiGLU", 28, 1, nil, nil), []*tensor.Tensor{x, tensor.FromSlice([]float32{5, 3}, 2)})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{0, 3 * 2 / (1 + math.Exp(-2))}, out[0].Float64s(), 1e-6)
}
