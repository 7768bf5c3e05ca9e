package onnx

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// mkInt32DataTensor encodes a TensorProto whose values are in int32_data,
// where ONNX stores INT8, UINT8 and INT16 elements one per entry.
func mkInt32DataTensor(dt int64, dims []int64, v ...int32) []byte {
	u := make([]uint64, len(v))
	for i, x := range v {
		u[i] = uint64(int64(x))
	}
	return mkPackedTensor(dt, dims, 5, u)
}

func TestReadTensorNarrowInts(t *testing.T) {
	tests := []struct {
		name  string
		pb    []byte
		dtype tensor.DType
		want  []int64
	}{
		{"uint8 raw", mkTensor("", dtUint8, []int64{2, 2}, []byte{0, 1, 128, 255}), tensor.Uint8, []int64{0, 1, 128, 255}},
		{"int8 raw", mkTensor("", dtInt8, []int64{3}, []byte{0x80, 0xff, 0x7f}), tensor.Int8, []int64{-128, -1, 127}},
		{"int16 raw", mkTensor("", dtInt16, []int64{2}, []byte{0x00, 0x80, 0x2c, 0x01}), tensor.Int16, []int64{-32768, 300}},
		{"uint8 int32_data", mkInt32DataTensor(dtUint8, []int64{3}, 0, 200, 255), tensor.Uint8, []int64{0, 200, 255}},
		{"int8 int32_data", mkInt32DataTensor(dtInt8, []int64{2}, -128, 127), tensor.Int8, []int64{-128, 127}},
		{"int16 int32_data", mkInt32DataTensor(dtInt16, []int64{2, 1}, -32768, 32767), tensor.Int16, []int64{-32768, 32767}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := ReadTensor(bytes.NewReader(tt.pb))
			require.NoError(t, err)
			assert.Equal(t, tt.dtype, x.DType())
			assert.Equal(t, tt.want, x.Int64s())
		})
	}
}

func TestRawDataNarrowIntsRoundTrip(t *testing.T) {
	for _, x := range []*tensor.Tensor{
		tensor.FromSlice([]uint8{0, 7, 255, 128}, 2, 2).T(),
		tensor.FromSlice([]int8{-128, -1, 0, 127}),
		tensor.FromSlice([]int16{-32768, -2, 300, 32767}, 4, 1),
		tensor.FromSlice([]uint32{0, 7, 1<<32 - 1, 1 << 31}, 2, 2).T(),
		tensor.FromSlice([]uint64{1<<64 - 1, 0, 1 << 63}), // Int64s below keeps the bits
	} {
		t.Run(x.DType().String(), func(t *testing.T) {
			raw, err := rawData("w", x)
			require.NoError(t, err)
			require.Len(t, raw, x.Numel()*x.DType().Size())
			dt, err := dtypeFromONNX(dtypeToONNX(x.DType()))
			require.NoError(t, err)
			got, err := tensor.FromLittleEndian(dt, raw, x.Shape()...)
			require.NoError(t, err)
			assert.Equal(t, x.DType(), got.DType())
			assert.Equal(t, x.Int64s(), got.Int64s())
		})
	}
}

func TestSessionRunsUint8Model(t *testing.T) {
	// y = x + c (wrapping), q = QuantizeLinear(f, 0.5, int8 zero point 3),
	// with a uint8 initializer c and int8 zero point stored in int32_data.
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Add", []string{"x", "c"}, []string{"y"}),
			mkNode("QuantizeLinear", []string{"f", "s", "zp"}, []string{"q"}),
		},
		inits: [][]byte{
			mkTensor("c", dtUint8, []int64{2}, []byte{100, 1}),
			mkFloatTensor("s", nil, 0.5),
			pbString(mkInt32DataTensor(dtInt8, nil, 3), 8, "zp"),
		},
		inputs:  [][]byte{mkValueInfo("x", dtUint8, 2), mkValueInfo("f", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y", dtUint8, 2), mkValueInfo("q", dtInt8, 2)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{
		"x": tensor.FromSlice([]uint8{200, 7}),
		"f": tensor.FromSlice([]float32{-70, 1.25}),
	})
	require.NoError(t, err)
	assert.Equal(t, []uint8{44, 8}, out["y"].Uint8s())
	assert.Equal(t, tensor.Int8, out["q"].DType())
	assert.Equal(t, []int8{-128, 5}, out["q"].Int8s()) // -140+3 saturates; round(2.5)=2, +3
}
