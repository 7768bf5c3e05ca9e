package driver

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// view mirrors the Strided kernel struct (144 bytes, 8-byte aligned).
type view struct {
	Shape   [8]int64
	Strides [8]int64
	Offset  int64
	Rank    int32
	_       int32
}

type small struct {
	A int32
	B float32
	C uint16
}

func TestPackArgsValues(t *testing.T) {
	v := view{Offset: 7, Rank: 3}
	v.Shape[0], v.Shape[2] = 4, 9
	v.Strides[1] = -5
	s := small{A: -3, B: 2.5, C: 0xbeef}
	args := []any{uint64(0xdead_beef_0000_1234), int32(-7), int64(-1 << 40), uint32(0xffff_fff0), float32(1.5), float64(-2.25), true, false, v, s}
	ps, err := PackArgs(args...)
	require.NoError(t, err)
	require.Len(t, ps.Ptrs, len(args))
	var pin runtime.Pinner
	ps.Pin(&pin)
	defer pin.Unpin()

	assert.Equal(t, uint64(0xdead_beef_0000_1234), *(*uint64)(ps.Ptrs[0]))
	assert.Equal(t, int32(-7), *(*int32)(ps.Ptrs[1]))
	assert.Equal(t, int64(-1<<40), *(*int64)(ps.Ptrs[2]))
	assert.Equal(t, uint32(0xffff_fff0), *(*uint32)(ps.Ptrs[3]))
	assert.Equal(t, float32(1.5), *(*float32)(ps.Ptrs[4]))
	assert.Equal(t, -2.25, *(*float64)(ps.Ptrs[5]))
	assert.Equal(t, int32(1), *(*int32)(ps.Ptrs[6]))
	assert.Equal(t, int32(0), *(*int32)(ps.Ptrs[7]))
	assert.Equal(t, v, *(*view)(ps.Ptrs[8]))
	assert.Equal(t, s, *(*small)(ps.Ptrs[9]))
}

func TestPackArgsAlignment(t *testing.T) {
	tests := []struct {
		name  string
		args  []any
		offs  []uintptr // expected offsets from the first argument
		words int
	}{
		{"int32 then uint64 pads to 8", []any{int32(1), uint64(2)}, []uintptr{0, 8}, 2},
		{"two int32 share a word", []any{int32(1), int32(2), float64(3)}, []uintptr{0, 4, 8}, 2},
		{"struct keeps its alignment", []any{float32(1), view{}}, []uintptr{0, 8}, 1 + 18},
		{"small struct after int32", []any{int32(1), small{}}, []uintptr{0, 4}, 2},
		{"no arguments", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := PackArgs(tt.args...)
			require.NoError(t, err)
			require.Len(t, ps.data, tt.words)
			for i, p := range ps.Ptrs {
				assert.Equal(t, tt.offs[i], uintptr(p)-uintptr(ps.Ptrs[0]), "argument %d", i)
				size, align, err := argLayout(tt.args[i])
				require.NoError(t, err)
				assert.Zero(t, uintptr(p)%align, "argument %d misaligned", i)
				end := uintptr(p) + size
				assert.LessOrEqual(t, end, uintptr(unsafe.Pointer(&ps.data[0]))+uintptr(8*len(ps.data)))
			}
		})
	}
}

func TestPackArgsSizes(t *testing.T) {
	assert.Equal(t, uintptr(144), unsafe.Sizeof(view{}))
	tests := []struct {
		arg         any
		size, align uintptr
	}{
		{uint64(0), 8, 8}, {int64(0), 8, 8}, {float64(0), 8, 8},
		{int32(0), 4, 4}, {uint32(0), 4, 4}, {float32(0), 4, 4}, {true, 4, 4},
		{view{}, 144, 8}, {small{}, 12, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.arg), func(t *testing.T) {
			size, align, err := argLayout(tt.arg)
			require.NoError(t, err)
			assert.Equal(t, tt.size, size)
			assert.Equal(t, tt.align, align)
		})
	}
}

func TestPackArgsRefused(t *testing.T) {
	type withPtr struct{ P *int }
	type withSlice struct{ S []int32 }
	type withInt struct{ N int }
	for _, a := range []any{int(3), uint(3), "s", nil, &view{}, withPtr{}, withSlice{}, withInt{}, []float32{1}} {
		_, err := PackArgs(int32(1), a)
		assert.Error(t, err, "%T", a)
		if err != nil {
			assert.Contains(t, err.Error(), "argument 1")
		}
	}
}

func TestErrorIs(t *testing.T) {
	tests := []struct {
		code      Result
		noDev, oo bool
		name      string
	}{
		{ErrorNoDevice, true, false, "CUDA_ERROR_NO_DEVICE"},
		{ErrorInvalidDev, true, false, "CUDA_ERROR_INVALID_DEVICE"},
		{ErrorOutOfMemory, false, true, "CUDA_ERROR_OUT_OF_MEMORY"},
		{ErrorInvalidValue, false, false, "CUDA_ERROR_INVALID_VALUE"},
		{Result(12345), false, false, "CUresult(12345)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", newError("cuX", tt.code))
			assert.Equal(t, tt.noDev, errors.Is(err, ErrNoDevice))
			assert.Equal(t, tt.oo, errors.Is(err, ErrOutOfMemory))
			assert.Contains(t, err.Error(), "cuX: "+tt.name)
		})
	}
	e := &Error{Call: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE", Message: "no CUDA-capable device is detected"}
	assert.Equal(t, "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected", e.Error())
}
