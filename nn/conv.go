package nn

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Conv2d is a 2-d convolution over NCHW images, as torch.nn.Conv2d. Weight
// has shape [out, in/groups, kh, kw] and Bias [out] (nil without bias).
type Conv2d struct {
	Base
	InChannels, OutChannels int
	Kernel                  [2]int
	Options                 tensor.Conv2dOptions
	// PaddingMode is PyTorch's padding_mode: the zero value
	// tensor.PadConstant is "zeros"; PadReflect, PadReplicate and
	// PadCircular pad the input explicitly by Options.Padding first.
	PaddingMode  tensor.PadMode
	Weight, Bias *autograd.Var

	packs convPackCache
}

// convPackCache holds the weight packed for inference, so forward passes
// that record no gradient skip repacking it (and recomputing its Winograd
// transforms) on every call. An entry is current while Weight holds the
// same tensor at the same storage version: in-place writes (optimizer
// steps, CopyFrom, LoadStateDict, ToDevice) bump the version.
type convPackCache struct {
	cur atomic.Pointer[convPack]
	mu  sync.Mutex // serializes packing, so concurrent misses pack once
}

// convPack is one packed weight and what it was packed from: the weight
// alone (fold zero), or with a batch norm folded in (fold.bn set), in
// which case shift is the bias that goes with the scaled weight.
type convPack struct {
	w       *tensor.Tensor
	version uint64
	fold    bnFoldKey
	packed  *tensor.PackedConv2dWeight
	shift   *tensor.Tensor
}

// get returns w packed for groups, packing it if the cached entry is stale.
func (c *convPackCache) get(w *tensor.Tensor, groups int) *tensor.PackedConv2dWeight {
	return c.lookup(w, bnFoldKey{}, func() (*tensor.PackedConv2dWeight, *tensor.Tensor) {
		return tensor.PackConv2dWeight(w, groups), nil
	}).packed
}

// lookup returns the entry for w at its current version and fold, making
// it with pack when the cached one is stale. One entry is kept, so a
// convolution used both alone and with a folded batch norm repacks when it
// alternates (no model does).
func (c *convPackCache) lookup(w *tensor.Tensor, fold bnFoldKey, pack func() (*tensor.PackedConv2dWeight, *tensor.Tensor)) *convPack {
	if p := c.cur.Load(); p != nil && p.w == w && p.version == w.Version() && p.fold == fold {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := w.Version()
	if p := c.cur.Load(); p != nil && p.w == w && p.version == v && p.fold == fold {
		return p
	}
	p := &convPack{w: w, version: v, fold: fold}
	p.packed, p.shift = pack()
	c.cur.Store(p)
	return p
}

// NewConv2d returns a convolution from in to out channels with the given
// kernel size (height, width) and options (stride, padding, dilation,
// groups; zero values are PyTorch's defaults), with a bias when bias is
// true. Weight and bias are drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// fan_in = in/groups·kh·kw, using g, as PyTorch initializes them. The
// parameters are Float32 unless a dtype is given.
func NewConv2d(g *tensor.Generator, in, out int, kernel [2]int, opt tensor.Conv2dOptions, bias bool, dt ...tensor.DType) *Conv2d {
	groups := max(opt.Groups, 1)
	switch {
	case in <= 0 || out <= 0:
		panic(fmt.Sprintf("nn.NewConv2d: channel counts must be positive, got in=%d out=%d", in, out))
	case kernel[0] <= 0 || kernel[1] <= 0:
		panic(fmt.Sprintf("nn.NewConv2d: kernel size %v must be positive", kernel))
	case opt.Groups < 0 || in%groups != 0 || out%groups != 0:
		panic(fmt.Sprintf("nn.NewConv2d: groups=%d must divide in=%d and out=%d", opt.Groups, in, out))
	}
	d := pickDType(dt)
	c := &Conv2d{InChannels: in, OutChannels: out, Kernel: kernel, Options: opt}
	fanIn := in / groups * kernel[0] * kernel[1]
	c.Weight = c.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewConv2d", []int{out, in / groups, kernel[0], kernel[1]}, fanIn, d)))
	if bias {
		c.Bias = c.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewConv2d", []int{out}, fanIn, d)))
	}
	return c
}

// Forward convolves x of shape [N, in, H, W] (or [in, H, W]). When nothing
// is recorded (autograd.NeedsGrad: x and the parameters do not require a
// gradient, or x is marked autograd.NoGrad) and x and
// Weight are float32 on the CPU, it uses a packed copy of Weight made on
// the first such call and kept until Weight is replaced or written in
// place; writes through HostData slices must call tensor.MarkWritten.
func (c *Conv2d) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if (len(s) != 4 && len(s) != 3) || s[len(s)-3] != c.InChannels {
		panic(fmt.Sprintf("nn.Conv2d.Forward: input shape %v must be [N, %d, H, W] or [%d, H, W]", s, c.InChannels, c.InChannels))
	}
	opt := c.Options
	if c.PaddingMode != tensor.PadConstant {
		x = padForConv(x, c.PaddingMode, opt.Padding[:]...)
		opt.Padding = [2]int{}
	}
	if w := c.Weight.Value(); !autograd.NeedsGrad(x, c.Weight, c.Bias) &&
		w.DType() == tensor.Float32 && w.Device() == tensor.CPU && x.Value().DType() == tensor.Float32 && x.Value().Device() == tensor.CPU {
		// Nothing is recorded, so the cached packed weight can stand in
		// for the autograd op.
		var b *tensor.Tensor
		if c.Bias != nil {
			b = c.Bias.Value()
		}
		return autograd.UnrecordedOp("Conv2d", func() *tensor.Tensor {
			return tensor.Conv2dPacked(x.Value(), c.packs.get(w, max(opt.Groups, 1)), b, opt, nil, false)
		}, x, c.Weight, c.Bias)
	}
	return autograd.Conv2d(x, c.Weight, c.Bias, opt)
}

// String describes the layer as PyTorch prints it.
func (c *Conv2d) String() string {
	o := c.Options
	s := fmt.Sprintf("Conv2d(%d, %d, kernel_size=(%d, %d), stride=(%d, %d)", c.InChannels, c.OutChannels,
		c.Kernel[0], c.Kernel[1], max(o.Stride[0], 1), max(o.Stride[1], 1))
	if o.Padding != [2]int{} {
		s += fmt.Sprintf(", padding=(%d, %d)", o.Padding[0], o.Padding[1])
	}
	if o.Dilation != [2]int{} && o.Dilation != [2]int{1, 1} {
		s += fmt.Sprintf(", dilation=(%d, %d)", max(o.Dilation[0], 1), max(o.Dilation[1], 1))
	}
	if o.Groups > 1 {
		s += fmt.Sprintf(", groups=%d", o.Groups)
	}
	if c.Bias == nil {
		s += ", bias=False"
	}
	return s + paddingModeRepr(c.PaddingMode) + ")"
}

// MaxPool2d takes the maximum over sliding windows of NCHW images, as
// torch.nn.MaxPool2d. Options.Kernel is required; a zero Stride means the
// kernel size.
type MaxPool2d struct {
	Base
	Options tensor.Pool2dOptions
}

// NewMaxPool2d returns a max-pooling module.
func NewMaxPool2d(opt tensor.Pool2dOptions) *MaxPool2d {
	if opt.Kernel[0] <= 0 || opt.Kernel[1] <= 0 {
		panic(fmt.Sprintf("nn.NewMaxPool2d: kernel size %v must be positive", opt.Kernel))
	}
	return &MaxPool2d{Options: opt}
}

// Forward pools x of shape [N, C, H, W] (or [C, H, W]).
func (p *MaxPool2d) Forward(x *autograd.Var) *autograd.Var { return autograd.MaxPool2d(x, p.Options) }

// String describes the module.
func (p *MaxPool2d) String() string {
	o := p.Options
	stride := o.Stride
	if stride == [2]int{} {
		stride = o.Kernel
	}
	dilation := o.Dilation
	if dilation == [2]int{} {
		dilation = [2]int{1, 1}
	}
	return fmt.Sprintf("MaxPool2d(kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s)",
		pyPair(o.Kernel), pyPair(stride), pyPair(o.Padding), pyPair(dilation), pyBool(o.CeilMode))
}

// Softmax normalizes exp(x) along Axis, as torch.nn.Softmax(dim).
type Softmax struct {
	Base
	Axis int
}

// NewSoftmax returns a softmax module over axis.
func NewSoftmax(axis int) *Softmax { return &Softmax{Axis: axis} }

// Forward applies the softmax.
func (s *Softmax) Forward(x *autograd.Var) *autograd.Var { return autograd.Softmax(x, s.Axis) }

// LogSoftmax is log(softmax(x)) along Axis, computed stably, as
// torch.nn.LogSoftmax(dim).
type LogSoftmax struct {
	Base
	Axis int
}

// NewLogSoftmax returns a log-softmax module over axis.
func NewLogSoftmax(axis int) *LogSoftmax { return &LogSoftmax{Axis: axis} }

// Forward applies the log-softmax.
func (s *LogSoftmax) Forward(x *autograd.Var) *autograd.Var { return autograd.LogSoftmax(x, s.Axis) }
