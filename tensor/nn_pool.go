package tensor

import (
	"fmt"
	"slices"
)

// Pool2dOptions configures 2-d max and average pooling. Index 0 is the
// height axis, index 1 the width axis. Kernel is required; a zero Stride
// means the kernel size and a zero Dilation means 1, as in PyTorch. CeilMode
// rounds the output size up (windows may then hang over the bottom/right
// edge, but each starts inside the input or its left/top padding).
// CountIncludePad (average pooling only) divides by the window size
// including zero padding. Average pooling has no dilation.
type Pool2dOptions struct {
	Kernel, Stride, Padding, Dilation [2]int
	CeilMode, CountIncludePad         bool
}

// poolOutSize is PyTorch's pooling output length.
func poolOutSize(in, k, s, p, d int, ceil bool) int {
	num := in + 2*p - d*(k-1) - 1
	if ceil {
		num += s - 1
	}
	out := floorDiv(num, s) + 1
	if ceil && (out-1)*s >= in+p {
		out-- // the last window must start inside the input or left padding
	}
	return out
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// poolGeom validates pooling of x (shape [N, C, H, W] or [C, H, W]) and
// returns the geometry over its planes.
func poolGeom(op string, xs []int, o Pool2dOptions, avg bool) PoolGeom {
	if len(xs) != 3 && len(xs) != 4 {
		panic(fmt.Sprintf("tensor.%s: want input [N, C, H, W] or [C, H, W], got shape %v", op, xs))
	}
	for i := range 2 {
		if o.Stride[i] == 0 {
			o.Stride[i] = o.Kernel[i]
		}
		if o.Dilation[i] == 0 {
			o.Dilation[i] = 1
		}
		if o.Kernel[i] <= 0 || o.Stride[i] <= 0 || o.Dilation[i] <= 0 || o.Padding[i] < 0 {
			panic(fmt.Sprintf("tensor.%s: kernel %v, stride %v and dilation %v must be positive and padding %v not negative", op, o.Kernel, o.Stride, o.Dilation, o.Padding))
		}
		if o.Padding[i] > o.Kernel[i]/2 {
			panic(fmt.Sprintf("tensor.%s: padding %v must be at most half the kernel size %v", op, o.Padding, o.Kernel))
		}
	}
	if avg && (o.Dilation[0] != 1 || o.Dilation[1] != 1) {
		panic(fmt.Sprintf("tensor.%s: average pooling has no dilation, got %v", op, o.Dilation))
	}
	if !avg && o.CountIncludePad {
		panic(fmt.Sprintf("tensor.%s: CountIncludePad applies to average pooling only", op))
	}
	d := len(xs)
	g := PoolGeom{
		Planes: numel(xs[:d-2]), H: xs[d-2], W: xs[d-1],
		KH: o.Kernel[0], KW: o.Kernel[1], StrideH: o.Stride[0], StrideW: o.Stride[1],
		PadH: o.Padding[0], PadW: o.Padding[1], DilationH: o.Dilation[0], DilationW: o.Dilation[1],
		CountIncludePad: o.CountIncludePad,
	}
	g.OH = poolOutSize(g.H, g.KH, g.StrideH, g.PadH, g.DilationH, o.CeilMode)
	g.OW = poolOutSize(g.W, g.KW, g.StrideW, g.PadW, g.DilationW, o.CeilMode)
	if g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("tensor.%s: input %v with options %+v gives an empty %dx%d output", op, xs, o, g.OH, g.OW))
	}
	return g
}

// withSpatial returns shape with its last two axes replaced by h, w.
func withSpatial(shape []int, h, w int) []int {
	s := slices.Clone(shape)
	s[len(s)-2], s[len(s)-1] = h, w
	return s
}

// MaxPool2d returns the maximum over each pooling window of x ([N, C, H, W]
// or [C, H, W]) and, as Int64 with the same shape, the position ih*W+iw of
// each maximum within its H×W plane (PyTorch's return_indices). A NaN in a
// window is its maximum.
func MaxPool2d(x *Tensor, opt Pool2dOptions) (out, indices *Tensor) {
	nnFloat("MaxPool2d", x)
	g := poolGeom("MaxPool2d", x.shape, opt, false)
	x = x.Contiguous()
	be := x.st.backend
	os := withSpatial(x.shape, g.OH, g.OW)
	out = emptyOut(be, x.dtype, os)
	indices = emptyOut(be, Int64, os)
	if g.Planes > 0 {
		be.MaxPool2d(out.st.buf, indices.st.buf, x.st.buf, x.offset, g)
	}
	return out, indices
}

// checkPlanes panics unless a and b agree on every axis but the last two.
func checkPlanes(op string, a, b []int, what string) {
	if len(a) != len(b) || len(a) < 3 || !slices.Equal(a[:len(a)-2], b[:len(b)-2]) {
		panic(fmt.Sprintf("tensor.%s: %s shapes %v and %v must agree on every axis but the last two", op, what, a, b))
	}
}

// MaxPool2dBackward returns the gradient of max pooling with respect to its
// input: every element of grad (the pooled output's shape) is added at the
// position indices records in an inH×inW plane of zeros.
func MaxPool2dBackward(grad, indices *Tensor, inH, inW int) *Tensor {
	nnFloat("MaxPool2dBackward", grad)
	if indices.dtype != Int64 || !sameShape(grad.shape, indices.shape) || grad.Dim() < 3 {
		panic(fmt.Sprintf("tensor.MaxPool2dBackward: grad %v and Int64 indices %v (%s) must have one shape of rank 3 or 4", grad.shape, indices.shape, indices.dtype))
	}
	d := grad.Dim()
	planes, m := numel(grad.shape[:d-2]), grad.shape[d-2]*grad.shape[d-1]
	g := grad.Contiguous()
	be := g.st.backend
	out := empty(be, g.dtype, withSpatial(g.shape, inH, inW))
	if planes*m > 0 {
		be.PlaneScatterAdd(out.st.buf, g.st.buf, g.offset, dense(indices).st.buf, planes, inH*inW, m)
	}
	return out
}

// MaxPool2dGather returns, for each position of indices ([..., OH, OW],
// Int64, as MaxPool2d returns them), the element of x ([..., H, W]) at that
// flat position of its plane: max pooling with the winners already chosen,
// and the adjoint of MaxPool2dBackward.
func MaxPool2dGather(x, indices *Tensor) *Tensor {
	nnFloat("MaxPool2dGather", x)
	if indices.dtype != Int64 {
		panic(fmt.Sprintf("tensor.MaxPool2dGather: indices have dtype %s, want int64", indices.dtype))
	}
	checkPlanes("MaxPool2dGather", x.shape, indices.shape, "input and indices")
	d := x.Dim()
	planes, n := numel(x.shape[:d-2]), x.shape[d-2]*x.shape[d-1]
	m := indices.shape[d-2] * indices.shape[d-1]
	x = x.Contiguous()
	be := x.st.backend
	out := emptyOut(be, x.dtype, indices.shape)
	if planes*m > 0 {
		be.PlaneGather(out.st.buf, x.st.buf, x.offset, dense(indices).st.buf, planes, n, m)
	}
	return out
}

// AvgPool2d returns the average over each pooling window of x
// ([N, C, H, W] or [C, H, W]), as torch.nn.functional.avg_pool2d: windows
// are clipped to the padded input, and the divisor is the clipped window
// size with CountIncludePad, else the number of real (unpadded) pixels.
func AvgPool2d(x *Tensor, opt Pool2dOptions) *Tensor {
	nnFloat("AvgPool2d", x)
	g := poolGeom("AvgPool2d", x.shape, opt, true)
	x = x.Contiguous()
	be := x.st.backend
	out := emptyOut(be, x.dtype, withSpatial(x.shape, g.OH, g.OW))
	if g.Planes > 0 {
		be.AvgPool2d(out.st.buf, x.st.buf, x.offset, g)
	}
	return out
}

// AvgPool2dBackward returns the gradient of AvgPool2d with the same options
// for an input of spatial size inH×inW: each element of grad divided by its
// window's divisor and spread over the window.
func AvgPool2dBackward(grad *Tensor, inH, inW int, opt Pool2dOptions) *Tensor {
	nnFloat("AvgPool2dBackward", grad)
	if grad.Dim() != 3 && grad.Dim() != 4 {
		panic(fmt.Sprintf("tensor.AvgPool2dBackward: want grad [N, C, OH, OW] or [C, OH, OW], got shape %v", grad.shape))
	}
	xs := withSpatial(grad.shape, inH, inW)
	g := poolGeom("AvgPool2dBackward", xs, opt, true)
	if !sameShape(withSpatial(xs, g.OH, g.OW), grad.shape) {
		panic(fmt.Sprintf("tensor.AvgPool2dBackward: an input of %dx%d pools to %dx%d, but grad has shape %v", inH, inW, g.OH, g.OW, grad.shape))
	}
	gc := grad.Contiguous()
	be := gc.st.backend
	out := empty(be, gc.dtype, xs)
	if g.Planes > 0 {
		be.AvgPool2dBackward(out.st.buf, gc.st.buf, gc.offset, g)
	}
	return out
}

// AdaptiveAvgPool2d averages x ([N, C, H, W] or [C, H, W]) down to
// outH×outW, as torch.nn.functional.adaptive_avg_pool2d: output row i
// averages input rows floor(i*H/outH) up to ceil((i+1)*H/outH), likewise
// for columns.
func AdaptiveAvgPool2d(x *Tensor, outH, outW int) *Tensor {
	nnFloat("AdaptiveAvgPool2d", x)
	if (x.Dim() != 3 && x.Dim() != 4) || outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("tensor.AdaptiveAvgPool2d: want input [N, C, H, W] or [C, H, W] and a positive output size, got shape %v and %dx%d", x.shape, outH, outW))
	}
	d := x.Dim()
	h, w := x.shape[d-2], x.shape[d-1]
	if h == 0 || w == 0 {
		panic(fmt.Sprintf("tensor.AdaptiveAvgPool2d: input %v has an empty plane", x.shape))
	}
	x = x.Contiguous()
	be := x.st.backend
	out := empty(be, x.dtype, withSpatial(x.shape, outH, outW))
	if planes := numel(x.shape[:d-2]); planes > 0 {
		be.AdaptiveAvgPool2d(out.st.buf, x.st.buf, x.offset, planes, h, w, outH, outW)
	}
	return out
}

// AdaptiveAvgPool2dBackward returns the gradient of AdaptiveAvgPool2d for an
// input of spatial size inH×inW.
func AdaptiveAvgPool2dBackward(grad *Tensor, inH, inW int) *Tensor {
	nnFloat("AdaptiveAvgPool2dBackward", grad)
	if (grad.Dim() != 3 && grad.Dim() != 4) || inH <= 0 || inW <= 0 {
		panic(fmt.Sprintf("tensor.AdaptiveAvgPool2dBackward: want grad [N, C, OH, OW] or [C, OH, OW] and a positive input size, got shape %v and %dx%d", grad.shape, inH, inW))
	}
	d := grad.Dim()
	oh, ow := grad.shape[d-2], grad.shape[d-1]
	gc := grad.Contiguous()
	be := gc.st.backend
	out := empty(be, gc.dtype, withSpatial(gc.shape, inH, inW))
	if planes := numel(gc.shape[:d-2]); planes > 0 && oh*ow > 0 {
		be.AdaptiveAvgPool2dBackward(out.st.buf, gc.st.buf, gc.offset, planes, inH, inW, oh, ow)
	}
	return out
}
