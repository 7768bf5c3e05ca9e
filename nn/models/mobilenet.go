package models

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// MobileNetV2Config configures MobileNetV2. The zero value is torchvision's
// default.
type MobileNetV2Config struct {
	// NumClasses is the size of the classifier output (0 means 1000).
	NumClasses int
	// WidthMult scales every layer's channels (0 means 1); channel counts are
	// rounded to multiples of 8 as torchvision's _make_divisible does.
	WidthMult float64
	// Dropout is the probability of the classifier's dropout (0 means
	// torchvision's 0.2; a negative value means no dropout).
	Dropout float64
}

// InvertedResidual is torchvision's MobileNetV2 block, registered as conv:
// an optional 1×1 expansion (conv.0: conv, batch norm, ReLU6), a 3×3
// depthwise convolution with batch norm and ReLU6, then a linear 1×1
// projection and batch norm. When the stride is 1 and the channel count is
// kept the input is added to the output.
type InvertedResidual struct {
	nn.Base
	Conv *nn.Sequential
	// UseResConnect reports whether the input is added to the output.
	UseResConnect bool
}

// MobileNetV2 is torchvision.models.MobileNetV2: features (a stem
// convolution, 17 InvertedResidual blocks and a final 1×1 convolution, each
// convolution followed by batch norm and ReLU6), global average pooling and
// classifier (Dropout, Linear). Its state dict has torchvision's names
// (features.0.0.weight, features.1.conv.0.0.weight, features.18.1.bias,
// classifier.1.weight, ...).
type MobileNetV2 struct {
	nn.Base
	Features   *nn.Sequential
	Classifier *nn.Sequential
}

// makeDivisible rounds v to the nearest multiple of divisor, at least
// divisor and never less than 90% of v (torchvision's _make_divisible).
func makeDivisible(v float64, divisor int) int {
	n := max(divisor, int(v+float64(divisor)/2)/divisor*divisor)
	if float64(n) < 0.9*v {
		n += divisor
	}
	return n
}

// convBNReLU6 is torchvision's Conv2dNormActivation with ReLU6: a k×k
// convolution without bias (padding (k-1)/2), batch norm and ReLU6.
func convBNReLU6(g *tensor.Generator, in, out, k, stride, groups int) *nn.Sequential {
	return nn.NewSequential(kaimingConv(g, in, out, k, stride, (k-1)/2, groups), batchNorm2d(out), nn.NewReLU6())
}

func newInvertedResidual(g *tensor.Generator, in, out, stride, expand int) *InvertedResidual {
	hidden := in * expand
	b := &InvertedResidual{Conv: nn.NewSequential(), UseResConnect: stride == 1 && in == out}
	if expand != 1 {
		b.Conv.Append(convBNReLU6(g, in, hidden, 1, 1, 1))
	}
	b.Conv.Append(convBNReLU6(g, hidden, hidden, 3, stride, hidden))
	b.Conv.Append(kaimingConv(g, hidden, out, 1, 1, 0, 1))
	b.Conv.Append(batchNorm2d(out))
	b.RegisterModule("conv", b.Conv)
	return b
}

// Forward applies the block to x of shape [N, C, H, W].
func (b *InvertedResidual) Forward(x *autograd.Var) *autograd.Var {
	y := nn.Call(b.Conv, x)
	if b.UseResConnect {
		return x.Add(y)
	}
	return y
}

// NewMobileNetV2 returns torchvision's mobilenet_v2, initialized as
// torchvision: convolutions from kaiming_normal_(mode="fan_out"), batch
// norms at weight 1 and bias 0, the classifier's Linear from N(0, 0.01²)
// with a zero bias, all drawn from g (which also draws the dropout masks).
func NewMobileNetV2(g *tensor.Generator, cfg MobileNetV2Config) *MobileNetV2 {
	width := cfg.WidthMult
	if width == 0 {
		width = 1
	}
	if width < 0 {
		panic(fmt.Sprintf("models.NewMobileNetV2: WidthMult %g must be positive", width))
	}
	dropout := cfg.Dropout
	if dropout == 0 {
		dropout = 0.2
	}
	dropout = max(dropout, 0)
	// Expansion t, output channels c, repeats n, first stride s.
	setting := [][4]int{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}}
	in := makeDivisible(32*width, 8)
	last := makeDivisible(1280*max(1, width), 8)
	feats := nn.NewSequential(convBNReLU6(g, 3, in, 3, 2, 1))
	for _, s := range setting {
		out := makeDivisible(float64(s[1])*width, 8)
		for i := range s[2] {
			stride := 1
			if i == 0 {
				stride = s[3]
			}
			feats.Append(newInvertedResidual(g, in, out, stride, s[0]))
			in = out
		}
	}
	feats.Append(convBNReLU6(g, in, last, 1, 1, 1))
	m := &MobileNetV2{
		Features:   feats,
		Classifier: nn.NewSequential(nn.NewDropout(dropout, g), normalLinear(g, last, orDefault(cfg.NumClasses, 1000), 0.01, true)),
	}
	m.RegisterModule("features", m.Features)
	m.RegisterModule("classifier", m.Classifier)
	return m
}

// Forward maps images x of shape [N, 3, H, W] to logits [N, NumClasses].
func (m *MobileNetV2) Forward(x *autograd.Var) *autograd.Var {
	x = nn.Call(m.Features, x).Mean([]int{2, 3}, false)
	return nn.Call(m.Classifier, x)
}
