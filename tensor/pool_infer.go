package tensor

import "github.com/emberml/ember/tensor/internal/cpu"

// MaxPool2dValues returns the first result of MaxPool2d(x, opt), the
// maximum over each pooling window, without the Int64 positions: an
// inference helper for callers that never need the indices. On the CPU it
// runs a branch-free kernel that computes no positions; elsewhere it is
// MaxPool2d with the indices dropped. The values equal MaxPool2d's (a NaN
// in a window is its maximum) except that a window whose maximum is a zero
// of both signs may give +0 where MaxPool2d gives the first zero. It is
// forward-only: autograd does not record it.
func MaxPool2dValues(x *Tensor, opt Pool2dOptions) *Tensor {
	nnFloat("MaxPool2dValues", x)
	g := poolGeom("MaxPool2dValues", x.shape, opt, false)
	os := withSpatial(x.shape, g.OH, g.OW)
	switch x.dtype {
	case Float32:
		if src, ok := cpuDense[float32](x); ok {
			y := emptyOut(x.st.backend, x.dtype, os)
			cpu.MaxPool2dValues(y.st.buf.(*cpuBuffer).data.([]float32), src, cpu.PoolGeom(g))
			return y
		}
	case Float64:
		if src, ok := cpuDense[float64](x); ok {
			y := emptyOut(x.st.backend, x.dtype, os)
			cpu.MaxPool2dValues(y.st.buf.(*cpuBuffer).data.([]float64), src, cpu.PoolGeom(g))
			return y
		}
	}
	y, _ := MaxPool2d(x, opt)
	return y
}
