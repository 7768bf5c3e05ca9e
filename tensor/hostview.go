package tensor

import "runtime"

// HostData returns the live backing memory of t's elements when t is a
// contiguous CPU tensor of dtype Float32, Float64, Int32 or Int64: a
// []float32, []float64, []int32 or []int64 of t.Numel() elements in
// row-major order that aliases t's storage (no copy). ok is false, and data
// nil, for any other tensor; use the copying accessors (Float32s, ...) and
// CopyFrom then.
//
// Reading through data is safe while nothing writes t. A caller that writes
// through data must call MarkWritten(t) afterwards, so that autograd's
// version check sees the in-place change (or write with CopyFrom instead).
func HostData(t *Tensor) (data any, ok bool) {
	b, isCPU := t.st.buf.(*cpuBuffer)
	if !isCPU || !t.IsContiguous() {
		return nil, false
	}
	lo, hi := t.offset, t.offset+t.Numel()
	switch d := b.data.(type) {
	case []float32:
		return d[lo:hi:hi], true
	case []float64:
		return d[lo:hi:hi], true
	case []int32:
		return d[lo:hi:hi], true
	case []int64:
		return d[lo:hi:hi], true
	}
	return nil, false
}

// HostFloat32s is HostData for float32 tensors: the live backing slice of a
// contiguous CPU float32 tensor, or ok false. Writers must call
// MarkWritten(t) afterwards.
func HostFloat32s(t *Tensor) ([]float32, bool) {
	if t.dtype != Float32 {
		return nil, false
	}
	d, ok := HostData(t)
	if !ok {
		return nil, false
	}
	return d.([]float32), true
}

// MarkWritten records an in-place write to t's storage made through the
// slice HostData returned: it increments the storage version (see Version),
// as CopyFrom does.
func MarkWritten(t *Tensor) { t.bumpVersion() }

// FromHostMemory returns a CPU tensor of the given shape whose storage is
// data itself, not a copy: the inverse of HostData, for memory a tensor
// must share with something else (a shared-memory segment other processes
// map, a memory-mapped file). With no shape the tensor is 1-d. Writes to
// the tensor show in data and, after MarkWritten, the other way round.
//
// release, if not nil, is called once, on a goroutine of its own, after
// the storage has become unreachable (the tensor, its views and every
// tensor sharing the storage); the caller frees data there. Slices that
// HostData returned must not be used after that.
func FromHostMemory[T float32 | float64 | int32 | int64](data []T, release func(), shape ...int) *Tensor {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFill("FromHostMemory", len(data), shape)
	buf := &cpuBuffer{dtype: dtypeOf[T](), data: data}
	if release != nil {
		runtime.AddCleanup(buf, func(f func()) { f() }, release)
	}
	return newTensor(cpuBackend{}, buf, shape)
}
