package onnx

import (
	"context"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

func TestMiniFloatDecode(t *testing.T) {
	e4m3, _ := miniFloatFormat(dtFloat8E4M3FN)
	require.Equal(t, 448.0, e4m3.decode(0x7e))
	require.True(t, math.IsNaN(e4m3.decode(0x7f)))
	require.Equal(t, math.Ldexp(1, -9), e4m3.decode(0x01), "smallest subnormal")
	require.Equal(t, -1.0, e4m3.decode(0xb8))
	e5m2, _ := miniFloatFormat(dtFloat8E5M2)
	require.True(t, math.IsInf(e5m2.decode(0x7c), 1))
	require.Equal(t, 57344.0, e5m2.decode(0x7b))
	fnuz, _ := miniFloatFormat(dtFloat8E4M3FNUZ)
	require.True(t, math.IsNaN(fnuz.decode(0x80)), "FNUZ's NaN is the pattern of -0")
	require.Equal(t, 240.0, fnuz.decode(0x7f))
	f4, _ := miniFloatFormat(dtFloat4E2M1)
	var vals []float64
	for b := range uint32(8) {
		vals = append(vals, f4.decode(b))
	}
	require.Equal(t, []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}, vals)
}

func TestMiniFloatRound(t *testing.T) {
	e4m3, _ := miniFloatFormat(dtFloat8E4M3FN)
	require.Equal(t, 0.46875, e4m3.round(0.4789254665374756, true))
	require.Equal(t, 448.0, e4m3.round(1e6, true))
	require.True(t, math.IsNaN(e4m3.round(1e6, false)))
	require.Equal(t, 448.0, e4m3.round(464, false), "the midpoint to 480 ties to 448 (even)")
	require.Equal(t, -448.0, e4m3.round(math.Inf(-1), true))
	e5m2, _ := miniFloatFormat(dtFloat8E5M2)
	require.True(t, math.IsInf(e5m2.round(math.Inf(1), false), 1))
	require.True(t, math.IsInf(e5m2.round(1e6, false), 1))
	require.Equal(t, 57344.0, e5m2.round(1e6, true))
	fnuz, _ := miniFloatFormat(dtFloat8E5M2FNUZ)
	require.False(t, math.Signbit(fnuz.round(math.Copysign(0, -1), true)), "FNUZ has no -0")
	f4, _ := miniFloatFormat(dtFloat4E2M1)
	require.Equal(t, 0.0, f4.round(0.25, true), "a tie goes to the even 0")
	require.Equal(t, 6.0, f4.round(1e6, false), "FLOAT4E2M1 always saturates")
}

func TestRoundE8M0(t *testing.T) {
	require.Equal(t, 0.125, roundE8M0(0.124, true, "up"))
	require.Equal(t, 0.25, roundE8M0(0.126, true, "up"))
	require.Equal(t, 0.125, roundE8M0(0.126, true, "down"))
	require.Equal(t, 0.125, roundE8M0(0.18, true, "nearest"))
	require.Equal(t, 0.25, roundE8M0(0.19, true, "nearest"))
	require.Equal(t, 4.0, roundE8M0(4, true, "up"), "powers of two are exact")
}

func TestDecodeSmallPacked(t *testing.T) {
	x, err := decodeSmall(dtInt4, []byte{0x21, 0xf8, 0x07}, 5, []int{5})
	require.NoError(t, err)
	require.Equal(t, tensor.Int8, x.DType())
	require.Equal(t, []int64{1, 2, -8, -1, 7}, x.Int64s(), "low nibble first, sign-extended")
	x, err = decodeSmall(dtUint2, []byte{0b11100100}, 4, []int{4})
	require.NoError(t, err)
	require.Equal(t, tensor.Uint8, x.DType())
	require.Equal(t, []int64{0, 1, 2, 3}, x.Int64s())
	_, err = decodeSmall(dtInt4, []byte{0x21}, 5, []int{5})
	require.ErrorContains(t, err, "take 3 bytes")
	x, err = decodeSmall(dtFloat8E8M0, []byte{127, 130, 0xff}, 3, []int{3})
	require.NoError(t, err)
	got := x.Float64s()
	require.Equal(t, []float64{1, 8}, got[:2])
	require.True(t, math.IsNaN(got[2]))
}

func TestCastSmallIntegersWrap(t *testing.T) {
	x := tensor.FromSlice([]float32{-9, -8, 7, 8, 15}, 5)
	require.Equal(t, []int64{7, -8, 7, -8, -1}, castSmall(x, dtInt4, true, "up").Int64s())
	require.Equal(t, []int64{7, 8, 7, 8, 15}, castSmall(x, dtUint4, true, "up").Int64s())
	require.Equal(t, []int64{-1, 0, -1, 0, -1}, castSmall(x, dtInt2, true, "up").Int64s())
}

func TestSmallTypesThroughASession(t *testing.T) {
	// y = Cast(Cast(x, FLOAT8E4M3FN), FLOAT) + Cast(w, FLOAT), with w an
	// INT4 initializer packed two to a byte: [3, -2, 7] in 0xe3 0x07.
	w := mkTensor("w", dtInt4, []int64{3}, []byte{0xe3, 0x07})
	model := mkModel(21, graphParts{
		nodes: [][]byte{
			mkNode("Cast", []string{"x"}, []string{"x8"}, mkAttrInt("to", dtFloat8E4M3FN)),
			mkNode("Cast", []string{"x8"}, []string{"xf"}, mkAttrInt("to", dtFloat)),
			mkNode("Cast", []string{"w"}, []string{"wf"}, mkAttrInt("to", dtFloat)),
			mkNode("Add", []string{"xf", "wf"}, []string{"y"}),
		},
		inits:   [][]byte{w},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 3)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 3)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{0.4789, 1000, -0.0009}, 3)})
	require.NoError(t, err)
	// 0.4789 rounds to 0.46875, 1000 saturates to 448, -0.0009 (under half
	// the least subnormal, 2^-9) to -0.
	require.Equal(t, []float64{0.46875 + 3, 448 - 2, 7}, out["y"].Float64s())
}

func TestSmallTypeInputsMustBeRepresentable(t *testing.T) {
	model := mkModel(21, graphParts{
		nodes:   [][]byte{mkNode("Cast", []string{"x"}, []string{"y"}, mkAttrInt("to", dtFloat)), mkNode("Cast", []string{"n"}, []string{"m"}, mkAttrInt("to", dtInt32))},
		inputs:  [][]byte{mkValueInfo("x", dtFloat8E4M3FN, 2), mkValueInfo("n", dtInt4, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2), mkValueInfo("m", dtInt32, 2)},
	})
	s := newSession(t, model)
	ok := map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{0.46875, -448}, 2), "n": tensor.FromSlice([]int8{-8, 7}, 2)}
	out, err := s.Run(context.Background(), ok)
	require.NoError(t, err)
	require.Equal(t, []float64{0.46875, -448}, out["y"].Float64s())
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{0.3, 1}, 2), "n": ok["n"]})
	require.ErrorContains(t, err, "FLOAT8E4M3FN cannot represent")
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": ok["x"], "n": tensor.FromSlice([]int8{9, 0}, 2)})
	require.ErrorContains(t, err, "outside INT4's range")
}
