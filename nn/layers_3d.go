package nn

import (
	"fmt"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Volumetric layers over NCDHW inputs: Conv3d, ConvTranspose3d, MaxPool3d
// and AvgPool3d (see autograd.Conv3d and friends for how they compose the
// 2-d kernels).

// pyTriple prints a triple as PyTorch prints a size given as an int (when
// all entries agree) or a tuple.
func pyTriple(p [3]int) string {
	if p[0] == p[1] && p[1] == p[2] {
		return fmt.Sprint(p[0])
	}
	return pyShape(p[:])
}

// ones3 replaces zero entries (PyTorch's defaults of stride and dilation)
// by one.
func ones3(p [3]int) [3]int { return [3]int{max(p[0], 1), max(p[1], 1), max(p[2], 1)} }

// padForConv pads x explicitly for a convolution whose PaddingMode is not
// zeros, as PyTorch does before a convolution with zero padding: padding
// lists the per-axis amounts from the first spatial axis on, each applied
// on both sides.
func padForConv(x *autograd.Var, mode tensor.PadMode, padding ...int) *autograd.Var {
	pads := make([]int, 0, 2*len(padding))
	for i := len(padding) - 1; i >= 0; i-- {
		pads = append(pads, padding[i], padding[i])
	}
	return x.Pad(pads, mode, 0)
}

// paddingModeRepr is the padding_mode part of a convolution's repr: empty
// for zeros (tensor.PadConstant), else ", padding_mode=<name>".
func paddingModeRepr(mode tensor.PadMode) string {
	if mode == tensor.PadConstant {
		return ""
	}
	return ", padding_mode=" + mode.String()
}

// withPaddingMode inserts the padding_mode part before the closing
// parenthesis of a convolution's repr.
func withPaddingMode(repr string, mode tensor.PadMode) string {
	return strings.TrimSuffix(repr, ")") + paddingModeRepr(mode) + ")"
}

// Conv3d is a 3-d convolution over [N, C, D, H, W] volumes, as
// torch.nn.Conv3d. Weight has shape [out, in/groups, kD, kH, kW] and Bias
// [out] (nil without bias).
type Conv3d struct {
	Base
	InChannels, OutChannels int
	Kernel                  [3]int
	Options                 tensor.Conv3dOptions
	// PaddingMode is PyTorch's padding_mode: the zero value
	// tensor.PadConstant is "zeros"; PadReflect, PadReplicate and
	// PadCircular pad the input explicitly by Options.Padding first.
	PaddingMode  tensor.PadMode
	Weight, Bias *autograd.Var
}

// NewConv3d returns a 3-d convolution from in to out channels with the
// given kernel size (depth, height, width), options (zero values are
// PyTorch's defaults) and a bias when bias is true, initialized as PyTorch
// does: U(-b, b) with b = 1/sqrt(in/groups·kD·kH·kW), drawn from g
// (weight, then bias).
func NewConv3d(g *tensor.Generator, in, out int, kernel [3]int, opt tensor.Conv3dOptions, bias bool, dt ...tensor.DType) *Conv3d {
	checkConvChannels("NewConv3d", in, out, opt.Groups, kernel[0], kernel[1], kernel[2])
	groups := max(opt.Groups, 1)
	d := pickDType(dt)
	c := &Conv3d{InChannels: in, OutChannels: out, Kernel: kernel, Options: opt}
	fanIn := in / groups * kernel[0] * kernel[1] * kernel[2]
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConv3d", []int{out, in / groups, kernel[0], kernel[1], kernel[2]}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConv3d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward convolves x of shape [N, in, D, H, W] (or [in, D, H, W]).
func (c *Conv3d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if (len(s) != 5 && len(s) != 4) || s[len(s)-4] != c.InChannels {
		panic(fmt.Sprintf("nn.Conv3d.Forward: input shape %v must be [N, %d, D, H, W] or [%d, D, H, W]", s, c.InChannels, c.InChannels))
	}
	opt := c.Options
	if c.PaddingMode != tensor.PadConstant {
		x = padForConv(x, c.PaddingMode, opt.Padding[:]...)
		opt.Padding = [3]int{}
	}
	return autograd.Conv3d(x, c.Weight, c.Bias, opt)
}

// String describes the layer as PyTorch prints it.
func (c *Conv3d) String() string {
	o := c.Options
	st := ones3(o.Stride)
	return withPaddingMode(fmt.Sprintf("Conv3d(%d, %d, kernel_size=%s, stride=%s", c.InChannels, c.OutChannels, pyShape(c.Kernel[:]), pyShape(st[:]))+
		convExtra(o.Padding[:], o.Dilation[:], nil, o.Groups, c.Bias != nil), c.PaddingMode)
}

// ConvTranspose3d is a 3-d transposed convolution over [N, C, D, H, W]
// volumes, as torch.nn.ConvTranspose3d. Weight has shape
// [in, out/groups, kD, kH, kW] and Bias [out] (nil without bias).
type ConvTranspose3d struct {
	Base
	InChannels, OutChannels int
	Kernel                  [3]int
	Options                 tensor.ConvTranspose3dOptions
	Weight, Bias            *autograd.Var
}

// NewConvTranspose3d returns a 3-d transposed convolution from in to out
// channels, initialized as PyTorch does: U(-b, b) with
// b = 1/sqrt(out/groups·kD·kH·kW) (the fan-in of this weight layout),
// drawn from g (weight, then bias).
func NewConvTranspose3d(g *tensor.Generator, in, out int, kernel [3]int, opt tensor.ConvTranspose3dOptions, bias bool, dt ...tensor.DType) *ConvTranspose3d {
	checkConvChannels("NewConvTranspose3d", in, out, opt.Groups, kernel[0], kernel[1], kernel[2])
	groups := max(opt.Groups, 1)
	d := pickDType(dt)
	c := &ConvTranspose3d{InChannels: in, OutChannels: out, Kernel: kernel, Options: opt}
	fanIn := out / groups * kernel[0] * kernel[1] * kernel[2]
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConvTranspose3d", []int{in, out / groups, kernel[0], kernel[1], kernel[2]}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConvTranspose3d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward applies the transposed convolution to x of shape
// [N, in, D, H, W] (or [in, D, H, W]).
func (c *ConvTranspose3d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if (len(s) != 5 && len(s) != 4) || s[len(s)-4] != c.InChannels {
		panic(fmt.Sprintf("nn.ConvTranspose3d.Forward: input shape %v must be [N, %d, D, H, W] or [%d, D, H, W]", s, c.InChannels, c.InChannels))
	}
	return autograd.ConvTranspose3d(x, c.Weight, c.Bias, c.Options)
}

// String describes the layer as PyTorch prints it.
func (c *ConvTranspose3d) String() string {
	o := c.Options
	st := ones3(o.Stride)
	return fmt.Sprintf("ConvTranspose3d(%d, %d, kernel_size=%s, stride=%s", c.InChannels, c.OutChannels, pyShape(c.Kernel[:]), pyShape(st[:])) +
		convExtra(o.Padding[:], o.Dilation[:], o.OutputPadding[:], o.Groups, c.Bias != nil)
}

// checkPool3d panics unless the kernel is positive in every axis.
func checkPool3d(op string, opt tensor.Pool3dOptions) {
	for _, k := range opt.Kernel {
		if k <= 0 {
			panic(fmt.Sprintf("nn.%s: kernel size %v must be positive", op, opt.Kernel))
		}
	}
}

// pool3dStride returns the effective stride: the kernel size when unset.
func pool3dStride(o tensor.Pool3dOptions) [3]int {
	if o.Stride == [3]int{} {
		return o.Kernel
	}
	return o.Stride
}

// MaxPool3d takes the maximum over sliding windows of [N, C, D, H, W]
// volumes, as torch.nn.MaxPool3d.
type MaxPool3d struct {
	Base
	Options tensor.Pool3dOptions
}

// NewMaxPool3d returns a 3-d max-pooling module.
func NewMaxPool3d(opt tensor.Pool3dOptions) *MaxPool3d {
	checkPool3d("NewMaxPool3d", opt)
	return &MaxPool3d{Options: opt}
}

// Forward pools x of shape [N, C, D, H, W] (or [C, D, H, W]).
func (p *MaxPool3d) Forward(x *autograd.Var) *autograd.Var { return autograd.MaxPool3d(x, p.Options) }

// String describes the module as PyTorch prints it.
func (p *MaxPool3d) String() string {
	o := p.Options
	return fmt.Sprintf("MaxPool3d(kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s)",
		pyTriple(o.Kernel), pyTriple(pool3dStride(o)), pyTriple(o.Padding), pyTriple(ones3(o.Dilation)), pyBool(o.CeilMode))
}

// AvgPool3d averages sliding windows of [N, C, D, H, W] volumes, as
// torch.nn.AvgPool3d. Note that PyTorch's count_include_pad defaults to
// true; set CountIncludePad to match it when padding.
type AvgPool3d struct {
	Base
	Options tensor.Pool3dOptions
}

// NewAvgPool3d returns a 3-d average-pooling module.
func NewAvgPool3d(opt tensor.Pool3dOptions) *AvgPool3d {
	checkPool3d("NewAvgPool3d", opt)
	for _, d := range opt.Dilation {
		if d > 1 {
			panic(fmt.Sprintf("nn.NewAvgPool3d: average pooling has no dilation, got %v", opt.Dilation))
		}
	}
	return &AvgPool3d{Options: opt}
}

// Forward pools x of shape [N, C, D, H, W] (or [C, D, H, W]).
func (p *AvgPool3d) Forward(x *autograd.Var) *autograd.Var { return autograd.AvgPool3d(x, p.Options) }

// String describes the module as PyTorch prints it.
func (p *AvgPool3d) String() string {
	o := p.Options
	return fmt.Sprintf("AvgPool3d(kernel_size=%s, stride=%s, padding=%s)", pyTriple(o.Kernel), pyTriple(pool3dStride(o)), pyTriple(o.Padding))
}

// NewReflectionPad3d pads the last three axes of [N, C, D, H, W] (or
// [C, D, H, W]) by reflection, as torch.nn.ReflectionPad3d: padding is one
// size for every side or (left, right, top, bottom, front, back).
func NewReflectionPad3d(padding ...int) *Pad {
	return newPad("ReflectionPad3d", 3, tensor.PadReflect, 0, padding)
}

// NewReplicationPad3d pads the last three axes by repeating the edge, as
// torch.nn.ReplicationPad3d: padding is one size for every side or (left,
// right, top, bottom, front, back).
func NewReplicationPad3d(padding ...int) *Pad {
	return newPad("ReplicationPad3d", 3, tensor.PadReplicate, 0, padding)
}
