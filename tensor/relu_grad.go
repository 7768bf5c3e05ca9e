package tensor

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor/internal/vec"
)

// ReluGrad returns the gradient of Relu given its output gradient g and its
// output out: g where out > 0 and zero elsewhere (PyTorch's
// threshold_backward with threshold 0, so a non-finite g where out <= 0
// still gives 0). g and out must have the same shape; the result has g's
// dtype. Dense float32/float64 CPU operands of one dtype take a single fused
// pass; other operands are handled by Where.
func ReluGrad(g, out *Tensor) *Tensor {
	if !sameShape(g.shape, out.shape) {
		panic(fmt.Sprintf("tensor.ReluGrad: gradient shape %v must equal the output shape %v", g.shape, out.shape))
	}
	if !g.dtype.IsFloat() {
		panic(fmt.Sprintf("tensor.ReluGrad: gradient dtype %v must be floating point", g.dtype))
	}
	if g.dtype == out.dtype && g.IsContiguous() && out.IsContiguous() {
		switch g.dtype {
		case Float32:
			if r, ok := reluGradDense[float32](g, out); ok {
				return r
			}
		case Float64:
			if r, ok := reluGradDense[float64](g, out); ok {
				return r
			}
		}
	}
	return Where(out.Gt(ScalarOf(0, out.dtype)), g, ScalarOf(0, g.dtype))
}

// reluGradDense is ReluGrad on contiguous CPU operands of element type T.
func reluGradDense[T float32 | float64](g, out *Tensor) (*Tensor, bool) {
	gd, ok := cpuDense[T](g)
	if !ok {
		return nil, false
	}
	od, ok := cpuDense[T](out)
	if !ok {
		return nil, false
	}
	r := emptyOut(g.st.backend, g.dtype, g.shape)
	rd, ok := r.st.buf.(*cpuBuffer).data.([]T)
	if !ok {
		return nil, false
	}
	parallelFor(len(rd), 64, func(lo, hi int) {
		switch d := any(rd[lo:hi]).(type) {
		case []float32:
			vec.ReluGrad(d, any(gd[lo:hi]).([]float32), any(od[lo:hi]).([]float32))
		case []float64:
			reluMask64(d, any(gd[lo:hi]).([]float64), any(od[lo:hi]).([]float64))
		}
	})
	return r, true
}

// reluMask64 sets d[i] = g[i] where out[i] > 0 and 0 elsewhere, without
// branches on the (unpredictable) sign, as vec.ReluGrad's pure-Go twin does
// for float32: out's bit pattern read as an integer lies in [1, +Inf's
// pattern] exactly when 0 < out <= +Inf, and that test becomes an all-ones
// or all-zeros mask on g's bits.
func reluMask64(d, g, out []float64) {
	g, out = g[:len(d)], out[:len(d)]
	for i := range d {
		ob := math.Float64bits(out[i])
		var m uint64
		if ob-1 < 0x7ff0000000000000 {
			m = ^uint64(0)
		}
		d[i] = math.Float64frombits(math.Float64bits(g[i]) & m)
	}
}
