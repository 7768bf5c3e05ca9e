package tensor_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestUintDTypesBasics(t *testing.T) {
	tests := []struct {
		dt   tensor.DType
		name string
		size int
		max  uint64
	}{
		{tensor.Uint32, "uint32", 4, math.MaxUint32},
		{tensor.Uint64, "uint64", 8, math.MaxUint64},
	}
	for _, tt := range tests {
		dt, err := tensor.ParseDType(tt.name)
		require.NoError(t, err)
		assert.Equal(t, tt.dt, dt)
		assert.Equal(t, tt.name, dt.String())
		assert.Equal(t, tt.size, dt.Size())
		assert.True(t, dt.IsInt() && !dt.IsFloat(), tt.name)
		top := tensor.FromSlice([]uint64{tt.max, tt.max + 1}).To(dt) // the second wraps to 0
		assert.Equal(t, []uint64{tt.max, 0}, top.Uint64s(), tt.name)
		assert.Equal(t, []float64{float64(tt.max), 0}, top.Float64s(), tt.name)
		assert.Equal(t, []uint64{7, 7}, tensor.Full([]int{2}, 7, dt).Uint64s(), tt.name)
	}
}

func TestUintPromoteTypes(t *testing.T) {
	tests := []struct {
		a, b, want tensor.DType
	}{
		{tensor.Uint32, tensor.Uint8, tensor.Uint32},
		{tensor.Uint32, tensor.Uint16, tensor.Uint32},
		{tensor.Uint32, tensor.Int8, tensor.Int64},
		{tensor.Uint32, tensor.Int16, tensor.Int64},
		{tensor.Uint32, tensor.Int32, tensor.Int64},
		{tensor.Uint32, tensor.Int64, tensor.Int64},
		{tensor.Uint32, tensor.Uint64, tensor.Uint64},
		{tensor.Uint32, tensor.Bool, tensor.Uint32},
		{tensor.Uint32, tensor.Float16, tensor.Float16},
		{tensor.Uint32, tensor.Float32, tensor.Float32},
		{tensor.Uint64, tensor.Uint8, tensor.Uint64},
		{tensor.Uint64, tensor.Uint16, tensor.Uint64},
		{tensor.Uint64, tensor.Int8, tensor.Float64},
		{tensor.Uint64, tensor.Int32, tensor.Float64},
		{tensor.Uint64, tensor.Int64, tensor.Float64},
		{tensor.Uint64, tensor.Bool, tensor.Uint64},
		{tensor.Uint64, tensor.BFloat16, tensor.BFloat16},
		{tensor.Uint64, tensor.Float64, tensor.Float64},
	}
	for _, tt := range tests {
		t.Run(tt.a.String()+"/"+tt.b.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, tensor.PromoteTypes(tt.a, tt.b))
			assert.Equal(t, tt.want, tensor.PromoteTypes(tt.b, tt.a))
		})
	}
}

func TestUintAccessorsAndViews(t *testing.T) {
	big := []uint64{math.MaxUint64, 1 << 63, 0, 5, 1<<63 - 1, 2}
	x := tensor.FromSlice(big, 2, 3)
	assert.Equal(t, tensor.Uint64, x.DType())
	assert.Equal(t, big, x.Uint64s())
	assert.Equal(t, []uint64{math.MaxUint64, 5, 1 << 63, 1<<63 - 1, 0, 2}, x.T().Uint64s())
	assert.Equal(t, []int64{-1, math.MinInt64, 0, 5, math.MaxInt64, 2}, x.Int64s(), "wraps to int64")
	assert.Equal(t, []uint32{math.MaxUint32, 0, 0, 5, math.MaxUint32, 2}, x.Uint32s())
	assert.Equal(t, []uint64{2, 1<<63 - 1, 5}, x.Flip(0, 1).Narrow(1, 0, 3).Select(0, 0).Uint64s())

	// Ordering beyond int64's range: sort, top-k, arg-max, max.
	v, idx := x.Reshape(6).TopK(2, 0, true)
	assert.Equal(t, []uint64{math.MaxUint64, 1 << 63}, v.Uint64s())
	assert.Equal(t, []int64{0, 1}, idx.Int64s())
	assert.Equal(t, []int64{0, 1}, x.ArgMax(1, false).Int64s())
	assert.Equal(t, []uint64{math.MaxUint64, 1<<63 - 1}, x.Max([]int{1}, false).Uint64s())

	// Sums widen to Uint64 and wrap modulo 2^64.
	s := x.Sum(nil, false)
	assert.Equal(t, tensor.Uint64, s.DType())
	assert.Equal(t, []uint64{5}, s.Uint64s()) // (2^64-1) + 2^63 + 5 + (2^63-1) + 2 mod 2^64
	u := tensor.FromSlice([]uint32{math.MaxUint32, math.MaxUint32, 3})
	assert.Equal(t, tensor.Uint64, u.Sum(nil, false).DType())
	assert.Equal(t, []uint64{2*math.MaxUint32 + 3}, u.Sum(nil, false).Uint64s())
	assert.Equal(t, []uint64{math.MaxUint32, 2 * math.MaxUint32, 2*math.MaxUint32 + 3}, u.CumSum(0).Uint64s())

	// Clamp with open sides and the float bounds of the uint64 range.
	assert.Equal(t, []uint64{math.MaxUint64, 1 << 63, 1 << 62, 1 << 62, 1<<63 - 1, 1 << 62},
		x.Reshape(6).Clamp(1<<62, math.Inf(1)).Uint64s())
	assert.Equal(t, big, x.Reshape(6).Clamp(-5, 1e30).Uint64s())

	// Masked select, in-place strided write and scatter-add keep the bits.
	m := tensor.FromSlice([]bool{true, false, true, false, false, true}, 2, 3)
	assert.Equal(t, []uint64{math.MaxUint64, 0, 2}, x.MaskedSelect(m).Uint64s())
	dst := tensor.Zeros([]int{2, 2}, tensor.Uint32)
	dst.T().CopyFrom(tensor.FromSlice([]uint32{1, 2, math.MaxUint32, 4}, 2, 2))
	assert.Equal(t, []uint32{1, math.MaxUint32, 2, 4}, dst.Uint32s())
	acc := tensor.Zeros([]int{2}, tensor.Uint32).ScatterAdd(0,
		tensor.FromSlice([]int64{0, 0, 1}), tensor.FromSlice([]uint32{math.MaxUint32, 2, 9}))
	assert.Equal(t, []uint32{1, 9}, acc.Uint32s(), "wrapping accumulation")
}

func TestUintFloatConversionEdges(t *testing.T) {
	tests := []struct {
		in  float64
		u32 uint32
		u64 uint64
	}{
		{-1.5, math.MaxUint32, math.MaxUint64},
		{0.9, 0, 0},
		{5e9, 705032704, 5000000000},
		{1 << 63, 0, 1 << 63},
		{1.8e19, 0, 18000000000000000000},
		{1 << 64, 0, 0},
		{-1e19, 0, 1 << 63},
		{math.NaN(), 0, 1 << 63},
		{math.Inf(1), 0, 0},
		{math.Inf(-1), 0, 1 << 63},
	}
	for _, tt := range tests {
		x := tensor.FromSlice([]float64{tt.in})
		assert.Equal(t, []uint32{tt.u32}, x.Uint32s(), "%v → uint32", tt.in)
		assert.Equal(t, []uint64{tt.u64}, x.Uint64s(), "%v → uint64", tt.in)
		assert.Equal(t, []uint64{tt.u64}, tensor.Full([]int{1}, tt.in, tensor.Uint64).Uint64s(), "Full %v", tt.in)
	}
	// One rounding from uint64 to float32: through float64 would tie to 2^63.
	y := tensor.FromSlice([]uint64{1<<63 + 1<<39 + 1})
	assert.Equal(t, []float32{1<<63 + 1<<40}, y.Float32s())

	// The 16-bit floats, both ways.
	h := tensor.FromHalfBits(tensor.Float16, []uint16{0xc000, 0x7bff}, 2) // -2, 65504
	assert.Equal(t, []uint32{math.MaxUint32 - 1, 65504}, h.Uint32s())
	assert.Equal(t, []uint64{math.MaxUint64 - 1, 65504}, h.Uint64s())
	bf := tensor.FromHalfBits(tensor.BFloat16, []uint16{0x5f00, 0x5f80}, 2) // 2^63, 2^64
	assert.Equal(t, []uint64{1 << 63, 0}, bf.Uint64s())
	big := tensor.FromSlice([]uint64{1<<63 + 1<<55, 1 << 20, 65504})
	assert.Equal(t, []uint16{0x5f00, 0x4980, 0x4780}, big.To(tensor.BFloat16).HalfBits()) // 2^63+2^55 ties to even
	assert.Equal(t, []uint16{0x7c00, 0x7c00, 0x7bff}, big.To(tensor.Float16).HalfBits())
}

func TestUintBytesAndNpy(t *testing.T) {
	tests := []struct {
		name string
		x    *tensor.Tensor
	}{
		{"uint32", tensor.FromSlice([]uint32{0, 1, math.MaxUint32, 1 << 31}, 2, 2).T()},
		{"uint64", tensor.FromSlice([]uint64{0, math.MaxUint64, 1 << 63}, 3, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			le := tt.x.LittleEndianBytes()
			assert.Len(t, le, tt.x.Numel()*tt.x.DType().Size())
			back, err := tensor.FromLittleEndian(tt.x.DType(), le, tt.x.Shape()...)
			require.NoError(t, err)
			assert.Equal(t, tt.x.Uint64s(), back.Uint64s())

			var buf bytes.Buffer
			require.NoError(t, tensor.WriteNpy(&buf, tt.x))
			got, err := tensor.ReadNpy(&buf)
			require.NoError(t, err)
			assert.Equal(t, tt.x.DType(), got.DType())
			assert.Equal(t, tt.x.Shape(), got.Shape())
			assert.Equal(t, tt.x.Uint64s(), got.Uint64s())
		})
	}
}

func TestUintFormat(t *testing.T) {
	x := tensor.FromSlice([]uint64{math.MaxUint64, 7})
	assert.Equal(t, "tensor([18446744073709551615,                    7], dtype=torch.uint64)", x.String())
	assert.Equal(t, "tensor.FromSlice([]uint64{18446744073709551615, 7}, 2)", fmt.Sprintf("%#v", x))
	assert.Equal(t, "tensor([4294967295,          0], dtype=torch.uint32)", tensor.FromSlice([]uint32{math.MaxUint32, 0}).String())
}
