package autograd

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// More neural-network operations, each composed from recorded Var
// operations (views, IndexSelect, Pad, pooling, reductions), so their
// gradients of every order come from the parts.

// RMSNorm returns x / sqrt(mean(x², trailing dims) + eps) * weight, the
// root-mean-square normalization over the last dims axes of x. weight (the
// shape of those axes) may be nil.
func RMSNorm(x *Var, dims int, weight *Var, eps float64) *Var {
	if dims < 1 || dims > x.Dim() {
		panic(fmt.Sprintf("autograd.RMSNorm: cannot normalize the last %d axes of shape %v", dims, x.Shape()))
	}
	axes := make([]int, dims)
	for i := range axes {
		axes[i] = x.Dim() - dims + i
	}
	y := x.Mul(x.Square().Mean(axes, true).AddScalar(eps).Rsqrt())
	if weight != nil {
		y = y.Mul(weight)
	}
	return y
}

// LocalResponseNorm divides x ([N, C, ...], at least 3 axes) by
// (k + alpha/size · Σ x²)^beta, the sum running over size neighbouring
// channels (zero-padded: size/2 before, (size-1)/2 after), as
// torch.nn.functional.local_response_norm.
func LocalResponseNorm(x *Var, size int, alpha, beta, k float64) *Var {
	s := x.Shape()
	if len(s) < 3 || size < 1 {
		panic(fmt.Sprintf("autograd.LocalResponseNorm: want input [N, C, ...] with at least 3 axes and size >= 1, got shape %v and size %d", s, size))
	}
	sq := x.Square().Reshape(s[0], 1, s[1], numel(s[2:]))
	sq = sq.Pad([]int{0, 0, size / 2, (size - 1) / 2}, tensor.PadConstant, 0)
	div := AvgPool2d(sq, tensor.Pool2dOptions{Kernel: [2]int{size, 1}, Stride: [2]int{1, 1}}).Reshape(s...)
	return x.Div(div.MulScalar(alpha).AddScalar(k).PowScalar(beta))
}

// InstanceNorm normalizes each (sample, channel) plane of x ([N, C, ...])
// over its spatial axes, then applies the per-channel weight and bias ([C]
// or nil), as torch.nn.functional.instance_norm. With useInputStats it uses
// each plane's own mean and biased variance and, when runningMean and
// runningVar are non-nil, moves them in place toward the batch average of
// the plane means and unbiased variances by momentum; otherwise it
// normalizes with the running statistics.
func InstanceNorm(x, weight, bias *Var, runningMean, runningVar *tensor.Tensor, useInputStats bool, momentum, eps float64) *Var {
	s := x.Shape()
	if len(s) < 3 {
		panic(fmt.Sprintf("autograd.InstanceNorm: want input [N, C, spatial...], got shape %v", s))
	}
	if !useInputStats {
		if runningMean == nil || runningVar == nil {
			panic("autograd.InstanceNorm: normalizing with running statistics needs runningMean and runningVar")
		}
		return BatchNorm(x, weight, bias, runningMean, runningVar, false, momentum, eps)
	}
	n, c := s[0], s[1]
	if runningMean != nil && runningVar != nil {
		planes := x.value.Reshape(n, c, numel(s[2:]))
		mean := planes.Mean([]int{2}, false).Mean([]int{0}, false)
		variance := planes.Var([]int{2}, 1, false).Mean([]int{0}, false)
		runningMean.CopyFrom(runningMean.MulScalar(1 - momentum).Add(mean.MulScalar(momentum).To(runningMean.DType())))
		runningVar.CopyFrom(runningVar.MulScalar(1 - momentum).Add(variance.MulScalar(momentum).To(runningVar.DType())))
	}
	y := GroupNorm(x, c, nil, nil, eps)
	bshape := make([]int, len(s))
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[1] = c
	if weight != nil {
		y = y.Mul(weight.Reshape(bshape...))
	}
	if bias != nil {
		y = y.Add(bias.Reshape(bshape...))
	}
	return y
}

// adaptiveRange is PyTorch's adaptive pooling window [start, end) for
// output position i of out over an input axis of length in.
func adaptiveRange(i, in, out int) (start, end int) {
	start = i * in / out
	end = ((i+1)*in + out - 1) / out
	return start, end
}

// AdaptiveMaxPool2d takes the maximum of x ([N, C, H, W] or [C, H, W]) over
// PyTorch's adaptive windows, giving outH×outW planes. The gradient goes
// to the maximum of each window (split evenly among ties).
func AdaptiveMaxPool2d(x *Var, outH, outW int) *Var {
	if x.Dim() == 3 {
		return AdaptiveMaxPool2d(x.Unsqueeze(0), outH, outW).Squeeze(0)
	}
	if x.Dim() != 4 || outH < 1 || outW < 1 {
		panic(fmt.Sprintf("autograd.AdaptiveMaxPool2d: want input [N, C, H, W] and a positive output size, got shape %v and %dx%d", x.Shape(), outH, outW))
	}
	h, w := spatial(x.Shape())
	rows := make([]*Var, outH)
	for i := range rows {
		h0, h1 := adaptiveRange(i, h, outH)
		band := x.Narrow(2, h0, h1-h0)
		cols := make([]*Var, outW)
		for j := range cols {
			w0, w1 := adaptiveRange(j, w, outW)
			cols[j] = band.Narrow(3, w0, w1-w0).Max([]int{2, 3}, false)
		}
		rows[i] = Stack(cols, 2)
	}
	return Stack(rows, 2)
}

// PixelShuffle rearranges x ([..., C·r², H, W]) into [..., C, H·r, W·r], as
// torch.nn.functional.pixel_shuffle.
func PixelShuffle(x *Var, r int) *Var {
	s := x.Shape()
	if len(s) < 3 || r < 1 || s[len(s)-3]%(r*r) != 0 {
		panic(fmt.Sprintf("autograd.PixelShuffle: want input [..., C·r², H, W] with r=%d, got shape %v", r, s))
	}
	lead := s[:len(s)-3]
	b := numel(lead)
	c, h, w := s[len(s)-3]/(r*r), s[len(s)-2], s[len(s)-1]
	y := x.Reshape(b, c, r, r, h, w).Permute(0, 1, 4, 2, 5, 3)
	return y.Reshape(append(append([]int{}, lead...), c, h*r, w*r)...)
}

// PixelUnshuffle is the inverse of PixelShuffle: [..., C, H·r, W·r] to
// [..., C·r², H, W].
func PixelUnshuffle(x *Var, r int) *Var {
	s := x.Shape()
	if len(s) < 3 || r < 1 || s[len(s)-2]%r != 0 || s[len(s)-1]%r != 0 {
		panic(fmt.Sprintf("autograd.PixelUnshuffle: want input [..., C, H·r, W·r] with r=%d, got shape %v", r, s))
	}
	lead := s[:len(s)-3]
	b := numel(lead)
	c, h, w := s[len(s)-3], s[len(s)-2]/r, s[len(s)-1]/r
	y := x.Reshape(b, c, h, r, w, r).Permute(0, 1, 3, 5, 2, 4)
	return y.Reshape(append(append([]int{}, lead...), c*r*r, h, w)...)
}

// UpsampleNearest2d resizes x ([N, C, H, W] or [C, H, W]) to outH×outW by
// nearest-neighbour sampling, as torch's "nearest" interpolation: output
// row i copies input row min(floor(i·scaleH), H-1). A zero scale means
// H/outH (the scale PyTorch uses when given a size; with a scale factor it
// uses 1/scale_factor).
func UpsampleNearest2d(x *Var, outH, outW int, scaleH, scaleW float64) *Var {
	if x.Dim() == 3 {
		return UpsampleNearest2d(x.Unsqueeze(0), outH, outW, scaleH, scaleW).Squeeze(0)
	}
	checkUpsample("UpsampleNearest2d", x, outH, outW)
	h, w := spatial(x.Shape())
	return x.IndexSelect(2, nearestIndex(h, outH, scaleH).ToDeviceOf(x.value)).IndexSelect(3, nearestIndex(w, outW, scaleW).ToDeviceOf(x.value))
}

func checkUpsample(op string, x *Var, outH, outW int) {
	if x.Dim() != 4 || outH < 1 || outW < 1 {
		panic(fmt.Sprintf("autograd.%s: want input [N, C, H, W] and a positive output size, got shape %v and %dx%d", op, x.Shape(), outH, outW))
	}
}

func nearestIndex(in, out int, scale float64) *tensor.Tensor {
	if scale == 0 {
		scale = float64(in) / float64(out)
	}
	idx := make([]int64, out)
	for i := range idx {
		// PyTorch's CPU kernel computes the source index in float32.
		src := float32(i) * float32(scale)
		idx[i] = int64(min(int(math.Floor(float64(src))), in-1))
	}
	return tensor.FromSlice(idx)
}

// UpsampleBilinear2d resizes x ([N, C, H, W] or [C, H, W]) to outH×outW by
// bilinear interpolation, as torch's "bilinear" interpolation. With
// alignCorners the corner pixels of input and output line up (source
// position i·(H-1)/(outH-1)); otherwise pixel centres do (source
// (i+0.5)·scale-0.5, clamped at 0) with scale = scaleH, or H/outH when
// scaleH is zero. Gradients flow through the two row and column gathers.
func UpsampleBilinear2d(x *Var, outH, outW int, alignCorners bool, scaleH, scaleW float64) *Var {
	if x.Dim() == 3 {
		return UpsampleBilinear2d(x.Unsqueeze(0), outH, outW, alignCorners, scaleH, scaleW).Squeeze(0)
	}
	checkUpsample("UpsampleBilinear2d", x, outH, outW)
	h, w := spatial(x.Shape())
	y := linearAxis(x, 2, h, outH, alignCorners, scaleH)
	return linearAxis(y, 3, w, outW, alignCorners, scaleW)
}

// linearAxis linearly interpolates axis (of length in) of x to out samples.
func linearAxis(x *Var, axis, in, out int, alignCorners bool, scale float64) *Var {
	i0 := make([]int64, out)
	i1 := make([]int64, out)
	l1 := make([]float64, out)
	var s float64
	switch {
	case alignCorners && out > 1:
		s = float64(in-1) / float64(out-1)
	case alignCorners:
		s = 0
	case scale != 0:
		s = scale
	default:
		s = float64(in) / float64(out)
	}
	for i := range out {
		var src float64
		if alignCorners {
			src = float64(i) * s
		} else {
			src = max((float64(i)+0.5)*s-0.5, 0)
		}
		lo := min(int(src), in-1)
		hi := min(lo+1, in-1)
		i0[i], i1[i] = int64(lo), int64(hi)
		l1[i] = src - float64(lo)
	}
	shape := make([]int, x.Dim())
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = out
	// The interpolation tables are built on the host and copied to x's
	// device once each.
	wHi := New(tensor.FromSlice(l1, shape...).To(x.DType()).ToDeviceOf(x.value))
	wLo := New(tensor.FromSlice(l1, shape...).Neg().AddScalar(1).To(x.DType()).ToDeviceOf(x.value))
	a := x.IndexSelect(axis, tensor.FromSlice(i0).ToDeviceOf(x.value))
	b := x.IndexSelect(axis, tensor.FromSlice(i1).ToDeviceOf(x.value))
	return a.Mul(wLo).Add(b.Mul(wHi))
}

// Bilinear returns y[..., k] = x1ᵀ·weight[k]·x2 + bias[k] for x1 [..., in1],
// x2 [..., in2] and weight [out, in1, in2], as torch.nn.functional.bilinear.
// bias ([out]) may be nil.
func Bilinear(x1, x2, weight, bias *Var) *Var {
	s1, s2, ws := x1.Shape(), x2.Shape(), weight.Shape()
	if len(ws) != 3 || len(s1) == 0 || len(s1) != len(s2) || s1[len(s1)-1] != ws[1] || s2[len(s2)-1] != ws[2] {
		panic(fmt.Sprintf("autograd.Bilinear: want x1 [..., in1], x2 [..., in2] with the same leading axes and weight [out, in1, in2], got %v, %v and %v", s1, s2, ws))
	}
	for i := range len(s1) - 1 {
		if s1[i] != s2[i] {
			panic(fmt.Sprintf("autograd.Bilinear: leading axes of x1 %v and x2 %v differ", s1, s2))
		}
	}
	lead := s1[:len(s1)-1]
	b := numel(lead)
	out, in1, in2 := ws[0], ws[1], ws[2]
	// t[n, k, j] = Σ_i x1[n, i] · weight[k, i, j]
	t := x1.Reshape(b, in1).MatMul(weight.Permute(1, 0, 2).Reshape(in1, out*in2)).Reshape(b, out, in2)
	y := t.Mul(x2.Reshape(b, 1, in2)).Sum([]int{2}, false)
	if bias != nil {
		y = y.Add(bias)
	}
	return y.Reshape(append(append([]int{}, lead...), out)...)
}

// Dropout2d zeroes whole channels of x ([N, C, H, W], or unbatched
// [C, H, W]) with probability p and scales the kept ones by 1/(1-p), as
// torch.nn.functional.dropout2d: every element of a channel plane shares
// one mask value drawn from gen. When training is false or p is 0 it
// returns x. The gradient is g times the same mask.
func Dropout2d(x *Var, p float64, training bool, gen *tensor.Generator) *Var {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("autograd.Dropout2d: probability %v out of [0, 1]", p))
	}
	if x.Dim() != 3 && x.Dim() != 4 {
		panic(fmt.Sprintf("autograd.Dropout2d: want input [N, C, H, W] or [C, H, W], got shape %v", x.Shape()))
	}
	if !training || p == 0 {
		return x
	}
	s := x.Shape()
	ms := make([]int, len(s))
	for i := range ms {
		ms[i] = 1
	}
	copy(ms, s[:len(s)-2])
	mask := tensor.DropoutMaskOn(x.value.Device(), gen, ms, p, x.DType())
	return x.Mul(New(mask))
}

// onDevice moves the CPU helper t to like's device.
func onDevice(op string, t, like *tensor.Tensor) *tensor.Tensor {
	if d := like.Device(); d != tensor.CPU {
		var err error
		if t, err = t.ToDevice(d); err != nil {
			panic(fmt.Sprintf("autograd.%s: %v", op, err))
		}
	}
	return t
}

// alphaDropoutAlpha is SELU's negative saturation value scale·alpha.
const alphaDropoutAlpha = 1.7580993408473766

// AlphaDropout is dropout for self-normalizing (SELU) networks, as
// torch.nn.functional.alpha_dropout: dropped elements are set to SELU's
// negative saturation -α' and the result is scaled and shifted by a and b
// so that zero mean and unit variance are kept:
// a = 1/sqrt((α'²p + 1)(1-p)), y = a·(x·m - α'(1-m)) + a·α'·p with m the
// 0/1 keep mask drawn from gen. When training is false or p is 0 it
// returns x.
func AlphaDropout(x *Var, p float64, training bool, gen *tensor.Generator) *Var {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("autograd.AlphaDropout: probability %v out of [0, 1]", p))
	}
	if !training || p == 0 {
		return x
	}
	if p == 1 {
		return x.MulScalar(0)
	}
	const al = alphaDropoutAlpha
	a := 1 / math.Sqrt((al*al*p+1)*(1-p))
	keep := tensor.DropoutMaskOn(x.value.Device(), gen, x.Shape(), p, x.DType()).MulScalar(1 - p) // 0/1
	shift := keep.AddScalar(-1).MulScalar(al * a).AddScalar(al * a * p)
	return x.Mul(New(keep.MulScalar(a))).Add(New(shift))
}
