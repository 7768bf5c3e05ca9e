package tensor

import (
	"fmt"

	"github.com/emberml/ember/tensor/internal/cpu"
)

// Neural-network operations: convolutions (this file), pooling (nn_pool.go),
// softmax (nn_softmax.go), normalization (nn_norm.go), dropout and embedding
// (nn_misc.go). Layouts follow PyTorch: images are NCHW, sequences NCL, and
// options left at their zero values mean PyTorch's defaults.

// Conv2dOptions configures a 2-d convolution. Zero values mean PyTorch's
// defaults: stride 1, padding 0, dilation 1, groups 1. Index 0 is the height
// axis and index 1 the width axis.
type Conv2dOptions struct {
	Stride, Padding, Dilation [2]int
	Groups                    int
}

// Conv1dOptions configures a 1-d convolution; zero values mean stride 1,
// padding 0, dilation 1, groups 1.
type Conv1dOptions struct {
	Stride, Padding, Dilation int
	Groups                    int
}

// ConvTranspose2dOptions configures a 2-d transposed convolution; zero values
// mean stride 1, padding 0, output padding 0, dilation 1, groups 1.
// OutputPadding adds rows/columns on the bottom/right of the output to pick
// among the input sizes a strided convolution maps to the same output size;
// it must be smaller than the stride or the dilation.
type ConvTranspose2dOptions struct {
	Stride, Padding, OutputPadding, Dilation [2]int
	Groups                                   int
}

// withDefaults replaces zero strides, dilations and groups by one and checks
// the rest.
func (o Conv2dOptions) withDefaults(op string) Conv2dOptions {
	for i := range 2 {
		if o.Stride[i] == 0 {
			o.Stride[i] = 1
		}
		if o.Dilation[i] == 0 {
			o.Dilation[i] = 1
		}
		if o.Stride[i] < 0 || o.Dilation[i] < 0 || o.Padding[i] < 0 {
			panic(fmt.Sprintf("tensor.%s: stride %v, padding %v and dilation %v must not be negative", op, o.Stride, o.Padding, o.Dilation))
		}
	}
	if o.Groups == 0 {
		o.Groups = 1
	}
	if o.Groups < 0 {
		panic(fmt.Sprintf("tensor.%s: groups %d must be positive", op, o.Groups))
	}
	return o
}

// To2d returns the 2-d options that run a 1-d convolution on a height-1
// image.
func (o Conv1dOptions) To2d() Conv2dOptions {
	d := o.Dilation
	if d == 0 {
		d = 1
	}
	return Conv2dOptions{Stride: [2]int{1, o.Stride}, Padding: [2]int{0, o.Padding}, Dilation: [2]int{1, d}, Groups: o.Groups}
}

// Conv returns the options of the convolution whose input gradient this
// transposed convolution computes (output padding dropped).
func (o ConvTranspose2dOptions) Conv() Conv2dOptions {
	return Conv2dOptions{Stride: o.Stride, Padding: o.Padding, Dilation: o.Dilation, Groups: o.Groups}
}

// nnFloat checks that the non-nil tensors share one floating dtype (Float32
// or Float64) and one device, and returns the dtype.
func nnFloat(op string, ts ...*Tensor) DType {
	var first *Tensor
	for _, t := range ts {
		if t == nil {
			continue
		}
		if t.dtype != Float32 && t.dtype != Float64 {
			panic(fmt.Sprintf("tensor.%s: operand of shape %v has dtype %s; want float32 or float64 (convert with To)", op, t.shape, t.dtype))
		}
		if first == nil {
			first = t
			continue
		}
		if t.dtype != first.dtype {
			panic(fmt.Sprintf("tensor.%s: operands have dtypes %s and %s; convert them to one", op, first.dtype, t.dtype))
		}
		if t.Device() != first.Device() {
			panic(fmt.Sprintf("tensor.%s: operands on different devices (%s and %s)", op, first.Device(), t.Device()))
		}
	}
	return first.dtype
}

// dense returns t if its elements are contiguous from element 0 of its
// buffer, else a compact copy: the form kernel operands other than the main
// input must have.
func dense(t *Tensor) *Tensor {
	if t.IsContiguous() && t.offset == 0 {
		return t
	}
	return t.Clone()
}

// convOutSize is PyTorch's output length of a convolution or pooling window
// without ceil mode.
func convOutSize(in, k, s, p, d int) int {
	return (in+2*p-d*(k-1)-1)/s + 1
}

// conv2dGeom validates the operands of a 2-d convolution of x ([N, C, H, W])
// by a weight of shape [O, C/groups, kh, kw] and returns the geometry.
func conv2dGeom(op string, xs, ws []int, o Conv2dOptions) ConvGeom {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("tensor.%s: want input [N, C, H, W] and weight [out, in/groups, kh, kw], got shapes %v and %v", op, xs, ws))
	}
	gr := o.Groups
	if xs[1] != ws[1]*gr {
		panic(fmt.Sprintf("tensor.%s: input %v has %d channels but weight %v with groups=%d expects %d (weight axis 1 is in/groups)", op, xs, xs[1], ws, gr, ws[1]*gr))
	}
	if ws[0]%gr != 0 {
		panic(fmt.Sprintf("tensor.%s: weight %v has %d output channels, not divisible by groups=%d", op, ws, ws[0], gr))
	}
	g := ConvGeom{
		N: xs[0], C: xs[1], H: xs[2], W: xs[3], KH: ws[2], KW: ws[3],
		StrideH: o.Stride[0], StrideW: o.Stride[1], PadH: o.Padding[0], PadW: o.Padding[1],
		DilationH: o.Dilation[0], DilationW: o.Dilation[1],
	}
	if g.KH == 0 || g.KW == 0 {
		panic(fmt.Sprintf("tensor.%s: weight %v has an empty kernel", op, ws))
	}
	eh, ew := g.DilationH*(g.KH-1)+1, g.DilationW*(g.KW-1)+1
	if g.H+2*g.PadH < eh || g.W+2*g.PadW < ew {
		panic(fmt.Sprintf("tensor.%s: padded input %dx%d is smaller than the dilated kernel %dx%d (input %v, weight %v, padding %v, dilation %v)",
			op, g.H+2*g.PadH, g.W+2*g.PadW, eh, ew, xs, ws, o.Padding, o.Dilation))
	}
	g.OH = convOutSize(g.H, g.KH, g.StrideH, g.PadH, g.DilationH)
	g.OW = convOutSize(g.W, g.KW, g.StrideW, g.PadW, g.DilationW)
	return g
}

// im2col lowers x (already validated against g) to its [C*KH*KW, N*OH*OW]
// column matrix.
func im2col(x *Tensor, g ConvGeom) *Tensor {
	x = x.Contiguous()
	be := x.st.backend
	col := empty(be, x.dtype, []int{g.C * g.KH * g.KW, g.N * g.OH * g.OW})
	be.Im2Col(col.st.buf, x.st.buf, x.offset, g)
	return col
}

// col2im folds a [C*KH*KW, N*OH*OW] column matrix back into [N, C, H, W]
// images, summing overlapping taps.
func col2im(col *Tensor, g ConvGeom) *Tensor {
	col = dense(col)
	be := col.st.backend
	out := empty(be, col.dtype, []int{g.N, g.C, g.H, g.W})
	be.Col2Im(out.st.buf, col.st.buf, g)
	return out
}

// channelsFirst turns a [N, C, ...] tensor into a dense [C, N*rest] matrix.
func channelsFirst(t *Tensor) *Tensor {
	n, c := t.shape[0], t.shape[1]
	rest := t.Numel() / max(n*c, 1)
	if n == 1 {
		return dense(t.Reshape(c, rest))
	}
	return t.Reshape(n, c, rest).Permute(1, 0, 2).Clone().View(c, n*rest)
}

// batchFirst turns a [C, N*L] matrix into a dense [N, C, L] tensor.
func batchFirst(m *Tensor, n, l int) *Tensor {
	c := m.shape[0]
	if n == 1 {
		return dense(m).View(1, c, l)
	}
	return m.View(c, n, l).Permute(1, 0, 2).Clone()
}

// addChannelBias adds b[c] to channel c of the fresh dense tensor y
// ([N, C, ...]) in place.
func addChannelBias(y, b *Tensor) {
	n, c := y.shape[0], y.shape[1]
	b = dense(b)
	y.st.backend.ScaleShift(y.st.buf, y.st.buf, 0, nil, b.st.buf, n, c, y.Numel()/max(n*c, 1))
}

// checkBias panics unless b is nil or a 1-d tensor of length c.
func checkBias(op string, b *Tensor, c int) {
	if b != nil && (b.Dim() != 1 || b.shape[0] != c) {
		panic(fmt.Sprintf("tensor.%s: bias has shape %v, want [%d] (one value per output channel)", op, b.shape, c))
	}
}

// unbatched runs f on x with a batch axis of one added when x has rank
// rank-1 (an unbatched input, as PyTorch accepts), removing it afterwards.
func unbatched(x *Tensor, rank int, f func(*Tensor) *Tensor) *Tensor {
	if x.Dim() == rank-1 {
		return f(x.Unsqueeze(0)).Squeeze(0)
	}
	return f(x)
}

// Conv2dGeometry validates a 2-d convolution of an input of shape xs
// ([N, C, H, W]) by a weight of shape ws ([O, C/groups, KH, KW]) and returns
// its geometry, for ConvForward and friends.
func Conv2dGeometry(xs, ws []int, opt Conv2dOptions) ConvGeom {
	return conv2dGeom("Conv2dGeometry", xs, ws, opt.withDefaults("Conv2dGeometry"))
}

// ConvTranspose2dGeometry validates a transposed convolution of an input of
// shape xs ([N, Cin, H, W]) by a weight of shape ws ([Cin, Cout/groups, KH,
// KW]) and returns the geometry of the convolution it transposes: that
// convolution's input (C, H, W) is the transposed convolution's output and
// its output (OH, OW) is the transposed convolution's input.
func ConvTranspose2dGeometry(xs, ws []int, opt ConvTranspose2dOptions) ConvGeom {
	return convTransposeGeom("ConvTranspose2dGeometry", xs, ws, opt)
}

// checkGeom panics unless shape is [g.N, c, h, w].
func checkGeom(op, what string, shape []int, n, c, h, w int) {
	if len(shape) != 4 || shape[0] != n || shape[1] != c || shape[2] != h || shape[3] != w {
		panic(fmt.Sprintf("tensor.%s: %s has shape %v, want [%d %d %d %d] for this geometry", op, what, shape, n, c, h, w))
	}
}

// checkConvWeight panics unless w is a [O, C/groups, KH, KW] weight for g.
func checkConvWeight(op string, w *Tensor, g ConvGeom, groups int) {
	if groups <= 0 || g.C%groups != 0 || w.Dim() != 4 || w.shape[0]%groups != 0 ||
		w.shape[1] != g.C/groups || w.shape[2] != g.KH || w.shape[3] != g.KW {
		panic(fmt.Sprintf("tensor.%s: weight has shape %v, want [O, %d/%d, %d, %d] with O divisible by groups=%d", op, w.shape, g.C, groups, g.KH, g.KW, groups))
	}
}

// ConvForward computes the bias-free convolution described by g: x is
// [N, C, H, W], w is [O, C/groups, KH, KW] and the result [N, O, OH, OW].
// Conv2d is the checked, user-facing form; this is the primitive that
// autograd builds convolution gradients of any order from.
func ConvForward(x, w *Tensor, g ConvGeom, groups int) *Tensor {
	nnFloat("ConvForward", x, w)
	checkGeom("ConvForward", "input", x.shape, g.N, g.C, g.H, g.W)
	checkConvWeight("ConvForward", w, g, groups)
	return conv2dForward(x, w, g, groups)
}

// ConvBackwardInput computes the gradient of ConvForward with respect to
// its input: grad ([N, O, OH, OW]) correlated backwards with w into an
// [N, C, H, W] tensor (Im2Col's adjoint after a matrix product). It is also
// the transposed convolution.
func ConvBackwardInput(grad, w *Tensor, g ConvGeom, groups int) *Tensor {
	nnFloat("ConvBackwardInput", grad, w)
	checkConvWeight("ConvBackwardInput", w, g, groups)
	checkGeom("ConvBackwardInput", "grad", grad.shape, g.N, w.shape[0], g.OH, g.OW)
	return conv2dInputGrad(grad, w, g, groups)
}

// ConvBackwardWeight computes the gradient of ConvForward with respect to
// its weight: x ([N, C, H, W]) correlated with grad ([N, O, OH, OW]),
// shaped [O, C/groups, KH, KW].
func ConvBackwardWeight(x, grad *Tensor, g ConvGeom, groups int) *Tensor {
	nnFloat("ConvBackwardWeight", x, grad)
	checkGeom("ConvBackwardWeight", "input", x.shape, g.N, g.C, g.H, g.W)
	if grad.Dim() != 4 || groups <= 0 || grad.shape[1]%groups != 0 || g.C%groups != 0 {
		panic(fmt.Sprintf("tensor.ConvBackwardWeight: grad has shape %v; want [N, O, OH, OW] with O and C=%d divisible by groups=%d", grad.shape, g.C, groups))
	}
	checkGeom("ConvBackwardWeight", "grad", grad.shape, g.N, grad.shape[1], g.OH, g.OW)
	return conv2dWeightGrad(x, grad, g, []int{grad.shape[1], g.C / groups, g.KH, g.KW}, groups)
}

// Conv2d returns the 2-d cross-correlation of x ([N, C, H, W], or unbatched
// [C, H, W]) with weight w ([O, C/groups, KH, KW]) plus the optional bias b
// ([O]; nil for none), as torch.nn.functional.conv2d. The output has shape
// [N, O, OH, OW] with OH = (H + 2*padding - dilation*(KH-1) - 1)/stride + 1.
// On the CPU each image is lowered on its own and multiplied by the weight
// straight into the output, the bias added in the same pass; 1x1 stride-1
// convolutions skip the lowering and depthwise ones (groups == C) run a
// direct loop.
func Conv2d(x, w, b *Tensor, opt Conv2dOptions) *Tensor {
	return unbatched(x, 4, func(x *Tensor) *Tensor {
		nnFloat("Conv2d", x, w, b)
		opt := opt.withDefaults("Conv2d")
		g := conv2dGeom("Conv2d", x.shape, w.shape, opt)
		checkBias("Conv2d", b, w.shape[0])
		if y := cpuConvForward(x, w, b, g, opt.Groups, false); y != nil {
			return y
		}
		y := conv2dForward(x, w, g, opt.Groups)
		if b != nil {
			addChannelBias(y, b)
		}
		return y
	})
}

// cpuDense returns t's elements as a dense slice of its CPU buffer (copying
// t when it is not contiguous), or ok = false when t is not on the CPU.
func cpuDense[T float32 | float64](t *Tensor) (data []T, ok bool) {
	if _, cpu := t.st.backend.(cpuBackend); !cpu {
		return nil, false
	}
	t = t.Contiguous()
	d, ok := t.st.buf.(*cpuBuffer).data.([]T)
	if !ok {
		return nil, false
	}
	return d[t.offset : t.offset+t.Numel()], true
}

// convOperands returns the dense CPU slices of ts (nil tensors give nil
// slices) and whether all of them are CPU tensors of element type T.
func convOperands[T float32 | float64](ts ...*Tensor) ([][]T, bool) {
	out := make([][]T, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		d, ok := cpuDense[T](t)
		if !ok {
			return nil, false
		}
		out[i] = d
	}
	return out, true
}

// depthwise reports whether a convolution reads one input channel per
// output channel (groups == C).
func depthwise(g ConvGeom, groups int) bool { return groups == g.C }

// depthwiseF32 reports whether a float32 convolution runs the depthwise
// loop: a single input channel is a dense convolution too, and the
// lowering into the packed matrix product is many times faster for it
// (the loop is scalar; a 1-to-16-channel 28×28 layer ran at about 1 GMAC/s).
func depthwiseF32(g ConvGeom, groups int) bool { return depthwise(g, groups) && g.C > 1 }

// convEmpty reports whether a convolution has no work: an empty batch,
// output, kernel or channel count.
func convEmpty(g ConvGeom, o int) bool {
	return g.N*g.OH*g.OW == 0 || o == 0 || g.C*g.KH*g.KW == 0
}

// cpuConvForward computes the convolution of x with w plus the optional
// bias b with the CPU kernels (float32 through the packed GEMM, depthwise
// ones of either float type by direct loops), or returns nil when they do
// not apply. With relu the kernels clamp the fresh output in their own pass
// (the depthwise loop, or each finished tile of the matrix product). Every
// kernel here writes each output element, so the output is not zero-filled.
func cpuConvForward(x, w, b *Tensor, g ConvGeom, groups int, relu bool) *Tensor {
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
		y := emptyOut(x.st.backend, x.dtype, []int{g.N, o, g.OH, g.OW})
		dst := y.st.buf.(*cpuBuffer).data.([]float32)
		if depthwiseF32(g, groups) {
			cpu.DepthwiseForward(dst, ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, threads, relu)
		} else {
			cpu.ConvForwardF32(dst, ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, groups, threads, relu)
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
		y := emptyOut(x.st.backend, x.dtype, []int{g.N, o, g.OH, g.OW})
		cpu.DepthwiseForward(y.st.buf.(*cpuBuffer).data.([]float64), ops[0], ops[1], ops[2], cpu.ConvGeom(g), o, threads, relu)
		return y
	}
	return nil
}

// cpuConvInputGrad is conv2dInputGrad with the CPU kernels, or nil when
// they do not apply.
func cpuConvInputGrad(grad, w *Tensor, g ConvGeom, groups int) *Tensor {
	o := w.shape[0]
	if convEmpty(g, o) || (grad.dtype != Float32 && !depthwise(g, groups)) {
		return nil
	}
	threads := NumThreads()
	shape := []int{g.N, g.C, g.H, g.W}
	if grad.dtype == Float64 {
		ops, ok := convOperands[float64](grad, w)
		if !ok {
			return nil
		}
		dx := empty(grad.st.backend, grad.dtype, shape)
		cpu.DepthwiseBackwardInput(dx.st.buf.(*cpuBuffer).data.([]float64), ops[0], ops[1], cpu.ConvGeom(g), o, threads)
		return dx
	}
	ops, ok := convOperands[float32](grad, w)
	if !ok {
		return nil
	}
	dx := empty(grad.st.backend, grad.dtype, shape)
	dst := dx.st.buf.(*cpuBuffer).data.([]float32)
	if depthwiseF32(g, groups) {
		cpu.DepthwiseBackwardInput(dst, ops[0], ops[1], cpu.ConvGeom(g), o, threads)
	} else {
		cpu.ConvBackwardInputF32(dst, ops[0], ops[1], cpu.ConvGeom(g), o, groups, threads)
	}
	return dx
}

// cpuConvWeightGrad is conv2dWeightGrad with the CPU kernels, or nil when
// they do not apply.
func cpuConvWeightGrad(x, grad *Tensor, g ConvGeom, ws []int, groups int) *Tensor {
	o := ws[0]
	if convEmpty(g, o) || (x.dtype != Float32 && !depthwise(g, groups)) {
		return nil
	}
	threads := NumThreads()
	if x.dtype == Float64 {
		ops, ok := convOperands[float64](x, grad)
		if !ok {
			return nil
		}
		dw := empty(x.st.backend, x.dtype, ws)
		cpu.DepthwiseBackwardWeight(dw.st.buf.(*cpuBuffer).data.([]float64), ops[0], ops[1], cpu.ConvGeom(g), o, threads)
		return dw
	}
	ops, ok := convOperands[float32](x, grad)
	if !ok {
		return nil
	}
	dw := empty(x.st.backend, x.dtype, ws)
	dst := dw.st.buf.(*cpuBuffer).data.([]float32)
	if depthwiseF32(g, groups) {
		cpu.DepthwiseBackwardWeight(dst, ops[0], ops[1], cpu.ConvGeom(g), o, threads)
	} else {
		cpu.ConvBackwardWeightF32(dst, ops[0], ops[1], cpu.ConvGeom(g), o, groups, threads)
	}
	return dw
}

// conv2dForward computes the bias-free convolution for a validated geometry.
func conv2dForward(x, w *Tensor, g ConvGeom, groups int) *Tensor {
	o := w.shape[0]
	l := g.OH * g.OW
	if g.N == 0 || l == 0 || o == 0 {
		return empty(x.st.backend, x.dtype, []int{g.N, o, g.OH, g.OW})
	}
	if y := cpuConvForward(x, w, nil, g, groups, false); y != nil {
		return y
	}
	if y := backendConvForward(x, w, g, groups); y != nil {
		return y
	}
	ck := g.C / groups * g.KH * g.KW
	col := im2col(x, g).View(groups, ck, g.N*l)
	wm := w.Reshape(groups, o/groups, ck)
	out := wm.MatMul(col).View(o, g.N*l) // [groups, O/groups, N*L] = [O, N*L]
	return batchFirst(out, g.N, l).View(g.N, o, g.OH, g.OW)
}

// Conv2dBackwardInput returns the gradient of a 2-d convolution with respect
// to its input: grad ([N, O, OH, OW]) correlated backwards with w
// ([O, C/groups, KH, KW]) into an [N, C, inH, inW] tensor. inH and inW are
// the convolution's input size, which its output size alone does not fix
// when the stride is above one. This is also the transposed convolution.
func Conv2dBackwardInput(grad, w *Tensor, inH, inW int, opt Conv2dOptions) *Tensor {
	nnFloat("Conv2dBackwardInput", grad, w)
	opt = opt.withDefaults("Conv2dBackwardInput")
	if grad.Dim() != 4 || w.Dim() != 4 || grad.shape[1] != w.shape[0] {
		panic(fmt.Sprintf("tensor.Conv2dBackwardInput: want grad [N, O, OH, OW] and weight [O, C/groups, KH, KW] with equal O, got %v and %v", grad.shape, w.shape))
	}
	xs := []int{grad.shape[0], w.shape[1] * opt.Groups, inH, inW}
	g := conv2dGeom("Conv2dBackwardInput", xs, w.shape, opt)
	if g.OH != grad.shape[2] || g.OW != grad.shape[3] {
		panic(fmt.Sprintf("tensor.Conv2dBackwardInput: an input of %dx%d gives a %dx%d output, but grad has shape %v", inH, inW, g.OH, g.OW, grad.shape))
	}
	return conv2dInputGrad(grad, w, g, opt.Groups)
}

// conv2dInputGrad computes the input gradient for a geometry whose OH, OW
// match grad (not re-derived from H, W, so transposed convolutions with
// output padding work too).
func conv2dInputGrad(grad, w *Tensor, g ConvGeom, groups int) *Tensor {
	o := w.shape[0]
	ck := g.C / groups * g.KH * g.KW
	if g.N*g.OH*g.OW == 0 || o == 0 || ck == 0 {
		return empty(grad.st.backend, grad.dtype, []int{g.N, g.C, g.H, g.W})
	}
	if dx := cpuConvInputGrad(grad, w, g, groups); dx != nil {
		return dx
	}
	if dx := backendConvInputGrad(grad, w, g, groups); dx != nil {
		return dx
	}
	gm := channelsFirst(grad).View(groups, o/groups, g.N*g.OH*g.OW)
	wm := w.Reshape(groups, o/groups, ck)
	col := wm.Transpose(1, 2).MatMul(gm) // [groups, ck, N*L] = [C*KH*KW, N*L]
	return col2im(col, g)
}

// Conv2dBackwardWeight returns the gradient of a 2-d convolution with
// respect to its weight: the correlation of input x ([N, C, H, W]) with
// grad ([N, O, OH, OW]), shaped [O, C/groups, kh, kw].
func Conv2dBackwardWeight(x, grad *Tensor, kh, kw int, opt Conv2dOptions) *Tensor {
	nnFloat("Conv2dBackwardWeight", x, grad)
	opt = opt.withDefaults("Conv2dBackwardWeight")
	if x.Dim() != 4 || grad.Dim() != 4 || x.shape[0] != grad.shape[0] {
		panic(fmt.Sprintf("tensor.Conv2dBackwardWeight: want input [N, C, H, W] and grad [N, O, OH, OW] with equal N, got %v and %v", x.shape, grad.shape))
	}
	if x.shape[1]%opt.Groups != 0 {
		panic(fmt.Sprintf("tensor.Conv2dBackwardWeight: input %v has %d channels, not divisible by groups=%d", x.shape, x.shape[1], opt.Groups))
	}
	ws := []int{grad.shape[1], x.shape[1] / opt.Groups, kh, kw}
	g := conv2dGeom("Conv2dBackwardWeight", x.shape, ws, opt)
	if g.OH != grad.shape[2] || g.OW != grad.shape[3] {
		panic(fmt.Sprintf("tensor.Conv2dBackwardWeight: input %v with a %dx%d kernel gives a %dx%d output, but grad has shape %v", x.shape, kh, kw, g.OH, g.OW, grad.shape))
	}
	return conv2dWeightGrad(x, grad, g, ws, opt.Groups)
}

// conv2dWeightGrad computes the weight gradient for a geometry whose OH, OW
// match grad.
func conv2dWeightGrad(x, grad *Tensor, g ConvGeom, ws []int, groups int) *Tensor {
	o := ws[0]
	ck := g.C / groups * g.KH * g.KW
	nl := g.N * g.OH * g.OW
	if nl == 0 || o == 0 || ck == 0 {
		return empty(x.st.backend, x.dtype, ws)
	}
	if dw := cpuConvWeightGrad(x, grad, g, ws, groups); dw != nil {
		return dw
	}
	if dw := backendConvWeightGrad(x, grad, g, ws, groups); dw != nil {
		return dw
	}
	col := im2col(x, g).View(groups, ck, nl)
	gm := channelsFirst(grad).View(groups, o/groups, nl)
	return gm.MatMul(col.Transpose(1, 2)).View(ws...) // [groups, O/groups, ck]
}

// Conv1d returns the 1-d cross-correlation of x ([N, C, L], or unbatched
// [C, L]) with weight w ([O, C/groups, K]) plus the optional bias b ([O]),
// as torch.nn.functional.conv1d. It runs Conv2d on height-1 images.
func Conv1d(x, w, b *Tensor, opt Conv1dOptions) *Tensor {
	return unbatched(x, 3, func(x *Tensor) *Tensor {
		if x.Dim() != 3 || w.Dim() != 3 {
			panic(fmt.Sprintf("tensor.Conv1d: want input [N, C, L] and weight [out, in/groups, k], got shapes %v and %v", x.shape, w.shape))
		}
		return Conv2d(x.Unsqueeze(2), w.Unsqueeze(2), b, opt.To2d()).Squeeze(2)
	})
}

// convTransposeGeom validates a transposed convolution of x ([N, Cin, H, W])
// by w ([Cin, Cout/groups, KH, KW]) and returns the geometry of the
// convolution it transposes (whose input is the [N, Cout, OH, OW] output).
func convTransposeGeom(op string, xs, ws []int, o ConvTranspose2dOptions) ConvGeom {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("tensor.%s: want input [N, Cin, H, W] and weight [Cin, Cout/groups, kh, kw], got shapes %v and %v", op, xs, ws))
	}
	c := o.Conv().withDefaults(op)
	for i := range 2 {
		pad := o.OutputPadding[i]
		if pad < 0 || (pad >= c.Stride[i] && pad >= c.Dilation[i]) {
			panic(fmt.Sprintf("tensor.%s: output padding %v must be smaller than the stride %v or the dilation %v", op, o.OutputPadding, c.Stride, c.Dilation))
		}
	}
	if xs[1] != ws[0] {
		panic(fmt.Sprintf("tensor.%s: input %v has %d channels but weight %v expects %d (weight axis 0 is in channels)", op, xs, xs[1], ws, ws[0]))
	}
	if ws[0]%c.Groups != 0 {
		panic(fmt.Sprintf("tensor.%s: weight %v has %d input channels, not divisible by groups=%d", op, ws, ws[0], c.Groups))
	}
	g := ConvGeom{
		N: xs[0], C: ws[1] * c.Groups, KH: ws[2], KW: ws[3],
		StrideH: c.Stride[0], StrideW: c.Stride[1], PadH: c.Padding[0], PadW: c.Padding[1],
		DilationH: c.Dilation[0], DilationW: c.Dilation[1], OH: xs[2], OW: xs[3],
	}
	g.H = (xs[2]-1)*g.StrideH - 2*g.PadH + g.DilationH*(g.KH-1) + o.OutputPadding[0] + 1
	g.W = (xs[3]-1)*g.StrideW - 2*g.PadW + g.DilationW*(g.KW-1) + o.OutputPadding[1] + 1
	if g.H <= 0 || g.W <= 0 {
		panic(fmt.Sprintf("tensor.%s: input %v with weight %v and options %+v gives an empty %dx%d output", op, xs, ws, o, g.H, g.W))
	}
	return g
}

// ConvTranspose2d returns the 2-d transposed convolution of x
// ([N, Cin, H, W], or unbatched [Cin, H, W]) with weight w
// ([Cin, Cout/groups, KH, KW]) plus the optional bias b ([Cout]), as
// torch.nn.functional.conv_transpose2d. The output is [N, Cout, OH, OW] with
// OH = (H-1)*stride - 2*padding + dilation*(KH-1) + outputPadding + 1. It is
// the input gradient of the convolution with the same options.
func ConvTranspose2d(x, w, b *Tensor, opt ConvTranspose2dOptions) *Tensor {
	return unbatched(x, 4, func(x *Tensor) *Tensor {
		nnFloat("ConvTranspose2d", x, w, b)
		g := convTransposeGeom("ConvTranspose2d", x.shape, w.shape, opt)
		checkBias("ConvTranspose2d", b, g.C)
		y := conv2dInputGrad(x, w, g, opt.Conv().withDefaults("ConvTranspose2d").Groups)
		if b != nil {
			addChannelBias(y, b)
		}
		return y
	})
}
