package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestDecodeTensorIntegerRanges(t *testing.T) {
	num := func(vs ...string) []json.Number {
		out := make([]json.Number, len(vs))
		for i, v := range vs {
			out[i] = json.Number(v)
		}
		return out
	}
	tests := []struct {
		dt      tensor.DType
		data    []json.Number
		wantErr string
	}{
		{tensor.Uint8, num("0", "255"), ""},
		{tensor.Uint8, num("0", "256"), "overflows uint8"},
		{tensor.Uint8, num("-1", "3"), "overflows uint8"},
		{tensor.Int8, num("-128", "127"), ""},
		{tensor.Int8, num("-129", "0"), "overflows int8"},
		{tensor.Int16, num("-32768", "32767"), ""},
		{tensor.Int32, num("2147483648", "0"), "overflows int32"},
		{tensor.Uint32, num("0", "4294967295"), ""},
		{tensor.Uint32, num("4294967296", "0"), "not an integer in uint32's range"},
		{tensor.Uint64, num("18446744073709551615", "9223372036854775808"), ""},
		{tensor.Uint64, num("-1", "0"), "not an integer in uint64's range"},
	}
	for _, tt := range tests {
		t.Run(tt.dt.String()+tt.wantErr, func(t *testing.T) {
			x, err := decodeTensor("x", wireTensor{Shape: []int{2}, Data: tt.data}, tt.dt, 16)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.dt, x.DType())
			o := encodeTensor(x)
			assert.Equal(t, tt.dt.String(), o.DType)
			for i, v := range o.Data {
				assert.Equal(t, string(tt.data[i]), json.Number(jsonInt(v)).String())
			}
		})
	}
}

// jsonInt renders an encoded integer the way encoding/json writes it.
func jsonInt(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
