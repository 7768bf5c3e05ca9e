package autograd

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// 3-d convolution and pooling, and 2-d max unpooling, composed from the
// 2-d kernels and differentiable view, pad and scatter ops, so their
// gradients (of any order) come from the composition. Each result is
// annotated as its composite op (Var.Composite: "Conv3d",
// "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "MaxUnpool2d", with the
// options as attrs) for graph readers such as the ONNX exporter.

// one returns v, or 1 where v is zero (PyTorch's default stride/dilation).
func one(v int) int { return max(v, 1) }

// Conv3d returns the 3-d convolution of x ([N, C, D, H, W], or unbatched
// [C, D, H, W]) with w ([O, C/groups, kD, kH, kW]) plus the optional bias
// b ([O]), as torch.nn.functional.conv3d with zero padding. It runs one
// 2-d convolution per kernel depth over the matching strided depth slices
// of the depth-padded input, batched over the output depth, and sums them.
func Conv3d(x, w, b *Var, opt tensor.Conv3dOptions) *Var {
	if x.Dim() == 4 {
		return Conv3d(x.Unsqueeze(0), w, b, opt).Squeeze(0)
	}
	xs, ws := x.Shape(), w.Shape()
	if x.Dim() != 5 || w.Dim() != 5 {
		panic(fmt.Sprintf("autograd.Conv3d: want input [N, C, D, H, W] and weight [out, in/groups, kD, kH, kW], got shapes %v and %v", xs, ws))
	}
	groups := max(opt.Groups, 1)
	if xs[1] != ws[1]*groups {
		panic(fmt.Sprintf("autograd.Conv3d: input channels %d (shape %v) must equal weight's in/groups %d (shape %v) times groups %d", xs[1], xs, ws[1], ws, groups))
	}
	n, c, kd := xs[0], xs[1], ws[2]
	sd, pd, dd := one(opt.Stride[0]), opt.Padding[0], one(opt.Dilation[0])
	depth := xs[2] + 2*pd
	od := (depth-dd*(kd-1)-1)/sd + 1
	if depth-dd*(kd-1)-1 < 0 || od <= 0 {
		panic(fmt.Sprintf("autograd.Conv3d: input depth %d with padding %d is smaller than the dilated kernel depth %d", xs[2], pd, dd*(kd-1)+1))
	}
	x0 := x
	if pd > 0 {
		x = x.Pad([]int{0, 0, 0, 0, pd, pd}, tensor.PadConstant, 0)
	}
	o2 := tensor.Conv2dOptions{Stride: [2]int{opt.Stride[1], opt.Stride[2]}, Padding: [2]int{opt.Padding[1], opt.Padding[2]},
		Dilation: [2]int{opt.Dilation[1], opt.Dilation[2]}, Groups: opt.Groups}
	var sum *Var
	for k := range kd {
		start := k * dd
		slab := x.Slice(2, start, start+(od-1)*sd+1, sd).Permute(0, 2, 1, 3, 4).Reshape(n*od, c, xs[3], xs[4])
		y := Conv2d(slab, w.Select(2, k), nil, o2)
		if sum == nil {
			sum = y
		} else {
			sum = sum.Add(y)
		}
	}
	s := sum.Shape()
	out := sum.Reshape(n, od, s[1], s[2], s[3]).Permute(0, 2, 1, 3, 4)
	if b != nil {
		out = out.Add(b.Reshape(1, s[1], 1, 1, 1))
	}
	return annotate(out.Contiguous(), "Conv3d", map[string]any{"options": opt}, x0, w, b)
}

// ConvTranspose3d returns the 3-d transposed convolution of x
// ([N, in, D, H, W], or unbatched [in, D, H, W]) with w
// ([in, out/groups, kD, kH, kW]) plus the optional bias b ([out]), as
// torch.nn.functional.conv_transpose3d. Each kernel depth runs a 2-d
// transposed convolution over all input planes; its result is spread to
// output depths d·stride + k·dilation, then the padding is cropped.
func ConvTranspose3d(x, w, b *Var, opt tensor.ConvTranspose3dOptions) *Var {
	if x.Dim() == 4 {
		return ConvTranspose3d(x.Unsqueeze(0), w, b, opt).Squeeze(0)
	}
	xs, ws := x.Shape(), w.Shape()
	if x.Dim() != 5 || w.Dim() != 5 {
		panic(fmt.Sprintf("autograd.ConvTranspose3d: want input [N, in, D, H, W] and weight [in, out/groups, kD, kH, kW], got shapes %v and %v", xs, ws))
	}
	if xs[1] != ws[0] {
		panic(fmt.Sprintf("autograd.ConvTranspose3d: input channels %d (shape %v) must equal weight's first axis %d (shape %v)", xs[1], xs, ws[0], ws))
	}
	n, c, d, kd := xs[0], xs[1], xs[2], ws[2]
	sd, pd, dd, opd := one(opt.Stride[0]), opt.Padding[0], one(opt.Dilation[0]), opt.OutputPadding[0]
	if opd >= sd && opd >= dd {
		panic(fmt.Sprintf("autograd.ConvTranspose3d: output padding %v must be smaller than the stride %v or the dilation %v", opt.OutputPadding, opt.Stride, opt.Dilation))
	}
	full := (d-1)*sd + dd*(kd-1) + 1
	od := full - 2*pd + opd
	if od <= 0 {
		panic(fmt.Sprintf("autograd.ConvTranspose3d: padding %d leaves no output depth (input depth %d, kernel depth %d)", pd, d, kd))
	}
	o2 := tensor.ConvTranspose2dOptions{Stride: [2]int{opt.Stride[1], opt.Stride[2]}, Padding: [2]int{opt.Padding[1], opt.Padding[2]},
		OutputPadding: [2]int{opt.OutputPadding[1], opt.OutputPadding[2]}, Dilation: [2]int{opt.Dilation[1], opt.Dilation[2]}, Groups: opt.Groups}
	planes := x.Permute(0, 2, 1, 3, 4).Reshape(n*d, c, xs[3], xs[4])
	var sum *Var
	for k := range kd {
		y := ConvTranspose2d(planes, w.Select(2, k), nil, o2)
		s := y.Shape()
		y = y.Reshape(n, d, s[1], s[2], s[3])
		if sd > 1 {
			// Interleave stride-1 zero planes after every input plane.
			y = y.Unsqueeze(2).Pad([]int{0, 0, 0, 0, 0, 0, 0, sd - 1}, tensor.PadConstant, 0).
				Reshape(n, d*sd, s[1], s[2], s[3]).Narrow(1, 0, (d-1)*sd+1)
		}
		before := k * dd
		y = y.Pad([]int{0, 0, 0, 0, 0, 0, before, full + opd - before - ((d-1)*sd + 1)}, tensor.PadConstant, 0)
		if sum == nil {
			sum = y
		} else {
			sum = sum.Add(y)
		}
	}
	s := sum.Shape()
	out := sum.Narrow(1, pd, od).Permute(0, 2, 1, 3, 4)
	if b != nil {
		out = out.Add(b.Reshape(1, s[2], 1, 1, 1))
	}
	return annotate(out.Contiguous(), "ConvTranspose3d", map[string]any{"options": opt}, x, w, b)
}

// pool3dSplit checks a 3-d pooling input and options and returns the 2-d
// options of the height-width pass and of the depth pass (kernel
// (kD, 1) over [N·C, 1, D, Ho·Wo]).
func pool3dSplit(op string, x *Var, opt tensor.Pool3dOptions) (hw, depth tensor.Pool2dOptions) {
	if x.Dim() != 5 {
		panic(fmt.Sprintf("autograd.%s: want input [N, C, D, H, W] or [C, D, H, W], got shape %v", op, x.Shape()))
	}
	for i, k := range opt.Kernel {
		if k <= 0 {
			panic(fmt.Sprintf("autograd.%s: kernel size %v must be positive (axis %d)", op, opt.Kernel, i))
		}
	}
	stride := opt.Stride
	if stride == [3]int{} {
		stride = opt.Kernel
	}
	hw = tensor.Pool2dOptions{Kernel: [2]int{opt.Kernel[1], opt.Kernel[2]}, Stride: [2]int{stride[1], stride[2]},
		Padding: [2]int{opt.Padding[1], opt.Padding[2]}, Dilation: [2]int{opt.Dilation[1], opt.Dilation[2]},
		CeilMode: opt.CeilMode, CountIncludePad: opt.CountIncludePad}
	depth = tensor.Pool2dOptions{Kernel: [2]int{opt.Kernel[0], 1}, Stride: [2]int{stride[0], 1},
		Padding: [2]int{opt.Padding[0], 0}, Dilation: [2]int{opt.Dilation[0], 1},
		CeilMode: opt.CeilMode, CountIncludePad: opt.CountIncludePad}
	return hw, depth
}

// pool3d runs a separable 3-d pooling: pool2d over height and width with
// the depth folded into the channels, then over depth.
func pool3d(op string, x *Var, opt tensor.Pool3dOptions, pool2d func(*Var, tensor.Pool2dOptions) *Var) *Var {
	if x.Dim() == 4 {
		return pool3d(op, x.Unsqueeze(0), opt, pool2d).Squeeze(0)
	}
	hw, depth := pool3dSplit(op, x, opt)
	s := x.Shape()
	n, c, d := s[0], s[1], s[2]
	y := pool2d(x.Reshape(n, c*d, s[3], s[4]), hw)
	ho, wo := y.Shape()[2], y.Shape()[3]
	z := pool2d(y.Reshape(n*c, 1, d, ho*wo), depth)
	return annotate(z.Reshape(n, c, z.Shape()[2], ho, wo), op, map[string]any{"options": opt}, x)
}

// MaxPool3d takes the maximum over sliding windows of x ([N, C, D, H, W]
// or [C, D, H, W]), as torch.nn.functional.max_pool3d. The maximum over
// a box is the maximum over depth of the maxima over height and width, so
// it runs MaxPool2d twice; the gradient flows to the maximal element.
func MaxPool3d(x *Var, opt tensor.Pool3dOptions) *Var {
	return pool3d("MaxPool3d", x, opt, MaxPool2d)
}

// AvgPool3d averages sliding windows of x ([N, C, D, H, W] or
// [C, D, H, W]), as torch.nn.functional.avg_pool3d (without
// divisor_override). PyTorch's divisor is the product of the per-axis
// window extents (clipped to the input, or to the padded input with
// CountIncludePad), so the average is separable and runs AvgPool2d over
// height and width, then over depth.
func AvgPool3d(x *Var, opt tensor.Pool3dOptions) *Var {
	for _, d := range opt.Dilation {
		if d > 1 {
			panic(fmt.Sprintf("autograd.AvgPool3d: average pooling has no dilation, got %v", opt.Dilation))
		}
	}
	return pool3d("AvgPool3d", x, opt, AvgPool2d)
}

// MaxUnpool2d is the partial inverse of MaxPool2dWithIndices, as
// torch.nn.functional.max_unpool2d: it returns zeros of shape
// [N, C, outH, outW] (or [C, outH, outW]) with each element of x
// ([N, C, H, W] or [C, H, W]) written at its flat index in indices (same
// shape as x, Int64, row-major over outH·outW). The gradient gathers the
// output gradient at the indices.
func MaxUnpool2d(x *Var, indices *tensor.Tensor, outH, outW int) *Var {
	if x.Dim() == 3 {
		return MaxUnpool2d(x.Unsqueeze(0), indices.Unsqueeze(0), outH, outW).Squeeze(0)
	}
	s := x.Shape()
	if x.Dim() != 4 || !sameInts(s, indices.Shape()) || indices.DType() != tensor.Int64 {
		panic(fmt.Sprintf("autograd.MaxUnpool2d: want input [N, C, H, W] and Int64 indices of the same shape, got %v and %v %v", s, indices.DType(), indices.Shape()))
	}
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("autograd.MaxUnpool2d: output size %dx%d must be positive", outH, outW))
	}
	n, c := s[0], s[1]
	flat := indices.Reshape(n, c, s[2]*s[3])
	if flat.Numel() > 0 {
		lo, hi := flat.Min(nil, false).Item(), flat.Max(nil, false).Item()
		if lo < 0 || hi >= float64(outH*outW) {
			panic(fmt.Sprintf("autograd.MaxUnpool2d: indices span [%g, %g], outside the output plane of %dx%d", lo, hi, outH, outW))
		}
	}
	zeros := New(zerosOn(x.value, []int{n, c, outH * outW}))
	out := zeros.Scatter(2, flat, x.Reshape(n, c, s[2]*s[3])).Reshape(n, c, outH, outW)
	return annotate(out, "MaxUnpool2d", map[string]any{"indices": indices, "outH": outH, "outW": outW}, x)
}

// sameInts reports whether a and b hold the same values.
func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
