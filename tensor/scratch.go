package tensor

import "github.com/emberml/ember/tensor/internal/pool"

// Scratch copies: contiguous copies an operation makes of its input for a
// kernel, reads once and drops before returning. Their memory never escapes
// the operation, so it comes from and goes back to a size-class pool.
// Tensors that leave an operation never use pooled memory: their buffers
// may be shared by any number of views and saved by autograd, and nothing
// tells when the last reference is gone (that would take reference counts
// on storage, which Go's garbage collector does not provide).
var (
	scratchF32 pool.Pool[float32]
	scratchF64 pool.Pool[float64]
)

// scratchContiguous returns t itself when it is contiguous from element 0
// of its buffer, else a contiguous copy, with a release func to call once
// the copy is dead (it does nothing for t itself). The copy must not escape
// the caller. Float32 and Float64 CPU copies use pooled memory; others are
// plain clones.
func scratchContiguous(t *Tensor) (c *Tensor, release func()) {
	if t.IsContiguous() && t.offset == 0 {
		return t, func() {}
	}
	return scratchCopy(t)
}

// scratchCopy returns a contiguous copy of t with its own memory, and a
// release func to call once the copy is dead. The copy must not escape the
// caller. Float32 and Float64 CPU copies use pooled memory; others are plain
// clones.
func scratchCopy(t *Tensor) (c *Tensor, release func()) {
	if _, cpu := t.st.backend.(cpuBackend); !cpu {
		return t.Clone(), func() {}
	}
	n := t.Numel()
	var buf *cpuBuffer
	switch t.dtype {
	case Float32:
		s := scratchF32.Get(n)
		buf = &cpuBuffer{dtype: Float32, data: *s}
		release = func() { scratchF32.Put(s) }
	case Float64:
		s := scratchF64.Get(n)
		buf = &cpuBuffer{dtype: Float64, data: *s}
		release = func() { scratchF64.Put(s) }
	default:
		return t.Clone(), func() {}
	}
	t.st.backend.Copy(buf, t.st.buf, t.Layout())
	return newTensor(t.st.backend, buf, t.shape), release
}
