package tensor

import "fmt"

// ConvKernels is an optional part of the backend contract: a backend that
// has a convolution implementation of its own (a vendor library such as
// cuDNN, or direct kernels) implements it, and ConvForward,
// ConvBackwardInput, ConvBackwardWeight, Conv2d and the transposed
// convolutions use it when present. A backend without it, or one that
// declines a call, gets the generic path: Im2Col (or Col2Im) around a
// MatMul of its own.
//
// Every method computes the bias-free grouped cross-correlation described
// by g (see ConvGeom), with o output channels and groups groups; its
// operands are contiguous [N, C, H, W] inputs, [O, C/groups, KH, KW]
// weights and [N, O, OH, OW] output gradients of one float dtype, each
// starting at the given element offset of its buffer. g.OH and g.OW are
// those of the output or gradient; for a transposed convolution with
// output padding they may exceed what H and W give, and a backend that
// cannot honour that declines. Every call has work to do: N, C, O, OH, OW,
// KH and KW are positive.
//
// A method returns a new contiguous buffer holding the whole result, which
// the caller owns, and true; or nil and false when it declines (a dtype or
// geometry it does not handle, or a library that is absent or refused the
// call), having written nothing, and the caller falls back to the generic
// path. Allocating the result only on acceptance keeps a declined call from
// costing memory.
type ConvKernels interface {
	// ConvForward returns the [N, O, OH, OW] convolution of x with w.
	ConvForward(x, w Buffer, xOff, wOff int, g ConvGeom, o, groups int) (Buffer, bool)
	// ConvBackwardInput returns the [N, C, H, W] gradient of ConvForward
	// with respect to x, given its output gradient grad and the weight w.
	ConvBackwardInput(grad, w Buffer, gradOff, wOff int, g ConvGeom, o, groups int) (Buffer, bool)
	// ConvBackwardWeight returns the [O, C/groups, KH, KW] gradient of
	// ConvForward with respect to w, given its input x and output gradient
	// grad.
	ConvBackwardWeight(x, grad Buffer, xOff, gradOff int, g ConvGeom, o, groups int) (Buffer, bool)
}

// convKernels returns t's backend as ConvKernels, or nil when it has none
// or the convolution has no work (which the generic path handles).
func convKernels(t *Tensor, g ConvGeom, o int) ConvKernels {
	if convEmpty(g, o) {
		return nil
	}
	ck, _ := t.st.backend.(ConvKernels)
	return ck
}

// convResult wraps the buffer a ConvKernels method returned as a tensor of
// shape, checking that it holds exactly the result.
func convResult(op string, be Backend, buf Buffer, dt DType, shape []int) *Tensor {
	if buf == nil || buf.Len() != numel(shape) || buf.DType() != dt {
		panic(fmt.Sprintf("tensor.%s: the %T backend's ConvKernels returned %v, not a %s buffer of %d elements for shape %v", op, be, describeBuffer(buf), dt, numel(shape), shape))
	}
	return newTensor(be, buf, shape)
}

// describeBuffer names a buffer's dtype and length for a message.
func describeBuffer(b Buffer) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("a %s buffer of %d elements", b.DType(), b.Len())
}

// backendConvForward is conv2dForward on the backend's own convolution, or
// nil when it has none or declines.
func backendConvForward(x, w *Tensor, g ConvGeom, groups int) *Tensor {
	o := w.shape[0]
	ck := convKernels(x, g, o)
	if ck == nil {
		return nil
	}
	x, w = dense(x), dense(w)
	buf, ok := ck.ConvForward(x.st.buf, w.st.buf, x.offset, w.offset, g, o, groups)
	if !ok {
		return nil
	}
	return convResult("ConvForward", x.st.backend, buf, x.dtype, []int{g.N, o, g.OH, g.OW})
}

// backendConvInputGrad is conv2dInputGrad on the backend's own
// convolution, or nil when it has none or declines.
func backendConvInputGrad(grad, w *Tensor, g ConvGeom, groups int) *Tensor {
	ck := convKernels(grad, g, w.shape[0])
	if ck == nil {
		return nil
	}
	grad, w = dense(grad), dense(w)
	buf, ok := ck.ConvBackwardInput(grad.st.buf, w.st.buf, grad.offset, w.offset, g, w.shape[0], groups)
	if !ok {
		return nil
	}
	return convResult("ConvBackwardInput", grad.st.backend, buf, grad.dtype, []int{g.N, g.C, g.H, g.W})
}

// backendConvWeightGrad is conv2dWeightGrad on the backend's own
// convolution, or nil when it has none or declines.
func backendConvWeightGrad(x, grad *Tensor, g ConvGeom, ws []int, groups int) *Tensor {
	ck := convKernels(x, g, ws[0])
	if ck == nil {
		return nil
	}
	x, grad = dense(x), dense(grad)
	buf, ok := ck.ConvBackwardWeight(x.st.buf, grad.st.buf, x.offset, grad.offset, g, ws[0], groups)
	if !ok {
		return nil
	}
	return convResult("ConvBackwardWeight", x.st.backend, buf, x.dtype, ws)
}
