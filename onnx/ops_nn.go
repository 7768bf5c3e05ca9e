package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Neural-network operators: matrix products, convolutions, pooling,
// normalization, softmax and dropout (inference). Spatial operators run on
// 1-d and 2-d inputs ([N, C, L] or [N, C, H, W]); 1-d inputs are lifted to
// height-1 images.

func nnOps() opTable {
	return opTable{
		"MatMul":             {{since: 1, impl: opMatMul}},
		"Gemm":               {{since: 1, impl: opGemm}},
		"Conv":               {{since: 1, impl: opConv}},
		"ConvTranspose":      {{since: 1, impl: opConvTranspose}},
		"MaxPool":            {{since: 1, impl: opMaxPool}},
		"AveragePool":        {{since: 1, impl: opAveragePool}},
		"GlobalAveragePool":  {{since: 1, impl: globalPool((*tensor.Tensor).Mean)}},
		"GlobalMaxPool":      {{since: 1, impl: globalPool((*tensor.Tensor).Max)}},
		"BatchNormalization": {{since: 1, impl: opBatchNorm}},
		"LayerNormalization": {{since: 17, impl: opLayerNorm}},
		"Softmax":            {{since: 1, until: 12, impl: softmax2d(false)}, {since: 13, impl: softmaxAxis(false)}},
		"LogSoftmax":         {{since: 1, until: 12, impl: softmax2d(true)}, {since: 13, impl: softmaxAxis(true)}},
		"Dropout":            {{since: 1, impl: opDropout}},
	}
}

func opMatMul(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if a.DType() != b.DType() {
		return nil, fmt.Errorf("onnx: %v: operand types %s and %s differ", n, a.DType(), b.DType())
	}
	if a.Dim() >= 2 && b.Dim() >= 2 {
		// The output is the broadcast of the batch axes times [m, n].
		as, bs := a.Shape(), b.Shape()
		shapeA := append(as[:len(as)-2:len(as)-2], as[len(as)-2], bs[len(bs)-1])
		shapeB := append(bs[:len(bs)-2:len(bs)-2], 1, 1)
		if err := n.checkShapes(a.DType(), shapeA, shapeB); err != nil {
			return nil, err
		}
	}
	out, err := n.matMulChunked(a, b)
	if dt := a.DType(); err == nil && (dt == tensor.Float16 || dt == tensor.BFloat16) {
		out[0] = out[0].To(dt) // storage dtypes multiply in float32
	}
	return out, err
}

// matMulChunked is a.MatMul(b) split along a's first axis (rows of a
// matrix, or the batch of a stack of matrices, b's batch along with it
// when it has the same one) so that a long product checks the run's
// context between chunks.
func (n *node) matMulChunked(a, b *tensor.Tensor) ([]*tensor.Tensor, error) {
	as, bs := a.Shape(), b.Shape()
	if a.Dim() < 2 || b.Dim() < 2 || (b.Dim() > 2 && (a.Dim() != b.Dim() || as[0] != bs[0])) {
		return one(a.MatMul(b))
	}
	// Multiply-adds per slice of a's first axis.
	work := float64(a.Numel()/max(as[0], 1)) * float64(bs[len(bs)-1])
	y, err := n.inChunks(as[0], work, 0, func(lo, hi int) *tensor.Tensor {
		bb := b
		if b.Dim() > 2 {
			bb = b.Narrow(0, lo, hi-lo)
		}
		return a.Narrow(0, lo, hi-lo).MatMul(bb)
	})
	if err != nil {
		return nil, err
	}
	return one(y)
}

func opGemm(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if a.Dim() != 2 || b.Dim() != 2 {
		return nil, fmt.Errorf("onnx: %v: A %v and B %v must be matrices", n, a.Shape(), b.Shape())
	}
	if n.attrInt("transA", 0) == 1 {
		a = a.T()
	}
	if n.attrInt("transB", 0) == 1 {
		b = b.T()
	}
	if a.Shape()[1] != b.Shape()[0] {
		return nil, fmt.Errorf("onnx: %v: inner dimensions of A %v and B %v differ", n, a.Shape(), b.Shape())
	}
	ys, err := n.matMulChunked(a, b)
	if err != nil {
		return nil, err
	}
	y := ys[0]
	if alpha := n.attrFloat("alpha", 1); alpha != 1 {
		y = y.MulScalar(alpha)
	}
	if c := arg(in, 2); c != nil {
		if beta := n.attrFloat("beta", 1); beta != 1 {
			c = c.MulScalar(beta)
		}
		y = y.Add(c)
	}
	return one(y.To(a.DType()))
}

// spatial holds the per-axis parameters of a convolution or pooling, with
// explicit begin/end pads.
type spatial struct {
	kernel, stride, dilation, padBegin, padEnd []int
}

// intsOr returns attribute name, or k copies of def when unset.
func (n *node) intsOr(name string, k, def int) ([]int, error) {
	v := toInts(n.attrInts(name))
	if v == nil {
		v = make([]int, k)
		for i := range v {
			v[i] = def
		}
	}
	if len(v) != k {
		return nil, fmt.Errorf("onnx: %v: %s %v must have %d entries", n, name, v, k)
	}
	return v, nil
}

// spatialParams reads strides, dilations, pads and auto_pad for input
// spatial sizes in and kernel sizes kernel.
func (n *node) spatialParams(in, kernel []int) (*spatial, error) {
	k := len(in)
	p := &spatial{kernel: kernel}
	var err error
	if p.stride, err = n.intsOr("strides", k, 1); err != nil {
		return nil, err
	}
	if p.dilation, err = n.intsOr("dilations", k, 1); err != nil {
		return nil, err
	}
	pads, err := n.intsOr("pads", 2*k, 0)
	if err != nil {
		return nil, err
	}
	p.padBegin, p.padEnd = pads[:k], pads[k:]
	for i := range k {
		if p.stride[i] <= 0 || p.dilation[i] <= 0 || kernel[i] <= 0 || p.padBegin[i] < 0 || p.padEnd[i] < 0 {
			return nil, fmt.Errorf("onnx: %v: kernel %v, strides %v, dilations %v must be positive and pads %v not negative", n, kernel, p.stride, p.dilation, pads)
		}
	}
	switch ap := n.attrString("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
	case "VALID":
		for i := range k {
			p.padBegin[i], p.padEnd[i] = 0, 0
		}
	case "SAME_UPPER", "SAME_LOWER":
		for i := range k {
			out := (in[i] + p.stride[i] - 1) / p.stride[i]
			total := max(0, (out-1)*p.stride[i]+(kernel[i]-1)*p.dilation[i]+1-in[i])
			small, big := total/2, total-total/2
			if ap == "SAME_UPPER" {
				p.padBegin[i], p.padEnd[i] = small, big
			} else {
				p.padBegin[i], p.padEnd[i] = big, small
			}
		}
	default:
		return nil, fmt.Errorf("onnx: %v: unknown auto_pad %q", n, ap)
	}
	return p, nil
}

// checkSizes bounds, before anything is computed, the padded input
// [N, C, ...], the output [N, outC, ...] and, when cols > 0, the im2col
// matrix [cols*kernel volume, N*output volume] of a convolution or pooling
// over input shape xs.
func (n *node) checkSizes(xs []int, outC, cols int, p *spatial, dt tensor.DType) error {
	padded := slices.Clone(xs)
	out := slices.Clone(xs)
	out[1] = outC
	for i := range p.kernel {
		padded[2+i] = xs[2+i] + p.padBegin[i] + p.padEnd[i]
		out[2+i] = max(0, (padded[2+i]-p.dilation[i]*(p.kernel[i]-1)-1)/p.stride[i]+1)
	}
	if err := n.checkShape(padded, dt); err != nil {
		return err
	}
	if err := n.checkShape(out, dt); err != nil {
		return err
	}
	if cols > 0 {
		return n.checkShape([]int{cols * prod(p.kernel), xs[0] * prod(out[2:])}, dt)
	}
	return nil
}

// symmetric reports whether begin and end pads agree on every axis.
func (p *spatial) symmetric() bool {
	for i := range p.padBegin {
		if p.padBegin[i] != p.padEnd[i] {
			return false
		}
	}
	return true
}

// padInput pads the spatial axes of x by the begin/end pads with value.
func (p *spatial) padInput(x *tensor.Tensor, value float64) *tensor.Tensor {
	var tp []int
	for i := len(p.padBegin) - 1; i >= 0; i-- {
		tp = append(tp, p.padBegin[i], p.padEnd[i])
	}
	return x.Pad(tp, tensor.PadConstant, value)
}

// lift turns a 1-d spatial problem into a 2-d one on a height-1 image;
// 2-d problems pass through. Other ranks are refused.
func (n *node) lift(x *tensor.Tensor) (*tensor.Tensor, bool, error) {
	switch x.Dim() {
	case 3:
		return x.Unsqueeze(2), true, nil
	case 4:
		return x, false, nil
	}
	return nil, false, fmt.Errorf("onnx: %v: input of shape %v: only 1-d and 2-d spatial inputs ([N, C, L] or [N, C, H, W]) are supported", n, x.Shape())
}

// lift2 prepends the height-axis values of a lifted 1-d problem.
func lift2(v []int, def int) [2]int {
	if len(v) == 1 {
		return [2]int{def, v[0]}
	}
	return [2]int{v[0], v[1]}
}

func opConv(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return conv(n, in, convEpilogue{}, nil)
}

// convEpilogue is what a Conv node fused by optimize.go applies to the
// convolution: adding its fourth input (the residual of an Add), then a
// ReLU.
type convEpilogue struct{ residual, relu bool }

// convImpl returns the implementation of a Conv node with epilogue ep and
// the weight packed at load time (nil when it is not a packed constant).
func convImpl(ep convEpilogue, packed *tensor.PackedConv2dWeight) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return conv(n, in, ep, packed)
	}
}

// conv runs a Conv node followed by the epilogue ep (the fused Conv+Add and
// Conv+Relu of optimize.go). packed, when not nil, is the node's constant
// weight prepared at load time (optimize.go); it is used while the weight
// input is still that tensor.
func conv(n *node, in []*tensor.Tensor, ep convEpilogue, packed *tensor.PackedConv2dWeight) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if dt := x.DType(); dt == tensor.Float16 || dt == tensor.BFloat16 {
		// Storage dtypes convolve in float32 (the fused epilogues too) and
		// round back once.
		out, err := halfLift(func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			return conv(n, in, ep, nil)
		})(n, in)
		return out, err
	}
	w, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	b := arg(in, 2)
	var res *tensor.Tensor
	if ep.residual {
		if res, err = n.need(in, 3); err != nil {
			return nil, err
		}
	}
	// finish applies the epilogue to a plain convolution's output.
	finish := func(y *tensor.Tensor) ([]*tensor.Tensor, error) {
		if res != nil {
			y = y.Add(res)
		}
		if ep.relu {
			y = y.Relu()
		}
		return one(y)
	}
	xs, ws := x.Shape(), w.Shape()
	if len(ws) != len(xs) || len(xs) < 3 {
		return nil, fmt.Errorf("onnx: %v: input %v and weight %v ranks differ", n, xs, ws)
	}
	p, err := n.spatialParams(xs[2:], ws[2:])
	if err != nil {
		return nil, err
	}
	if err := n.checkSizes(xs, ws[0], ws[1], p, x.DType()); err != nil {
		return nil, err
	}
	if x.Dim() == 5 {
		y, err := n.conv3d(x, w, b, p)
		if err != nil {
			return nil, err
		}
		return finish(y)
	}
	x4, lifted, err := n.lift(x)
	if err != nil {
		return nil, err
	}
	w4 := w
	if lifted {
		w4 = w.Unsqueeze(2)
	}
	pad := p.padBegin
	if !p.symmetric() {
		x4 = p.padInput(x4, 0)
		pad = make([]int, len(pad))
	}
	opt := tensor.Conv2dOptions{
		Stride: lift2(p.stride, 1), Padding: lift2(pad, 0), Dilation: lift2(p.dilation, 1),
		Groups: int(n.attrInt("group", 1)),
	}
	fast := packed != nil && !lifted && packed.Weight() == w && packed.Groups() == opt.Groups
	if fast && res != nil {
		g := tensor.Conv2dGeometry(x4.Shape(), w4.Shape(), opt)
		fast = res.DType() == x4.DType() && slices.Equal(res.Shape(), []int{g.N, ws[0], g.OH, g.OW})
	}
	// Long convolutions run in chunks of the batch (cancel.go).
	g := tensor.Conv2dGeometry(x4.Shape(), w4.Shape(), opt)
	work := float64(g.OH*g.OW) * float64(ws[0]) * float64(w4.Numel()/max(ws[0], 1))
	batch := func(t *tensor.Tensor, lo, hi int) *tensor.Tensor {
		if t == nil || (lo == 0 && hi == g.N) {
			return t
		}
		return t.Narrow(0, lo, hi-lo)
	}
	if fast {
		y, err := n.inChunks(g.N, work, 0, func(lo, hi int) *tensor.Tensor {
			return tensor.Conv2dPacked(batch(x4, lo, hi), packed, b, opt, batch(res, lo, hi), ep.relu)
		})
		if err != nil {
			return nil, err
		}
		return one(y)
	}
	relu := ep.relu && res == nil
	y, err := n.inChunks(g.N, work, 0, func(lo, hi int) *tensor.Tensor {
		if relu {
			return tensor.Conv2dRelu(batch(x4, lo, hi), w4, b, opt)
		}
		return tensor.Conv2d(batch(x4, lo, hi), w4, b, opt)
	})
	if err != nil {
		return nil, err
	}
	if lifted {
		y = y.Squeeze(2)
	}
	if relu {
		return one(y)
	}
	return finish(y)
}

func opConvTranspose(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	w, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	b := arg(in, 2)
	xs, ws := x.Shape(), w.Shape()
	if len(ws) != len(xs) || len(xs) < 3 {
		return nil, fmt.Errorf("onnx: %v: input %v and weight %v ranks differ", n, xs, ws)
	}
	k := len(xs) - 2
	stride, err := n.intsOr("strides", k, 1)
	if err != nil {
		return nil, err
	}
	dil, err := n.intsOr("dilations", k, 1)
	if err != nil {
		return nil, err
	}
	outPad, err := n.intsOr("output_padding", k, 0)
	if err != nil {
		return nil, err
	}
	pads, err := n.intsOr("pads", 2*k, 0)
	if err != nil {
		return nil, err
	}
	outShape := toInts(n.attrInts("output_shape"))
	if len(outShape) > k {
		outShape = outShape[len(outShape)-k:]
	}
	autoPad := n.attrString("auto_pad", "NOTSET")
	fullShape := []int{xs[0], ws[1] * int(n.attrInt("group", 1))}
	for i := range k {
		if stride[i] <= 0 || dil[i] <= 0 {
			return nil, fmt.Errorf("onnx: %v: strides %v and dilations %v must be positive", n, stride, dil)
		}
		fullShape = append(fullShape, (xs[2+i]-1)*stride[i]+dil[i]*(ws[2+i]-1)+1+max(0, outPad[i]))
	}
	if err := n.checkShape(fullShape, x.DType()); err != nil {
		return nil, err
	}
	if err := n.checkShape([]int{fullShape[1] * prod(ws[2:]), xs[0] * prod(xs[2:])}, x.DType()); err != nil {
		return nil, err
	}
	if outShape != nil {
		if err := n.checkShape(append(fullShape[:2:2], outShape...), x.DType()); err != nil {
			return nil, err
		}
	}
	var full *tensor.Tensor
	if x.Dim() == 5 {
		full = convTranspose3dFull(x, w, stride, dil, int(n.attrInt("group", 1)))
	} else {
		x4, lifted, err := n.lift(x)
		if err != nil {
			return nil, err
		}
		w4 := w
		if lifted {
			w4 = w.Unsqueeze(2)
		}
		opt := tensor.ConvTranspose2dOptions{Stride: lift2(stride, 1), Dilation: lift2(dil, 1), Groups: int(n.attrInt("group", 1))}
		// Long transposed convolutions run in chunks of the batch
		// (cancel.go): per image, every input pixel meets the whole weight.
		batch := x4.Shape()[0]
		work := float64(x4.Numel()/max(batch, 1)) * float64(w4.Numel()/max(w4.Shape()[0], 1))
		full, err = n.inChunks(batch, work, 0, func(lo, hi int) *tensor.Tensor {
			return tensor.ConvTranspose2d(x4.Narrow(0, lo, hi-lo), w4, nil, opt)
		})
		if err != nil {
			return nil, err
		}
		if lifted {
			full = full.Squeeze(2)
		}
	}
	fs := full.Shape()
	var tp []int
	for i := k - 1; i >= 0; i-- {
		f := fs[2+i]
		var begin, out int
		switch {
		case outShape != nil || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			out = xs[2+i] * stride[i]
			if outShape != nil {
				out = outShape[i]
			}
			total := f + outPad[i] - out
			half := total / 2 // floor division, as the ONNX reference computes it
			if total < 0 && total%2 != 0 {
				half--
			}
			if autoPad == "SAME_UPPER" {
				begin = half
			} else {
				begin = total - half
			}
		case autoPad == "VALID":
			out = f + outPad[i]
		default:
			begin = pads[i]
			out = f + outPad[i] - pads[i] - pads[k+i]
		}
		if out < 0 {
			return nil, fmt.Errorf("onnx: %v: negative output size", n)
		}
		tp = append(tp, -begin, out+begin-f)
	}
	y := full.Pad(tp, tensor.PadConstant, 0)
	if b != nil {
		shape := make([]int, y.Dim())
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = b.Numel()
		y = y.Add(b.Reshape(shape...))
	}
	return one(y)
}

// poolSetup reads a pooling node's parameters for x and lifts 1-d inputs.
func (n *node) poolSetup(x *tensor.Tensor) (*spatial, *tensor.Tensor, bool, error) {
	k := x.Dim() - 2
	if k < 1 {
		return nil, nil, false, fmt.Errorf("onnx: %v: input %v has no spatial axes", n, x.Shape())
	}
	kernel := toInts(n.attrInts("kernel_shape"))
	if len(kernel) != k {
		return nil, nil, false, fmt.Errorf("onnx: %v: kernel_shape %v must have %d entries", n, kernel, k)
	}
	p, err := n.spatialParams(x.Shape()[2:], kernel)
	if err != nil {
		return nil, nil, false, err
	}
	if err := n.checkSizes(x.Shape(), x.Shape()[1], 0, p, x.DType()); err != nil {
		return nil, nil, false, err
	}
	if x.Dim() == 5 {
		return p, x, false, nil
	}
	x4, lifted, err := n.lift(x)
	return p, x4, lifted, err
}

// poolOptions returns the tensor options; direct reports whether the
// pads fit tensor's symmetric padding (else the input must be pre-padded).
func (p *spatial) poolOptions(ceil bool) (tensor.Pool2dOptions, bool) {
	direct := p.symmetric()
	for i := range p.kernel {
		if p.padBegin[i] > p.kernel[i]/2 {
			direct = false
		}
	}
	opt := tensor.Pool2dOptions{Kernel: lift2(p.kernel, 1), Stride: lift2(p.stride, 1), Dilation: lift2(p.dilation, 1), CeilMode: ceil}
	if direct {
		opt.Padding = lift2(p.padBegin, 0)
	}
	return opt, direct
}

func opMaxPool(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if dt := x.DType(); dt == tensor.Uint8 || dt == tensor.Int8 || dt == tensor.Int16 || dt == tensor.Uint16 {
		// The pooling kernels are float; these values are exact in float32
		// and a maximum is one of them, so the round trip is exact.
		outs, err := opMaxPool(n, []*tensor.Tensor{x.To(tensor.Float32)})
		if err == nil {
			outs[0] = outs[0].To(dt)
		}
		return outs, err
	}
	p, x4, lifted, err := n.poolSetup(x)
	if err != nil {
		return nil, err
	}
	if x.Dim() == 5 {
		if len(n.outputs) > 1 && n.outputs[1] != "" {
			return nil, fmt.Errorf("onnx: %v: the Indices output is not supported for 3-d pooling", n)
		}
		y, err := n.pool3d(x, p, true)
		if err != nil {
			return nil, err
		}
		return one(y)
	}
	opt, direct := p.poolOptions(n.attrInt("ceil_mode", 0) == 1)
	if !direct {
		x4 = p.padInput(x4, math.Inf(-1))
	}
	wantIdx := len(n.outputs) > 1 && n.outputs[1] != ""
	var y, idx *tensor.Tensor
	if wantIdx {
		y, idx = tensor.MaxPool2d(x4, opt)
	} else {
		y = tensor.MaxPool2dValues(x4, opt)
	}
	outs := []*tensor.Tensor{y, nil}
	if wantIdx {
		if !direct {
			return nil, fmt.Errorf("onnx: %v: the Indices output needs pads at most half the kernel and equal on both sides", n)
		}
		xs := x4.Shape()
		h, w := xs[2], xs[3]
		colMajor := n.attrInt("storage_order", 0) == 1
		v := idx.Int64s()
		per := int64(idx.Numel() / max(1, xs[0]*xs[1]))
		for i, pos := range v {
			plane := int64(i) / max(per, 1)
			if colMajor {
				pos = (pos%int64(w))*int64(h) + pos/int64(w)
			}
			v[i] = plane*int64(h*w) + pos
		}
		outs[1] = tensor.FromSlice(v, idx.Shape()...)
	}
	if lifted {
		for i, t := range outs {
			if t != nil {
				outs[i] = t.Squeeze(2)
			}
		}
	}
	return outs, nil
}

func opAveragePool(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	p, x4, lifted, err := n.poolSetup(x)
	if err != nil {
		return nil, err
	}
	for _, d := range p.dilation {
		if d != 1 {
			y, err := avgPoolDilated(n, x, p, n.attrInt("ceil_mode", 0) == 1, n.attrInt("count_include_pad", 0) == 1)
			if err != nil {
				return nil, err
			}
			return one(y)
		}
	}
	if x.Dim() == 5 {
		y, err := n.pool3d(x, p, false)
		if err != nil {
			return nil, err
		}
		return one(y)
	}
	includePad := n.attrInt("count_include_pad", 0) == 1
	opt, direct := p.poolOptions(n.attrInt("ceil_mode", 0) == 1)
	var y *tensor.Tensor
	if direct {
		opt.CountIncludePad = includePad
		y = tensor.AvgPool2d(x4, opt)
	} else {
		y = tensor.AvgPool2d(p.padInput(x4, 0), opt)
		if !includePad {
			mask := p.padInput(tensor.OnesLike(x4.Narrow(0, 0, 1).Narrow(1, 0, 1)), 0)
			y = y.Div(tensor.AvgPool2d(mask, opt))
		}
	}
	if lifted {
		y = y.Squeeze(2)
	}
	return one(y)
}

// globalPool reduces over every spatial axis, keeping them as size 1.
func globalPool(f func(t *tensor.Tensor, axes []int, keep bool) *tensor.Tensor) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		var axes []int
		for a := 2; a < x.Dim(); a++ {
			axes = append(axes, a)
		}
		if axes == nil {
			return one(x)
		}
		return one(f(x, axes, true))
	}
}

// channelShape is [1, C, 1, ...] for broadcasting per-channel vectors over
// an input of rank r.
func channelShape(c, r int) []int {
	s := make([]int, max(r, 2))
	for i := range s {
		s[i] = 1
	}
	s[1] = c
	return s
}

func opBatchNorm(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var v [5]*tensor.Tensor
	for i := range v {
		t, err := n.need(in, i)
		if err != nil {
			return nil, err
		}
		v[i] = t
	}
	x := v[0]
	if x.Dim() < 2 {
		return nil, fmt.Errorf("onnx: %v: input %v must have a channel axis", n, x.Shape())
	}
	cs := channelShape(x.Shape()[1], x.Dim())
	eps := n.attrFloat("epsilon", 1e-5)
	scale, bias := v[1].Reshape(cs...), v[2].Reshape(cs...)
	mean, variance := v[3].Reshape(cs...), v[4].Reshape(cs...)
	if n.attrInt("training_mode", 0) == 1 {
		// Normalize with the batch statistics (population variance) and
		// return the updated running statistics.
		axes := append([]int{0}, spatialAxes(x.Dim())...)
		bm := x.Mean(axes, true)
		d := x.Sub(bm)
		bv := d.Mul(d).Mean(axes, true)
		y := d.Mul(bv.AddScalar(eps).Rsqrt().Mul(scale)).Add(bias)
		mom := n.attrFloat("momentum", 0.9)
		rm := v[3].Affine(mom, 0).Add(bm.Reshape(-1).MulScalar(1 - mom))
		rv := v[4].Affine(mom, 0).Add(bv.Reshape(-1).MulScalar(1 - mom))
		return []*tensor.Tensor{y.To(x.DType()), rm.To(v[3].DType()), rv.To(v[4].DType())}, nil
	}
	y := x.Sub(mean).Mul(variance.AddScalar(eps).Rsqrt().Mul(scale)).Add(bias)
	return one(y.To(x.DType()))
}

func opLayerNorm(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	scale, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", -1)), x.Dim())
	if err != nil {
		return nil, err
	}
	var axes []int
	for a := axis; a < x.Dim(); a++ {
		axes = append(axes, a)
	}
	eps := n.attrFloat("epsilon", 1e-5)
	mean := x.Mean(axes, true)
	d := x.Sub(mean)
	inv := d.Mul(d).Mean(axes, true).AddScalar(eps).Rsqrt()
	y := d.Mul(inv).Mul(scale)
	if b := arg(in, 2); b != nil {
		y = y.Add(b)
	}
	return []*tensor.Tensor{y, mean, inv}, nil
}

// softmax2d is Softmax/LogSoftmax before opset 13: the input is coerced to
// a matrix at axis (default 1) and normalized over its rows.
func softmax2d(log bool) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		r := x.Dim()
		axis := int(n.attrInt("axis", 1))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis > r {
			return nil, fmt.Errorf("onnx: %v: axis %d out of range for rank %d", n, axis, r)
		}
		s := x.Shape()
		outer := 1
		for _, d := range s[:axis] {
			outer *= d
		}
		m := x.Reshape(outer, -1)
		if log {
			m = m.LogSoftmax(1)
		} else {
			m = m.Softmax(1)
		}
		return one(m.Reshape(s...))
	}
}

// softmaxAxis is Softmax/LogSoftmax from opset 13: along one axis
// (default -1).
func softmaxAxis(log bool) opImpl {
	return func(n *node, in []*tensor.Tensor) (out []*tensor.Tensor, err error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		axis, err := n.normAxis(int(n.attrInt("axis", -1)), x.Dim())
		if err != nil {
			return nil, err
		}
		if dt := x.DType(); dt == tensor.Float16 || dt == tensor.BFloat16 {
			// Storage dtypes normalize in float32 and round back once.
			x = x.To(tensor.Float32)
			defer func() {
				if len(out) == 1 && out[0] != nil {
					out[0] = out[0].To(dt)
				}
			}()
		}
		if log {
			return one(x.LogSoftmax(axis))
		}
		return one(x.Softmax(axis))
	}
}

// opDropout is inference-mode dropout: the identity, with an all-true mask.
func opDropout(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if t := arg(in, 2); t != nil && t.Reshape(-1).At(0) != 0 {
		ratio := 0.5
		if r := arg(in, 1); r != nil {
			ratio = r.Reshape(-1).At(0)
		}
		if ratio != 0 {
			return n.trainingDropout(x, ratio)
		}
	}
	return []*tensor.Tensor{x, tensor.Ones(x.Shape(), tensor.Bool)}, nil
}
