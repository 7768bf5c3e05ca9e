package tensor

import (
	"github.com/emberml/ember/tensor/internal/cpu"
	"github.com/emberml/ember/tensor/internal/vec"
)

// Conv2dRelu returns max(Conv2d(x, w, b, opt), 0): the convolution followed
// by a ReLU, with the same shapes and rules as Conv2d. On the CPU float32
// convolutions (and depthwise ones of either float type) clamp their fresh
// output in place, so no second output tensor is allocated; elsewhere it is
// Conv2d followed by Relu. It is a forward-only
// inference helper: autograd does not record it.
func Conv2dRelu(x, w, b *Tensor, opt Conv2dOptions) *Tensor {
	return unbatched(x, 4, func(x *Tensor) *Tensor {
		nnFloat("Conv2dRelu", x, w, b)
		opt := opt.withDefaults("Conv2dRelu")
		g := conv2dGeom("Conv2dRelu", x.shape, w.shape, opt)
		checkBias("Conv2dRelu", b, w.shape[0])
		if y := cpuConvReluForward(x, w, b, g, opt.Groups); y != nil {
			return y
		}
		return Conv2d(x, w, b, opt).Relu()
	})
}

// cpuConvReluForward is cpuConvForward followed by a ReLU in place on the
// fresh output (inside the depthwise kernel's pass, as a vectorized sweep
// after the GEMM ones), or nil when the CPU kernels do not apply.
func cpuConvReluForward(x, w, b *Tensor, g ConvGeom, groups int) *Tensor {
	o := w.shape[0]
	if convEmpty(g, o) {
		return nil
	}
	threads := NumThreads()
	switch x.dtype {
	case Float32:
		ops, ok := convOperands[float32](x, w, b)
		if !ok {
			return nil
		}
		y := empty(x.st.backend, x.dtype, []int{g.N, o, g.OH, g.OW})
		dst := y.st.buf.(*cpuBuffer).data.([]float32)
		if depthwise(g, groups) {
			cpu.DepthwiseForward(dst, ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, threads, true)
		} else {
			// The vectorized ReLU over the finished output beats the
			// kernel's branchy scalar clamp.
			cpu.ConvForwardF32(dst, ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, groups, threads, false)
			vec.Relu(dst, dst)
		}
		return y
	case Float64:
		if !depthwise(g, groups) {
			return nil
		}
		ops, ok := convOperands[float64](x, w, b)
		if !ok {
			return nil
		}
		y := empty(x.st.backend, x.dtype, []int{g.N, o, g.OH, g.OW})
		cpu.DepthwiseForward(y.st.buf.(*cpuBuffer).data.([]float64), ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, threads, true)
		return y
	}
	return nil
}
