//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// The fused in-place updates (internal/kernels/fused.cu). The scalars are
// rounded to the parameter's dtype here, exactly as tensor/fused.go rounds
// them, and the kernels round every operation on its own, so the GPU
// reproduces the CPU's results bit for bit.

// fusedKernels lists the kernels this file launches.
var fusedKernels = nnFloatNames([]string{"adam", "sgd", "add_into"})

// Flags of the Adam kernel (ADAM_* in fused.cu).
const (
	adamMaximize int32 = 1 << iota
	adamDecoupled
	adamL2
	adamAMSGrad
)

// Flags of the SGD kernel (SGD_* in fused.cu).
const (
	sgdMaximize int32 = 1 << iota
	sgdL2
	sgdMomentum
	sgdNesterov
	sgdInit
)

// fusedKernel is the instantiation of base for dt, panicking as the CPU
// backend does for dtypes other than Float32 and Float64.
func fusedKernel(op, base string, dt tensor.DType) string {
	switch dt {
	case tensor.Float32:
		return base + "_f32"
	case tensor.Float64:
		return base + "_f64"
	}
	panic(fmt.Sprintf("tensor.%s: unsupported dtype %s", op, dt))
}

// fusedSpanPtr is the device address of the first element of s, or 0 (a null
// pointer) for an absent span.
func (b *Backend) fusedSpanPtr(s tensor.Span) uint64 {
	if s.Buf == nil {
		return 0
	}
	return b.ptr(s.Buf, s.Offset)
}

// adamScalars returns the scalar arguments of the Adam kernel in T, computed
// as tensor/fused.go's adamKernel computes them.
func adamScalars[T float32 | float64](p tensor.AdamStep) []any {
	b1, b2 := T(p.Beta1), T(p.Beta2)
	c1, c2 := T(1-p.Beta1), T(1-p.Beta2)
	decay, wd := T(1-p.LR*p.WeightDecay), T(p.WeightDecay)
	bc2 := T(math.Sqrt(1 - math.Pow(p.Beta2, p.Step)))
	stepSize := T(p.LR / (1 - math.Pow(p.Beta1, p.Step)))
	eps := T(p.Eps)
	return []any{b1, b2, c1, c2, decay, wd, bc2, stepSize, eps}
}

// sgdScalars returns the scalar arguments of the SGD kernel in T, computed
// as tensor/fused.go's sgdKernel computes them.
func sgdScalars[T float32 | float64](p tensor.SGDStep) []any {
	return []any{T(p.WeightDecay), T(p.Momentum), T(1 - p.Dampening), T(p.LR)}
}

// FusedAdam implements tensor.FusedKernels.
func (b *Backend) FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq tensor.Span, p tensor.AdamStep) {
	dt := param.Buf.DType()
	k := fusedKernel("FusedAdam", "adam", dt)
	if n <= 0 {
		return
	}
	var flags int32
	if p.Maximize {
		flags |= adamMaximize
	}
	if p.Decoupled {
		flags |= adamDecoupled
	} else if p.WeightDecay != 0 {
		flags |= adamL2
	}
	if maxExpAvgSq.Buf != nil {
		flags |= adamAMSGrad
	}
	var scalars []any
	if dt == tensor.Float32 {
		scalars = adamScalars[float32](p)
	} else {
		scalars = adamScalars[float64](p)
	}
	args := append([]any{int64(n), b.fusedSpanPtr(param), b.fusedSpanPtr(grad), b.fusedSpanPtr(expAvg), b.fusedSpanPtr(expAvgSq), b.fusedSpanPtr(maxExpAvgSq)}, scalars...)
	b.launch(k, n, append(args, flags)...)
}

// FusedSGD implements tensor.FusedKernels.
func (b *Backend) FusedSGD(n int, param, grad, buf tensor.Span, p tensor.SGDStep) {
	dt := param.Buf.DType()
	k := fusedKernel("FusedSGD", "sgd", dt)
	if n <= 0 {
		return
	}
	var flags int32
	if p.Maximize {
		flags |= sgdMaximize
	}
	if p.WeightDecay != 0 {
		flags |= sgdL2
	}
	if p.Momentum != 0 && buf.Buf != nil {
		flags |= sgdMomentum
	}
	if p.Nesterov {
		flags |= sgdNesterov
	}
	if p.InitBuffer {
		flags |= sgdInit
	}
	var scalars []any
	if dt == tensor.Float32 {
		scalars = sgdScalars[float32](p)
	} else {
		scalars = sgdScalars[float64](p)
	}
	args := append([]any{int64(n), b.fusedSpanPtr(param), b.fusedSpanPtr(grad), b.fusedSpanPtr(buf)}, scalars...)
	b.launch(k, n, append(args, flags)...)
}

// AddInto implements tensor.FusedKernels.
func (b *Backend) AddInto(n int, dst tensor.Span, src tensor.Buffer, sl tensor.Layout) {
	k := fusedKernel("AddInto", "add_into", dst.Buf.DType())
	if n <= 0 {
		return
	}
	b.launch(k, n, int64(n), b.fusedSpanPtr(dst), b.ptr(src, 0), view(sl))
}
