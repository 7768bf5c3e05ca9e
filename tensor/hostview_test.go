package tensor

import (
	"runtime"
	"testing"
	"time"

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

func TestFromHostMemory(t *testing.T) {
	data := []float64{1, 2, 3, 4, 5, 6}
	x := FromHostMemory(data, nil, 3, 2)
	assert.Equal(t, []int{3, 2}, x.Shape())
	assert.Equal(t, Float64, x.DType())
	// The tensor is data: writes go both ways, and HostData returns it.
	x.Narrow(0, 1, 1).Fill(-1)
	assert.Equal(t, []float64{1, 2, -1, -1, 5, 6}, data)
	data[5] = 60
	MarkWritten(x)
	assert.Equal(t, []float64{1, 2, -1, -1, 5, 60}, x.Float64s())
	h, ok := HostData(x)
	require.True(t, ok)
	assert.Same(t, &data[0], &h.([]float64)[0])
	assert.Equal(t, []int{4}, FromHostMemory([]int32{1, 2, 3, 4}, nil).Shape())
	assert.Panics(t, func() { FromHostMemory(data, nil, 4, 2) })
}

func TestFromHostMemoryRelease(t *testing.T) {
	released := make(chan struct{})
	x := FromHostMemory(make([]float32, 8), func() { close(released) }, 2, 4)
	view := x.Narrow(1, 1, 2)
	x = nil
	// A view keeps the storage alive.
	runtime.GC()
	select {
	case <-released:
		t.Fatal("released while a view still used the storage")
	default:
	}
	assert.Equal(t, []float32{0, 0, 0, 0}, view.Float32s())
	view = nil
	for range 100 {
		runtime.GC()
		select {
		case <-released:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("release was not called once the storage became unreachable")
}
