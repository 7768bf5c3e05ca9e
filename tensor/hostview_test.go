package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostData(t *testing.T) {
	x := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	d, ok := HostFloat32s(x)
	require.True(t, ok)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, d)
	v := x.Version()
	d[4] = 50
	MarkWritten(x)
	assert.Equal(t, v+1, x.Version())
	assert.Equal(t, []float32{1, 2, 3, 4, 50, 6}, x.Float32s())

	row := x.Select(0, 1) // contiguous view with an offset
	r, ok := HostFloat32s(row)
	require.True(t, ok)
	assert.Equal(t, []float32{4, 50, 6}, r)
	assert.Len(t, r[:cap(r)], 3, "the view must not reach past its elements")

	_, ok = HostData(x.T())
	assert.False(t, ok, "transposed view is not contiguous")
	_, ok = HostFloat32s(FromSlice([]float64{1, 2}, 2))
	assert.False(t, ok, "float64 tensor")

	cases := []struct {
		name string
		t    *Tensor
		want any
	}{
		{"float64", FromSlice([]float64{1, 2}, 2), []float64{1, 2}},
		{"int32", FromSlice([]int32{3, 4}, 2), []int32{3, 4}},
		{"int64", FromSlice([]int64{5, 6}, 2), []int64{5, 6}},
	}
	for _, c := range cases {
		got, ok := HostData(c.t)
		require.True(t, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, ok = HostData(FromSlice([]bool{true}, 1))
	assert.False(t, ok, "bool tensor")
}
