package tensor

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
