package tensor

// ConvGeom describes a 2-d convolution lowered to a matrix product: N images
// of C channels and H×W pixels seen through a KH×KW kernel with the given
// stride, zero padding and dilation, giving OH×OW output positions per
// image. Output position (oh, ow) and kernel tap (kh, kw) read input pixel
// (oh*StrideH - PadH + kh*DilationH, ow*StrideW - PadW + kw*DilationW), or
// zero where that falls in the padding.
type ConvGeom struct {
	N, C, H, W           int
	KH, KW               int
	StrideH, StrideW     int
	PadH, PadW           int
	DilationH, DilationW int
	OH, OW               int
}

// PoolGeom describes a 2-d pooling window sliding over Planes independent
// H×W planes (N*C for an NCHW batch), giving OH×OW outputs per plane. Output
// (oh, ow) covers rows oh*StrideH - PadH + i*DilationH for i < KH (columns
// likewise). CountIncludePad makes average pooling divide by the window size
// clipped to the padded input rather than by the number of real pixels.
type PoolGeom struct {
	Planes, H, W         int
	KH, KW               int
	StrideH, StrideW     int
	PadH, PadW           int
	DilationH, DilationW int
	OH, OW               int
	CountIncludePad      bool
}

// NNKernels is the part of the backend contract for neural-network
// primitives: convolution lowering, pooling, softmax and normalization
// statistics. Every buffer holds Float32 or Float64 data (index buffers hold
// Int64) laid out contiguously; the main input of each kernel starts at
// element srcOff of its buffer, every other operand at element 0. Outputs
// are fully written unless a kernel says it accumulates.
type NNKernels interface {
	// Im2Col unfolds the [N, C, H, W] images in src into dst, a
	// [C*KH*KW, N*OH*OW] matrix: row (c, kh, kw) and column (n, oh, ow) hold
	// the pixel that kernel tap reads at that output position, or zero in
	// the padding.
	Im2Col(dst, src Buffer, srcOff int, g ConvGeom)
	// Col2Im is the adjoint of Im2Col: it adds every element of the
	// [C*KH*KW, N*OH*OW] matrix src into the pixel of the [N, C, H, W] dst
	// that Im2Col would have read it from (padding taps are dropped).
	Col2Im(dst, src Buffer, g ConvGeom)

	// MaxPool2d writes the maximum of each window of the [Planes, H, W] src
	// into dst ([Planes, OH, OW]) and its position ih*W+iw within the plane
	// into indices (Int64). A NaN counts as the maximum.
	MaxPool2d(dst, indices, src Buffer, srcOff int, g PoolGeom)
	// PlaneGather writes dst[p*m+j] = src[srcOff + p*n + indices[p*m+j]] for
	// planes p of n source and m destination elements.
	PlaneGather(dst, src Buffer, srcOff int, indices Buffer, planes, n, m int)
	// PlaneScatterAdd adds src[srcOff + p*m + j] into dst[p*n + indices[p*m+j]]
	// (accumulating into dst): the adjoint of PlaneGather and the backward
	// pass of max pooling.
	PlaneScatterAdd(dst, src Buffer, srcOff int, indices Buffer, planes, n, m int)
	// AvgPool2d writes the average of each window of the [Planes, H, W] src
	// into dst ([Planes, OH, OW]), dividing as PyTorch does (see PoolGeom).
	AvgPool2d(dst, src Buffer, srcOff int, g PoolGeom)
	// AvgPool2dBackward spreads each element of the [Planes, OH, OW] grad
	// over its window in dst ([Planes, H, W], accumulating): the adjoint of
	// AvgPool2d.
	AvgPool2dBackward(dst, grad Buffer, gradOff int, g PoolGeom)
	// AdaptiveAvgPool2d averages the [planes, h, w] src into [planes, oh, ow]
	// with PyTorch's windows: rows floor(i*h/oh) to ceil((i+1)*h/oh).
	AdaptiveAvgPool2d(dst, src Buffer, srcOff int, planes, h, w, oh, ow int)
	// AdaptiveAvgPool2dBackward is the adjoint of AdaptiveAvgPool2d,
	// accumulating into the [planes, h, w] dst.
	AdaptiveAvgPool2dBackward(dst, grad Buffer, gradOff int, planes, h, w, oh, ow int)

	// Softmax writes the softmax (or, with log, the log-softmax) along the
	// middle axis of src laid out as [outer, n, inner], computed stably by
	// subtracting the maximum.
	Softmax(log bool, dst, src Buffer, srcOff int, outer, n, inner int)
	// Moments writes, for each middle index j of src laid out as
	// [outer, n, inner], the mean and the biased variance of the
	// outer*inner elements src[:, j, :] into mean[j] and variance[j].
	Moments(mean, variance, src Buffer, srcOff int, outer, n, inner int)
	// ScaleShift writes dst[a, j, c] = src[a, j, c]*scale[j] + shift[j] for
	// src laid out as [outer, n, inner]. A nil scale means ones and a nil
	// shift zeros. dst may be src's buffer when srcOff is 0.
	ScaleShift(dst, src Buffer, srcOff int, scale, shift Buffer, outer, n, inner int)
	// NormBackward is the backward pass of a normalization. With grad and x
	// laid out as [outer, n, inner] and xhat = (x - mean[j]) * rstd[j], it
	// writes sumG[j] = sum(grad) and sumGX[j] = sum(grad*xhat) over the
	// outer*inner elements of index j and, when dx is non-nil,
	// dx = scale[j]*rstd[j]*(grad - sumG[j]/count - xhat*sumGX[j]/count),
	// the input gradient when the statistics are x's own. A nil mean, rstd
	// or scale means zeros, ones, ones.
	NormBackward(dx, sumG, sumGX, grad Buffer, gradOff int, x Buffer, xOff int, mean, rstd, scale Buffer, outer, n, inner int)
}
