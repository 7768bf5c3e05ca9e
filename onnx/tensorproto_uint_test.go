package onnx

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/emberml/ember/tensor"
)

// mkPackedTensor encodes a TensorProto whose values are the varints v in
// the packed repeated field num (int32_data 5, uint64_data 11).
func mkPackedTensor(dt int64, dims []int64, num protowire.Number, v []uint64) []byte {
	var b []byte
	for _, d := range dims {
		b = pbVarint(b, 1, d)
	}
	b = pbVarint(b, 2, dt)
	var packed []byte
	for _, x := range v {
		packed = protowire.AppendVarint(packed, x)
	}
	return pbBytes(b, num, packed)
}

// mkUint64DataTensor encodes a TensorProto whose values are in uint64_data,
// where ONNX stores UINT32 and UINT64 elements.
func mkUint64DataTensor(name string, dt int64, dims []int64, v ...uint64) []byte {
	b := mkPackedTensor(dt, dims, 11, v)
	if name != "" {
		b = pbString(b, 8, name)
	}
	return b
}

func TestReadTensorUints(t *testing.T) {
	le32 := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 7), math.MaxUint32)
	le64 := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<63), math.MaxUint64)
	tests := []struct {
		name  string
		pb    []byte
		dtype tensor.DType
		want  []uint64
	}{
		{"uint32 raw", mkTensor("", dtUint32, []int64{2}, le32), tensor.Uint32, []uint64{7, math.MaxUint32}},
		{"uint64 raw", mkTensor("", dtUint64, []int64{2, 1}, le64), tensor.Uint64, []uint64{1 << 63, math.MaxUint64}},
		{"uint32 uint64_data", mkUint64DataTensor("", dtUint32, []int64{3}, 0, 1<<31, math.MaxUint32), tensor.Uint32, []uint64{0, 1 << 31, math.MaxUint32}},
		{"uint64 uint64_data", mkUint64DataTensor("", dtUint64, nil, math.MaxUint64), tensor.Uint64, []uint64{math.MaxUint64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := ReadTensor(bytes.NewReader(tt.pb))
			require.NoError(t, err)
			assert.Equal(t, tt.dtype, x.DType())
			assert.Equal(t, tt.want, x.Uint64s())
		})
	}
	_, err := ReadTensor(bytes.NewReader(mkUint64DataTensor("", dtUint64, []int64{2}, 1)))
	assert.ErrorContains(t, err, "holds 1 values, want 2")
}

func TestSessionRunsUint64Model(t *testing.T) {
	// y = (x + c) >> s with a uint64 initializer c in uint64_data: the sum
	// wraps modulo 2^64 and the values use the top bit.
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Add", []string{"x", "c"}, []string{"t"}),
			mkNode("BitShift", []string{"t", "s"}, []string{"y"}, mkAttrString("direction", "RIGHT")),
		},
		inits: [][]byte{
			mkUint64DataTensor("c", dtUint64, []int64{2}, 1<<63, 3),
			mkUint64DataTensor("s", dtUint64, []int64{2}, 1, 64),
		},
		inputs:  [][]byte{mkValueInfo("x", dtUint64, 2)},
		outputs: [][]byte{mkValueInfo("y", dtUint64, 2)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{
		"x": tensor.FromSlice([]uint64{1<<63 + 10, math.MaxUint64}),
	})
	require.NoError(t, err)
	assert.Equal(t, tensor.Uint64, out["y"].DType())
	assert.Equal(t, []uint64{5, 0}, out["y"].Uint64s()) // (2^64+10 mod 2^64) >> 1; any >> 64 is 0
}

func TestBitShiftUint32(t *testing.T) {
	n := &node{opType: "BitShift", opset: 11, maxElements: maxElements, attrs: map[string]*attribute{"direction": {name: "direction", s: []byte("LEFT")}}}
	out, err := opBitShift(n, []*tensor.Tensor{tensor.FromSlice([]uint32{1, 0x80000001, 3}), tensor.FromSlice([]uint32{31, 1, 32})})
	require.NoError(t, err)
	assert.Equal(t, []uint32{0x80000000, 2, 0}, out[0].Uint32s())
}

func TestDivModUnsignedExact(t *testing.T) {
	big := uint64(1<<63 + 1<<10 + 3) // float64 would round it
	a := tensor.FromSlice([]uint64{big, math.MaxUint64, 7})
	b := tensor.FromSlice([]uint64{2, 1 << 32, 7})
	div := &node{opType: "Div", opset: 14, maxElements: maxElements}
	q, err := opDiv(div, []*tensor.Tensor{a, b})
	require.NoError(t, err)
	assert.Equal(t, []uint64{big / 2, math.MaxUint64 >> 32, 1}, q[0].Uint64s())
	for _, fmod := range []int64{0, 1} {
		mod := &node{opType: "Mod", opset: 13, maxElements: maxElements, attrs: map[string]*attribute{"fmod": {name: "fmod", i: fmod}}}
		r, err := opMod(mod, []*tensor.Tensor{a, b})
		require.NoError(t, err)
		assert.Equal(t, []uint64{1, 1<<32 - 1, 0}, r[0].Uint64s(), "fmod=%d", fmod)
	}
	_, err = opDiv(div, []*tensor.Tensor{a.To(tensor.Uint32), tensor.FromSlice([]uint32{1, 0, 1})})
	assert.ErrorContains(t, err, "division by zero")
}

func TestClipIntExact(t *testing.T) {
	x := tensor.FromSlice([]uint64{0, 1<<63 + 1, math.MaxUint64, 1<<63 + 3})
	lo, hi := tensor.FromSlice([]uint64{1<<63 + 2}, 1), tensor.FromSlice([]uint64{1<<63 + 3}).Reshape()
	n := &node{opType: "Clip", opset: 13, maxElements: maxElements}
	tests := []struct {
		name string
		in   []*tensor.Tensor
		want []uint64
	}{
		{"both", []*tensor.Tensor{x, lo, hi}, []uint64{1<<63 + 2, 1<<63 + 2, 1<<63 + 3, 1<<63 + 3}},
		{"min only", []*tensor.Tensor{x, lo}, []uint64{1<<63 + 2, 1<<63 + 2, math.MaxUint64, 1<<63 + 3}},
		{"max only", []*tensor.Tensor{x, nil, hi}, []uint64{0, 1<<63 + 1, 1<<63 + 3, 1<<63 + 3}},
		{"min above max", []*tensor.Tensor{x, hi, lo}, []uint64{1<<63 + 2, 1<<63 + 2, 1<<63 + 2, 1<<63 + 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := opClipInputs(n, tt.in)
			require.NoError(t, err)
			assert.Equal(t, tensor.Uint64, out[0].DType())
			assert.Equal(t, tt.want, out[0].Uint64s())
		})
	}
}

func TestDivModSignedExact(t *testing.T) {
	big := int64(1<<62 + 1<<10 + 3) // float64 would round it
	as := []int64{big, -big, big, -big, 7, -7, 7, -7, 6, math.MinInt64 + 1, 0}
	bs := []int64{3, 3, -3, -3, 2, 2, -2, -2, -3, math.MaxInt64, -5}
	for _, dt := range []tensor.DType{tensor.Int64, tensor.Int32, tensor.Int16, tensor.Int8} {
		// The narrower dtypes take the values that fit them.
		var a, b []int64
		for i := range as {
			if x := tensor.FromSlice(as[i : i+1]).To(dt).Int64s()[0]; x == as[i] && tensor.FromSlice(bs[i : i+1]).To(dt).Int64s()[0] == bs[i] {
				a, b = append(a, as[i]), append(b, bs[i])
			}
		}
		wantDiv, wantFmod, wantMod := make([]int64, len(a)), make([]int64, len(a)), make([]int64, len(a))
		for i := range a {
			// Go's integer division truncates, as ONNX's does.
			wantDiv[i], wantFmod[i] = a[i]/b[i], a[i]%b[i]
			wantMod[i] = wantFmod[i]
			if wantMod[i] != 0 && (wantMod[i] < 0) != (b[i] < 0) {
				wantMod[i] += b[i]
			}
		}
		ta, tb := tensor.FromSlice(a).To(dt), tensor.FromSlice(b).To(dt)
		q, err := opDiv(&node{opType: "Div", opset: 14, maxElements: maxElements}, []*tensor.Tensor{ta, tb})
		require.NoError(t, err)
		assert.Equal(t, dt, q[0].DType())
		assert.Equal(t, wantDiv, q[0].Int64s(), "Div %s", dt)
		for fmod, want := range [][]int64{wantMod, wantFmod} {
			mod := &node{opType: "Mod", opset: 13, maxElements: maxElements, attrs: map[string]*attribute{"fmod": {name: "fmod", i: int64(fmod)}}}
			r, err := opMod(mod, []*tensor.Tensor{ta, tb})
			require.NoError(t, err)
			assert.Equal(t, want, r[0].Int64s(), "Mod fmod=%d %s", fmod, dt)
		}
	}
	// Broadcast divisor, and a zero divisor is an error.
	q, err := opDiv(&node{opType: "Div", opset: 14, maxElements: maxElements}, []*tensor.Tensor{tensor.FromSlice([]int32{-9, 9, 10}), tensor.FromSlice([]int32{4}).Reshape()})
	require.NoError(t, err)
	assert.Equal(t, []int32{-2, 2, 2}, q[0].Int32s())
	_, err = opDiv(&node{opType: "Div", opset: 14, maxElements: maxElements}, []*tensor.Tensor{tensor.FromSlice([]int64{1, 2}), tensor.FromSlice([]int64{1, 0})})
	assert.ErrorContains(t, err, "division by zero")
}
