package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Convolution and pooling layers beyond Conv2d and MaxPool2d: Conv1d,
// ConvTranspose1d/2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d,
// MaxPool1d and AvgPool1d. The 1-d layers run their 2-d kernels on
// height-1 images.

// Conv1d is a 1-d convolution over [N, C, L] sequences, as torch.nn.Conv1d.
// Weight has shape [out, in/groups, k] and Bias [out] (nil without bias).
type Conv1d struct {
	Base
	InChannels, OutChannels, Kernel int
	Options                         tensor.Conv1dOptions
	// PaddingMode is PyTorch's padding_mode: the zero value
	// tensor.PadConstant is "zeros"; PadReflect, PadReplicate and
	// PadCircular pad the input explicitly by Options.Padding first.
	PaddingMode  tensor.PadMode
	Weight, Bias *autograd.Var
}

// checkConvChannels panics unless the channel counts, kernel and groups
// are valid.
func checkConvChannels(op string, in, out, groups int, kernel ...int) {
	g := max(groups, 1)
	switch {
	case in <= 0 || out <= 0:
		panic(fmt.Sprintf("nn.%s: channel counts must be positive, got in=%d out=%d", op, in, out))
	case groups < 0 || in%g != 0 || out%g != 0:
		panic(fmt.Sprintf("nn.%s: groups=%d must divide in=%d and out=%d", op, groups, in, out))
	}
	for _, k := range kernel {
		if k <= 0 {
			panic(fmt.Sprintf("nn.%s: kernel size %v must be positive", op, kernel))
		}
	}
}

// NewConv1d returns a 1-d convolution from in to out channels with kernel
// size k, the given options (zero values are PyTorch's defaults) and a
// bias when bias is true, initialized as PyTorch does: U(-b, b) with
// b = 1/sqrt(in/groups·k), drawn from g (weight, then bias).
func NewConv1d(g *tensor.Generator, in, out, k int, opt tensor.Conv1dOptions, bias bool, dt ...tensor.DType) *Conv1d {
	checkConvChannels("NewConv1d", in, out, opt.Groups, k)
	groups := max(opt.Groups, 1)
	d := pickDType(dt)
	c := &Conv1d{InChannels: in, OutChannels: out, Kernel: k, Options: opt}
	fanIn := in / groups * k
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConv1d", []int{out, in / groups, k}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConv1d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward convolves x of shape [N, in, L] (or [in, L]).
func (c *Conv1d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if (len(s) != 3 && len(s) != 2) || s[len(s)-2] != c.InChannels {
		panic(fmt.Sprintf("nn.Conv1d.Forward: input shape %v must be [N, %d, L] or [%d, L]", s, c.InChannels, c.InChannels))
	}
	opt := c.Options
	if c.PaddingMode != tensor.PadConstant {
		x = padForConv(x, c.PaddingMode, opt.Padding)
		opt.Padding = 0
	}
	return autograd.Conv1d(x, c.Weight, c.Bias, opt)
}

// String describes the layer as PyTorch prints it.
func (c *Conv1d) String() string {
	o := c.Options
	return withPaddingMode(fmt.Sprintf("Conv1d(%d, %d, kernel_size=(%d,), stride=(%d,)", c.InChannels, c.OutChannels, c.Kernel, max(o.Stride, 1))+
		convExtra([]int{o.Padding}, []int{o.Dilation}, nil, o.Groups, c.Bias != nil), c.PaddingMode)
}

// convExtra formats the optional part of a convolution's repr as PyTorch
// does: padding, dilation, output_padding, groups and bias, each only when
// not the default.
func convExtra(padding, dilation, outputPadding []int, groups int, bias bool) string {
	s := ""
	nonZero := func(v []int) bool {
		for _, x := range v {
			if x != 0 {
				return true
			}
		}
		return false
	}
	if nonZero(padding) {
		s += ", padding=" + pyShape(padding)
	}
	dil := make([]int, len(dilation))
	notOne := false
	for i, d := range dilation {
		dil[i] = max(d, 1)
		notOne = notOne || dil[i] != 1
	}
	if notOne {
		s += ", dilation=" + pyShape(dil)
	}
	if nonZero(outputPadding) {
		s += ", output_padding=" + pyShape(outputPadding)
	}
	if groups > 1 {
		s += fmt.Sprintf(", groups=%d", groups)
	}
	if !bias {
		s += ", bias=False"
	}
	return s + ")"
}

// ConvTranspose2d is a 2-d transposed convolution over NCHW images, as
// torch.nn.ConvTranspose2d. Weight has shape [in, out/groups, kh, kw] and
// Bias [out] (nil without bias).
type ConvTranspose2d struct {
	Base
	InChannels, OutChannels int
	Kernel                  [2]int
	Options                 tensor.ConvTranspose2dOptions
	Weight, Bias            *autograd.Var
}

// NewConvTranspose2d returns a transposed convolution from in to out
// channels with the given kernel size, options (zero values are PyTorch's
// defaults) and a bias when bias is true. Weight and bias are drawn from
// U(-b, b), b = 1/sqrt(out/groups·kh·kw) (PyTorch's fan-in of this weight
// layout), using g.
func NewConvTranspose2d(g *tensor.Generator, in, out int, kernel [2]int, opt tensor.ConvTranspose2dOptions, bias bool, dt ...tensor.DType) *ConvTranspose2d {
	checkConvChannels("NewConvTranspose2d", in, out, opt.Groups, kernel[0], kernel[1])
	groups := max(opt.Groups, 1)
	d := pickDType(dt)
	c := &ConvTranspose2d{InChannels: in, OutChannels: out, Kernel: kernel, Options: opt}
	fanIn := out / groups * kernel[0] * kernel[1]
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConvTranspose2d", []int{in, out / groups, kernel[0], kernel[1]}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConvTranspose2d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward applies the transposed convolution to x of shape [N, in, H, W]
// (or [in, H, W]).
func (c *ConvTranspose2d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if (len(s) != 4 && len(s) != 3) || s[len(s)-3] != c.InChannels {
		panic(fmt.Sprintf("nn.ConvTranspose2d.Forward: input shape %v must be [N, %d, H, W] or [%d, H, W]", s, c.InChannels, c.InChannels))
	}
	return autograd.ConvTranspose2d(x, c.Weight, c.Bias, c.Options)
}

// String describes the layer as PyTorch prints it.
func (c *ConvTranspose2d) String() string {
	o := c.Options
	return fmt.Sprintf("ConvTranspose2d(%d, %d, kernel_size=(%d, %d), stride=(%d, %d)", c.InChannels, c.OutChannels,
		c.Kernel[0], c.Kernel[1], max(o.Stride[0], 1), max(o.Stride[1], 1)) +
		convExtra(o.Padding[:], o.Dilation[:], o.OutputPadding[:], o.Groups, c.Bias != nil)
}

// ConvTranspose1dOptions configures a 1-d transposed convolution; zero
// values mean stride 1, padding 0, output padding 0, dilation 1, groups 1.
type ConvTranspose1dOptions struct {
	Stride, Padding, OutputPadding, Dilation int
	Groups                                   int
}

// to2d returns the options of the same transposed convolution on height-1
// images.
func (o ConvTranspose1dOptions) to2d() tensor.ConvTranspose2dOptions {
	return tensor.ConvTranspose2dOptions{Stride: [2]int{1, max(o.Stride, 1)}, Padding: [2]int{0, o.Padding},
		OutputPadding: [2]int{0, o.OutputPadding}, Dilation: [2]int{1, max(o.Dilation, 1)}, Groups: o.Groups}
}

// ConvTranspose1d is a 1-d transposed convolution over [N, C, L]
// sequences, as torch.nn.ConvTranspose1d. Weight has shape
// [in, out/groups, k] and Bias [out] (nil without bias).
type ConvTranspose1d struct {
	Base
	InChannels, OutChannels, Kernel int
	Options                         ConvTranspose1dOptions
	Weight, Bias                    *autograd.Var
}

// NewConvTranspose1d returns a 1-d transposed convolution initialized as
// PyTorch does: U(-b, b), b = 1/sqrt(out/groups·k), drawn from g.
func NewConvTranspose1d(g *tensor.Generator, in, out, k int, opt ConvTranspose1dOptions, bias bool, dt ...tensor.DType) *ConvTranspose1d {
	checkConvChannels("NewConvTranspose1d", in, out, opt.Groups, k)
	groups := max(opt.Groups, 1)
	d := pickDType(dt)
	c := &ConvTranspose1d{InChannels: in, OutChannels: out, Kernel: k, Options: opt}
	fanIn := out / groups * k
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConvTranspose1d", []int{in, out / groups, k}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConvTranspose1d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward applies the transposed convolution to x of shape [N, in, L] (or
// [in, L]).
func (c *ConvTranspose1d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) == 2 && s[0] == c.InChannels {
		return c.Forward(x.Unsqueeze(0)).Squeeze(0)
	}
	if len(s) != 3 || s[1] != c.InChannels {
		panic(fmt.Sprintf("nn.ConvTranspose1d.Forward: input shape %v must be [N, %d, L] or [%d, L]", s, c.InChannels, c.InChannels))
	}
	return autograd.ConvTranspose2d(x.Unsqueeze(2), c.Weight.Unsqueeze(2), c.Bias, c.Options.to2d()).Squeeze(2)
}

// String describes the layer as PyTorch prints it.
func (c *ConvTranspose1d) String() string {
	o := c.Options
	return fmt.Sprintf("ConvTranspose1d(%d, %d, kernel_size=(%d,), stride=(%d,)", c.InChannels, c.OutChannels, c.Kernel, max(o.Stride, 1)) +
		convExtra([]int{o.Padding}, []int{o.Dilation}, []int{o.OutputPadding}, o.Groups, c.Bias != nil)
}

// pyPair prints a pair as PyTorch prints a size given as an int (when both
// entries agree) or a tuple.
func pyPair(p [2]int) string {
	if p[0] == p[1] {
		return fmt.Sprint(p[0])
	}
	return fmt.Sprintf("(%d, %d)", p[0], p[1])
}

// AvgPool2d averages sliding windows of NCHW images, as torch.nn.AvgPool2d.
// Options.Kernel is required; a zero Stride means the kernel size. Note that
// PyTorch's count_include_pad defaults to true; set CountIncludePad to match
// it when padding.
type AvgPool2d struct {
	Base
	Options tensor.Pool2dOptions
}

// NewAvgPool2d returns an average-pooling module.
func NewAvgPool2d(opt tensor.Pool2dOptions) *AvgPool2d {
	if opt.Kernel[0] <= 0 || opt.Kernel[1] <= 0 {
		panic(fmt.Sprintf("nn.NewAvgPool2d: kernel size %v must be positive", opt.Kernel))
	}
	return &AvgPool2d{Options: opt}
}

// Forward pools x of shape [N, C, H, W] (or [C, H, W]).
func (p *AvgPool2d) Forward(x *autograd.Var) *autograd.Var { return autograd.AvgPool2d(x, p.Options) }

// String describes the module as PyTorch prints it.
func (p *AvgPool2d) String() string {
	o := p.Options
	stride := o.Stride
	if stride == [2]int{} {
		stride = o.Kernel
	}
	return fmt.Sprintf("AvgPool2d(kernel_size=%s, stride=%s, padding=%s)", pyPair(o.Kernel), pyPair(stride), pyPair(o.Padding))
}

// AdaptiveAvgPool2d averages NCHW images down to OutputSize (height,
// width) with PyTorch's adaptive windows, as torch.nn.AdaptiveAvgPool2d.
type AdaptiveAvgPool2d struct {
	Base
	OutputSize [2]int
}

// NewAdaptiveAvgPool2d returns an adaptive average-pooling module.
func NewAdaptiveAvgPool2d(outH, outW int) *AdaptiveAvgPool2d {
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveAvgPool2d: output size %dx%d must be positive", outH, outW))
	}
	return &AdaptiveAvgPool2d{OutputSize: [2]int{outH, outW}}
}

// Forward pools x of shape [N, C, H, W] (or [C, H, W]).
func (p *AdaptiveAvgPool2d) Forward(x *autograd.Var) *autograd.Var {
	return autograd.AdaptiveAvgPool2d(x, p.OutputSize[0], p.OutputSize[1])
}

// String describes the module as PyTorch prints it.
func (p *AdaptiveAvgPool2d) String() string {
	return "AdaptiveAvgPool2d(output_size=" + pyPair(p.OutputSize) + ")"
}

// AdaptiveMaxPool2d takes maxima of NCHW images over PyTorch's adaptive
// windows, giving OutputSize planes, as torch.nn.AdaptiveMaxPool2d.
type AdaptiveMaxPool2d struct {
	Base
	OutputSize [2]int
}

// NewAdaptiveMaxPool2d returns an adaptive max-pooling module.
func NewAdaptiveMaxPool2d(outH, outW int) *AdaptiveMaxPool2d {
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveMaxPool2d: output size %dx%d must be positive", outH, outW))
	}
	return &AdaptiveMaxPool2d{OutputSize: [2]int{outH, outW}}
}

// Forward pools x of shape [N, C, H, W] (or [C, H, W]).
func (p *AdaptiveMaxPool2d) Forward(x *autograd.Var) *autograd.Var {
	return autograd.AdaptiveMaxPool2d(x, p.OutputSize[0], p.OutputSize[1])
}

// String describes the module as PyTorch prints it.
func (p *AdaptiveMaxPool2d) String() string {
	return "AdaptiveMaxPool2d(output_size=" + pyPair(p.OutputSize) + ")"
}

// Pool1dOptions configures 1-d max and average pooling. Kernel is
// required; a zero Stride means the kernel size and a zero Dilation means
// 1. CountIncludePad (average pooling only; PyTorch's default is true)
// divides by the full window including zero padding.
type Pool1dOptions struct {
	Kernel, Stride, Padding, Dilation int
	CeilMode, CountIncludePad         bool
}

func (o Pool1dOptions) to2d() tensor.Pool2dOptions {
	return tensor.Pool2dOptions{Kernel: [2]int{1, o.Kernel}, Stride: [2]int{1, o.stride()}, Padding: [2]int{0, o.Padding},
		Dilation: [2]int{1, max(o.Dilation, 1)}, CeilMode: o.CeilMode, CountIncludePad: o.CountIncludePad}
}

func (o Pool1dOptions) stride() int {
	if o.Stride == 0 {
		return o.Kernel
	}
	return o.Stride
}

// pool1d runs a 2-d pooling on x ([N, C, L] or [C, L]) seen as height-1
// images.
func pool1d(op string, x *autograd.Var, f func(*autograd.Var) *autograd.Var) *autograd.Var {
	if d := x.Dim(); d != 2 && d != 3 {
		panic(fmt.Sprintf("nn.%s.Forward: input shape %v must be [N, C, L] or [C, L]", op, x.Shape()))
	}
	return f(x.Unsqueeze(x.Dim() - 1)).Squeeze(x.Dim() - 1)
}

// MaxPool1d takes the maximum over sliding windows of [N, C, L] sequences,
// as torch.nn.MaxPool1d.
type MaxPool1d struct {
	Base
	Options Pool1dOptions
}

// NewMaxPool1d returns a 1-d max-pooling module.
func NewMaxPool1d(opt Pool1dOptions) *MaxPool1d {
	if opt.Kernel <= 0 {
		panic(fmt.Sprintf("nn.NewMaxPool1d: kernel size %d must be positive", opt.Kernel))
	}
	return &MaxPool1d{Options: opt}
}

// Forward pools x of shape [N, C, L] (or [C, L]).
func (p *MaxPool1d) Forward(x *autograd.Var) *autograd.Var {
	return pool1d("MaxPool1d", x, func(v *autograd.Var) *autograd.Var { return autograd.MaxPool2d(v, p.Options.to2d()) })
}

// String describes the module as PyTorch prints it.
func (p *MaxPool1d) String() string {
	o := p.Options
	return fmt.Sprintf("MaxPool1d(kernel_size=%d, stride=%d, padding=%d, dilation=%d, ceil_mode=%s)",
		o.Kernel, o.stride(), o.Padding, max(o.Dilation, 1), pyBool(o.CeilMode))
}

// AvgPool1d averages sliding windows of [N, C, L] sequences, as
// torch.nn.AvgPool1d.
type AvgPool1d struct {
	Base
	Options Pool1dOptions
}

// NewAvgPool1d returns a 1-d average-pooling module.
func NewAvgPool1d(opt Pool1dOptions) *AvgPool1d {
	if opt.Kernel <= 0 {
		panic(fmt.Sprintf("nn.NewAvgPool1d: kernel size %d must be positive", opt.Kernel))
	}
	if opt.Dilation > 1 {
		panic(fmt.Sprintf("nn.NewAvgPool1d: average pooling has no dilation, got %d", opt.Dilation))
	}
	return &AvgPool1d{Options: opt}
}

// Forward pools x of shape [N, C, L] (or [C, L]).
func (p *AvgPool1d) Forward(x *autograd.Var) *autograd.Var {
	o := p.Options.to2d()
	o.Dilation = [2]int{}
	return pool1d("AvgPool1d", x, func(v *autograd.Var) *autograd.Var { return autograd.AvgPool2d(v, o) })
}

// String describes the module as PyTorch prints it.
func (p *AvgPool1d) String() string {
	o := p.Options
	return fmt.Sprintf("AvgPool1d(kernel_size=(%d,), stride=(%d,), padding=(%d,))", o.Kernel, o.stride(), o.Padding)
}
