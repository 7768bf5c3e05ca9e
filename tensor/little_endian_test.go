package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLittleEndianRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		x    *Tensor
		want []byte // the encoding, where it is worth spelling out
	}{
		{x: FromSlice([]float32{1, -2.5}), want: []byte{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0}},
		{x: FromSlice([]float64{math.Inf(-1), 0.1, 3}, 3, 1)},
		{x: FromSlice([]int64{-1, 1 << 40}), want: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, 0}},
		{x: FromSlice([]int32{-7, 8, 9, 10}, 2, 2).T()},
		{x: FromSlice([]int16{-32768, 32767}), want: []byte{0, 0x80, 0xff, 0x7f}},
		{x: FromSlice([]uint16{65535, 258}), want: []byte{0xff, 0xff, 2, 1}},
		{x: FromSlice([]int8{-128, 5}), want: []byte{0x80, 5}},
		{x: FromSlice([]uint8{200, 0, 1}, 1, 3)},
		{x: FromSlice([]bool{true, false, true}), want: []byte{1, 0, 1}},
		{x: FromSlice([]float32{1.5, -0.25}).To(Float16), want: []byte{0, 0x3e, 0, 0xb4}},
		{x: FromSlice([]float32{1.5, -0.25}).To(BFloat16), want: []byte{0xc0, 0x3f, 0x80, 0xbe}},
		{x: FromSlice([]float32{4}).Reshape()},
		{x: Zeros([]int{0, 3}, Int16)},
		{x: Zeros([]int{3, 4, 0})},
	} {
		t.Run(tc.x.DType().String(), func(t *testing.T) {
			b := tc.x.LittleEndianBytes()
			require.Len(t, b, tc.x.Numel()*tc.x.DType().Size())
			if tc.want != nil {
				assert.Equal(t, tc.want, b)
			}
			got, err := FromLittleEndian(tc.x.DType(), b, tc.x.Shape()...)
			require.NoError(t, err)
			assert.Equal(t, tc.x.DType(), got.DType())
			assert.Equal(t, tc.x.Shape(), got.Shape())
			assert.Equal(t, b, got.LittleEndianBytes())
		})
	}
}

func TestFromLittleEndianBoolNonZeroIsTrue(t *testing.T) {
	got, err := FromLittleEndian(Bool, []byte{0, 2, 255}, 3)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true, true}, got.Bools())
}

func TestFromLittleEndianDoesNotAlias(t *testing.T) {
	b := []byte{1, 2}
	got, err := FromLittleEndian(Uint8, b, 2)
	require.NoError(t, err)
	b[0] = 9
	assert.Equal(t, []uint8{1, 2}, got.Uint8s())
}

func TestFromLittleEndianErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dt    DType
		data  []byte
		shape []int
		msg   string
	}{
		{"short", Float32, make([]byte, 7), []int{2}, "needs 8 bytes, got 7"},
		{"long", Int64, make([]byte, 9), []int{1}, "needs 8 bytes, got 9"},
		{"negative", Float32, nil, []int{-1, 4}, "negative dimension"},
		{"huge", Float32, make([]byte, 8), []int{1 << 40, 1 << 40, 1 << 40}, "needs more than the 8 bytes"},
		{"dtype", DType(200), nil, nil, "unknown dtype"},
		{"empty with data", Float32, make([]byte, 4), []int{2, 0}, "needs 0 bytes, got 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromLittleEndian(tc.dt, tc.data, tc.shape...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}
