package tensor

import (
	"fmt"
	"unsafe"
)

// Output buffers that a kernel overwrites in full (matrix products,
// elementwise results, copies) need no zero fill, and for the large buffers
// of a training step the fill is a measurable share of the step (Go clears
// every reused heap span it hands out). The runtime's allocator can skip it:
// its internal mallocgc takes a needzero flag. The runtime keeps that
// function's signature stable for packages that link to it (see the "hall
// of shame" note on runtime.mallocgc), which is what the line below does.
// The memory is ordinary garbage-collected memory without pointers.

//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// uninitSlice returns a []T of length n whose contents are unspecified.
func uninitSlice[T any](n int) []T {
	if n == 0 {
		return []T{}
	}
	var z T
	size := unsafe.Sizeof(z)
	if uintptr(n) > ^uintptr(0)/size {
		panic(fmt.Sprintf("tensor: buffer of %d elements is too large", n))
	}
	s := unsafe.Slice((*T)(mallocgc(uintptr(n)*size, nil, false)), n)
	if poisonUninit {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(n)*size)
		for i := range b {
			b[i] = 0xff // NaN for every float dtype, -1 for the integers, an invalid bool
		}
	}
	return s
}

// makeHostUninit is makeHost without the zero fill: every element of the
// result must be written before it is read.
func makeHostUninit(dt DType, n int) any {
	switch dt {
	case Float32:
		return uninitSlice[float32](n)
	case Float64:
		return uninitSlice[float64](n)
	case Int64:
		return uninitSlice[int64](n)
	case Int32:
		return uninitSlice[int32](n)
	case Int16:
		return uninitSlice[int16](n)
	case Uint16:
		return uninitSlice[u16](n)
	case Uint32:
		return uninitSlice[uint32](n)
	case Uint64:
		return uninitSlice[uint64](n)
	case Int8:
		return uninitSlice[int8](n)
	case Uint8:
		return uninitSlice[uint8](n)
	case Bool:
		return uninitSlice[bool](n)
	case Float16, BFloat16:
		return uninitSlice[uint16](n)
	}
	panic(fmt.Sprintf("tensor: unknown dtype %d", dt))
}

// emptyOut allocates a contiguous tensor for a kernel that writes every one
// of its elements: on the CPU its memory is not zero-filled first (other
// backends allocate as empty does). Use empty wherever an element may be
// left unwritten.
func emptyOut(b Backend, dt DType, shape []int) *Tensor {
	if _, cpu := b.(cpuBackend); !cpu {
		return empty(b, dt, shape)
	}
	checkShape("tensor", shape)
	return newTensor(b, &cpuBuffer{dtype: dt, data: makeHostUninit(dt, numel(shape))}, shape)
}
