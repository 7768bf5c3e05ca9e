package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Volumetric (3-d spatial, [N, C, D, H, W]) convolution and pooling, built
// from the 2-d kernels one depth slice at a time: a 3-d window is a sum (or
// max) over its depth taps of 2-d windows.

// outLen is the output length of a window of size k (dilation d) sliding
// with stride s over n positions; ceil rounds up, keeping windows that
// start inside the input.
func outLen(n, k, s, d int, ceil bool) int {
	num := n - d*(k-1) - 1
	if num < 0 {
		return 0
	}
	if ceil {
		o := (num+s-1)/s + 1
		if (o-1)*s >= n {
			o--
		}
		return o
	}
	return num/s + 1
}

// conv3d is Conv on [N, C, D, H, W] with pads already in p.
func (n *node) conv3d(x, w, b *tensor.Tensor, p *spatial) (*tensor.Tensor, error) {
	if w.Dim() != 5 {
		return nil, fmt.Errorf("onnx: %v: weight %v must be 5-d for a 3-d input", n, w.Shape())
	}
	xp := p.padInput(x, 0)
	d := xp.Shape()[2]
	kd := w.Shape()[2]
	od := outLen(d, kd, p.stride[0], p.dilation[0], false)
	if od <= 0 {
		return nil, fmt.Errorf("onnx: %v: input %v is smaller than the kernel %v", n, x.Shape(), w.Shape())
	}
	opt := tensor.Conv2dOptions{
		Stride:   [2]int{p.stride[1], p.stride[2]},
		Dilation: [2]int{p.dilation[1], p.dilation[2]},
		Groups:   int(n.attrInt("group", 1)),
	}
	slices := make([]*tensor.Tensor, od)
	for o := range od {
		var acc *tensor.Tensor
		for k := range kd {
			y := tensor.Conv2d(xp.Select(2, o*p.stride[0]+k*p.dilation[0]), w.Select(2, k), nil, opt)
			if acc == nil {
				acc = y
			} else {
				acc = acc.Add(y)
			}
		}
		slices[o] = acc
	}
	y := tensor.Stack(slices, 2)
	if b != nil {
		y = y.Add(b.Reshape(channelShape(b.Numel(), 5)...))
	}
	return y, nil
}

// pool3d is MaxPool (max) or AveragePool on [N, C, D, H, W].
func (n *node) pool3d(x *tensor.Tensor, p *spatial, isMax bool) (*tensor.Tensor, error) {
	ceil := n.attrInt("ceil_mode", 0) == 1
	fill := 0.0
	if isMax {
		fill = math.Inf(-1)
	}
	xp := p.padInput(x, fill)
	d := xp.Shape()[2]
	od := outLen(d, p.kernel[0], p.stride[0], p.dilation[0], ceil)
	if od <= 0 {
		return nil, fmt.Errorf("onnx: %v: input %v is smaller than the kernel %v", n, x.Shape(), p.kernel)
	}
	opt := tensor.Pool2dOptions{
		Kernel: [2]int{p.kernel[1], p.kernel[2]}, Stride: [2]int{p.stride[1], p.stride[2]},
		Dilation: [2]int{p.dilation[1], p.dilation[2]}, CeilMode: ceil,
	}
	includePad := n.attrInt("count_include_pad", 0) == 1
	var mask *tensor.Tensor
	if !isMax && !includePad {
		mask = p.padInput(tensor.OnesLike(x.Narrow(0, 0, 1).Narrow(1, 0, 1)), 0)
	}
	out := make([]*tensor.Tensor, od)
	for o := range od {
		var acc, count *tensor.Tensor
		taps := 0
		for k := range p.kernel[0] {
			i := o*p.stride[0] + k*p.dilation[0]
			if i >= d {
				break
			}
			taps++
			var y, c *tensor.Tensor
			if isMax {
				y, _ = tensor.MaxPool2d(xp.Select(2, i), opt)
			} else {
				y = tensor.AvgPool2d(xp.Select(2, i), opt)
				if mask != nil {
					c = tensor.AvgPool2d(mask.Select(2, i), opt)
				}
			}
			switch {
			case acc == nil:
				acc, count = y, c
			case isMax:
				acc = acc.Maximum(y)
			default:
				acc = acc.Add(y)
				if c != nil {
					count = count.Add(c)
				}
			}
		}
		if !isMax {
			if count != nil {
				acc = acc.Div(count)
			} else {
				acc = acc.DivScalar(float64(taps))
			}
		}
		out[o] = acc
	}
	return tensor.Stack(out, 2), nil
}

// convTranspose3dFull is the unpadded transposed convolution of
// [N, Cin, D, H, W] with [Cin, Cout/groups, KD, KH, KW]: each input depth
// slice i spreads, through kernel depth tap k, into output slice
// i*stride + k*dilation.
func convTranspose3dFull(x, w *tensor.Tensor, stride, dil []int, groups int) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	d, kd := xs[2], ws[2]
	od := (d-1)*stride[0] + dil[0]*(kd-1) + 1
	opt := tensor.ConvTranspose2dOptions{
		Stride: [2]int{stride[1], stride[2]}, Dilation: [2]int{dil[1], dil[2]}, Groups: groups,
	}
	out := make([]*tensor.Tensor, od)
	for i := range d {
		xi := x.Select(2, i)
		for k := range kd {
			y := tensor.ConvTranspose2d(xi, w.Select(2, k), nil, opt)
			o := i*stride[0] + k*dil[0]
			if out[o] == nil {
				out[o] = y
			} else {
				out[o] = out[o].Add(y)
			}
		}
	}
	var zero *tensor.Tensor
	for o := range out {
		if out[o] == nil {
			if zero == nil {
				for _, t := range out {
					if t != nil {
						zero = tensor.ZerosLike(t)
						break
					}
				}
			}
			out[o] = zero
		}
	}
	return tensor.Stack(out, 2)
}
