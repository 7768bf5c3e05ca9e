package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// More pooling layers: AdaptiveAvgPool1d, AdaptiveMaxPool1d, LPPool1d,
// LPPool2d and MaxUnpool2d.

// AdaptiveAvgPool1d averages [N, C, L] sequences down to OutputSize
// positions with PyTorch's adaptive windows, as torch.nn.AdaptiveAvgPool1d.
type AdaptiveAvgPool1d struct {
	Base
	OutputSize int
}

// NewAdaptiveAvgPool1d returns a 1-d adaptive average-pooling module.
func NewAdaptiveAvgPool1d(outputSize int) *AdaptiveAvgPool1d {
	if outputSize <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveAvgPool1d: output size %d must be positive", outputSize))
	}
	return &AdaptiveAvgPool1d{OutputSize: outputSize}
}

// Forward pools x of shape [N, C, L] (or [C, L]).
func (p *AdaptiveAvgPool1d) Forward(x *autograd.Var) *autograd.Var {
	return pool1d("AdaptiveAvgPool1d", x, func(v *autograd.Var) *autograd.Var { return autograd.AdaptiveAvgPool2d(v, 1, p.OutputSize) })
}

// String describes the module as PyTorch prints it.
func (p *AdaptiveAvgPool1d) String() string {
	return fmt.Sprintf("AdaptiveAvgPool1d(output_size=%d)", p.OutputSize)
}

// AdaptiveMaxPool1d takes maxima of [N, C, L] sequences over PyTorch's
// adaptive windows, giving OutputSize positions, as
// torch.nn.AdaptiveMaxPool1d.
type AdaptiveMaxPool1d struct {
	Base
	OutputSize int
}

// NewAdaptiveMaxPool1d returns a 1-d adaptive max-pooling module.
func NewAdaptiveMaxPool1d(outputSize int) *AdaptiveMaxPool1d {
	if outputSize <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveMaxPool1d: output size %d must be positive", outputSize))
	}
	return &AdaptiveMaxPool1d{OutputSize: outputSize}
}

// Forward pools x of shape [N, C, L] (or [C, L]).
func (p *AdaptiveMaxPool1d) Forward(x *autograd.Var) *autograd.Var {
	return pool1d("AdaptiveMaxPool1d", x, func(v *autograd.Var) *autograd.Var { return autograd.AdaptiveMaxPool2d(v, 1, p.OutputSize) })
}

// String describes the module as PyTorch prints it.
func (p *AdaptiveMaxPool1d) String() string {
	return fmt.Sprintf("AdaptiveMaxPool1d(output_size=%d)", p.OutputSize)
}

// lpPool computes PyTorch's power-average pooling of v (4-d): the
// average pool (count_include_pad, no padding) of v^p, times the kernel
// area, to the power 1/p. For a window inside the input that is the
// p-norm of the window.
func lpPool(v *autograd.Var, p float64, opt tensor.Pool2dOptions) *autograd.Var {
	area := float64(opt.Kernel[0] * opt.Kernel[1])
	opt.CountIncludePad = true
	return autograd.AvgPool2d(v.PowScalar(p), opt).MulScalar(area).PowScalar(1 / p)
}

// checkLP panics unless the norm type is positive.
func checkLP(op string, p float64) {
	if !(p > 0) {
		panic(fmt.Sprintf("nn.%s: norm type %g must be positive", op, p))
	}
}

// LPPool1d is power-average pooling of [N, C, L] sequences, as
// torch.nn.LPPool1d: each output is (Σ x^p)^(1/p) over a window of Kernel
// positions (with CeilMode, an overhanging window's sum is scaled as
// PyTorch's does). A zero Stride means the kernel size.
type LPPool1d struct {
	Base
	NormType       float64
	Kernel, Stride int
	CeilMode       bool
}

// NewLPPool1d returns a 1-d power-average pooling module.
func NewLPPool1d(normType float64, kernel, stride int, ceilMode bool) *LPPool1d {
	checkLP("NewLPPool1d", normType)
	if kernel <= 0 || stride < 0 {
		panic(fmt.Sprintf("nn.NewLPPool1d: kernel size %d must be positive and stride %d non-negative", kernel, stride))
	}
	return &LPPool1d{NormType: normType, Kernel: kernel, Stride: stride, CeilMode: ceilMode}
}

// Forward pools x of shape [N, C, L] (or [C, L]).
func (p *LPPool1d) Forward(x *autograd.Var) *autograd.Var {
	stride := p.Stride
	if stride == 0 {
		stride = p.Kernel
	}
	opt := tensor.Pool2dOptions{Kernel: [2]int{1, p.Kernel}, Stride: [2]int{1, stride}, CeilMode: p.CeilMode}
	return pool1d("LPPool1d", x, func(v *autograd.Var) *autograd.Var { return lpPool(v, p.NormType, opt) })
}

// String describes the module as PyTorch prints it.
func (p *LPPool1d) String() string {
	stride := "None"
	if p.Stride != 0 {
		stride = fmt.Sprint(p.Stride)
	}
	return fmt.Sprintf("LPPool1d(norm_type=%g, kernel_size=%d, stride=%s, ceil_mode=%s)", p.NormType, p.Kernel, stride, pyBool(p.CeilMode))
}

// LPPool2d is power-average pooling of NCHW images, as torch.nn.LPPool2d:
// each output is (Σ x^p)^(1/p) over a Kernel window. A zero Stride means
// the kernel size.
type LPPool2d struct {
	Base
	NormType       float64
	Kernel, Stride [2]int
	CeilMode       bool
}

// NewLPPool2d returns a 2-d power-average pooling module.
func NewLPPool2d(normType float64, kernel, stride [2]int, ceilMode bool) *LPPool2d {
	checkLP("NewLPPool2d", normType)
	if kernel[0] <= 0 || kernel[1] <= 0 || stride[0] < 0 || stride[1] < 0 {
		panic(fmt.Sprintf("nn.NewLPPool2d: kernel size %v must be positive and stride %v non-negative", kernel, stride))
	}
	return &LPPool2d{NormType: normType, Kernel: kernel, Stride: stride, CeilMode: ceilMode}
}

// Forward pools x of shape [N, C, H, W] (or [C, H, W]).
func (p *LPPool2d) Forward(x *autograd.Var) *autograd.Var {
	if d := x.Dim(); d != 3 && d != 4 {
		panic(fmt.Sprintf("nn.LPPool2d.Forward: input shape %v must be [N, C, H, W] or [C, H, W]", x.Shape()))
	}
	return lpPool(x, p.NormType, tensor.Pool2dOptions{Kernel: p.Kernel, Stride: p.Stride, CeilMode: p.CeilMode})
}

// String describes the module as PyTorch prints it.
func (p *LPPool2d) String() string {
	stride := "None"
	if p.Stride != [2]int{} {
		stride = pyPair(p.Stride)
	}
	return fmt.Sprintf("LPPool2d(norm_type=%g, kernel_size=%s, stride=%s, ceil_mode=%s)", p.NormType, pyPair(p.Kernel), stride, pyBool(p.CeilMode))
}

// MaxUnpool2d is the partial inverse of a MaxPool2d, as
// torch.nn.MaxUnpool2d: it places each pooled value at the position its
// index (from autograd.MaxPool2dWithIndices) names in a zero image. A
// zero Stride means the kernel size.
type MaxUnpool2d struct {
	Base
	Kernel, Stride, Padding [2]int
}

// NewMaxUnpool2d returns a max-unpooling module for a MaxPool2d with the
// given kernel, stride and padding.
func NewMaxUnpool2d(kernel, stride, padding [2]int) *MaxUnpool2d {
	if kernel[0] <= 0 || kernel[1] <= 0 {
		panic(fmt.Sprintf("nn.NewMaxUnpool2d: kernel size %v must be positive", kernel))
	}
	if stride == [2]int{} {
		stride = kernel
	}
	return &MaxUnpool2d{Kernel: kernel, Stride: stride, Padding: padding}
}

// Forward panics: MaxUnpool2d needs the pooling indices; call Forward2 or
// Unpool.
func (u *MaxUnpool2d) Forward(*autograd.Var) *autograd.Var {
	panic("nn.MaxUnpool2d.Forward: MaxUnpool2d takes the pooled values and their indices; call Forward2(x, indices) or Unpool")
}

// Forward2 unpools x ([N, C, H, W] or [C, H, W]) with the Int64 indices
// (a Var of the same shape) to the default output size
// (H−1)·stride − 2·padding + kernel per axis.
func (u *MaxUnpool2d) Forward2(x, indices *autograd.Var) *autograd.Var {
	return u.Unpool(x, indices.Value())
}

// Unpool unpools x ([N, C, H, W] or [C, H, W]) with the Int64 indices of
// the same shape. outputSize, when given, is the (height, width) of the
// result (PyTorch's output_size, for pooling that dropped rows or
// columns); otherwise it is (H−1)·stride − 2·padding + kernel per axis.
func (u *MaxUnpool2d) Unpool(x *autograd.Var, indices *tensor.Tensor, outputSize ...int) *autograd.Var {
	s := x.Shape()
	if len(s) != 3 && len(s) != 4 {
		panic(fmt.Sprintf("nn.MaxUnpool2d.Unpool: input shape %v must be [N, C, H, W] or [C, H, W]", s))
	}
	h, w := s[len(s)-2], s[len(s)-1]
	oh := (h-1)*u.Stride[0] - 2*u.Padding[0] + u.Kernel[0]
	ow := (w-1)*u.Stride[1] - 2*u.Padding[1] + u.Kernel[1]
	switch len(outputSize) {
	case 0:
	case 2:
		oh, ow = outputSize[0], outputSize[1]
	default:
		panic(fmt.Sprintf("nn.MaxUnpool2d.Unpool: output size %v must be (height, width)", outputSize))
	}
	return autograd.MaxUnpool2d(x, indices, oh, ow)
}

// String describes the module as PyTorch prints it.
func (u *MaxUnpool2d) String() string {
	return fmt.Sprintf("MaxUnpool2d(kernel_size=%s, stride=%s, padding=%s)", pyShape(u.Kernel[:]), pyShape(u.Stride[:]), pyShape(u.Padding[:]))
}
