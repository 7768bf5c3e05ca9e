package models

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// VGGConfig configures the VGG constructors. The zero value is
// torchvision's default.
type VGGConfig struct {
	// NumClasses is the size of the classifier output (0 means 1000).
	NumClasses int
	// BatchNorm inserts a BatchNorm2d after every convolution (the _bn
	// variants).
	BatchNorm bool
	// Dropout is the probability of the classifier's two dropouts (0 means
	// torchvision's 0.5; a negative value means no dropout).
	Dropout float64
}

// VGG is torchvision.models.VGG: features (3×3 convolutions with padding 1,
// each followed by ReLU, or by BatchNorm2d and ReLU in the batch-norm
// variants, and 2×2 max pools), a 7×7 adaptive average pool and classifier
// (Linear 25088→4096, ReLU, Dropout, Linear 4096→4096, ReLU, Dropout,
// Linear 4096→NumClasses). Its state dict has torchvision's names
// (features.0.weight, classifier.6.bias, ...).
type VGG struct {
	nn.Base
	Features   *nn.Sequential
	AvgPool    *nn.AdaptiveAvgPool2d
	Classifier *nn.Sequential
}

// vggPool marks a max pool in a VGG layout.
const vggPool = -1

// VGG11 returns torchvision's vgg11 (configuration "A"), or vgg11_bn with
// cfg.BatchNorm.
func VGG11(g *tensor.Generator, cfg VGGConfig) *VGG {
	return NewVGG(g, []int{64, vggPool, 128, vggPool, 256, 256, vggPool, 512, 512, vggPool, 512, 512, vggPool}, cfg)
}

// VGG16 returns torchvision's vgg16 (configuration "D"), or vgg16_bn with
// cfg.BatchNorm.
func VGG16(g *tensor.Generator, cfg VGGConfig) *VGG {
	return NewVGG(g, []int{64, 64, vggPool, 128, 128, vggPool, 256, 256, 256, vggPool, 512, 512, 512, vggPool, 512, 512, 512, vggPool}, cfg)
}

// NewVGG returns a VGG whose features follow layout: a positive entry is a
// 3×3 convolution to that many channels, -1 a 2×2 max pool (torchvision's
// "M"). The last convolution must have 512 channels, as the classifier
// expects 512·7·7 features. It is initialized as torchvision: convolutions
// from kaiming_normal_(mode="fan_out", nonlinearity="relu") with zero
// biases, batch norms at weight 1 and bias 0, Linear weights from
// N(0, 0.01²) with zero biases, all drawn from g (which also draws the
// dropout masks).
func NewVGG(g *tensor.Generator, layout []int, cfg VGGConfig) *VGG {
	last := 0
	for _, v := range layout {
		if v != vggPool && v < 1 {
			panic(fmt.Sprintf("models.NewVGG: layout %v: entries must be channel counts >= 1 or -1 (max pool)", layout))
		}
		if v != vggPool {
			last = v
		}
	}
	if last != 512 {
		panic(fmt.Sprintf("models.NewVGG: layout %v must end its convolutions with 512 channels (the classifier takes 512·7·7 features)", layout))
	}
	feats := nn.NewSequential()
	in := 3
	for _, v := range layout {
		if v == vggPool {
			feats.Append(nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}))
			continue
		}
		c := nn.NewConv2d(g, in, v, [2]int{3, 3}, convOpts(1, 1, 1), true)
		nn.KaimingNormal(g, c.Weight.Value(), 0, nn.FanOut, "relu")
		nn.Zeros(c.Bias.Value())
		feats.Append(c)
		if cfg.BatchNorm {
			feats.Append(batchNorm2d(v))
		}
		feats.Append(nn.NewReLU())
		in = v
	}
	p := cfg.Dropout
	if p == 0 {
		p = 0.5
	}
	p = max(p, 0)
	m := &VGG{
		Features: feats,
		AvgPool:  nn.NewAdaptiveAvgPool2d(7, 7),
		Classifier: nn.NewSequential(
			normalLinear(g, 512*7*7, 4096, 0.01, true), nn.NewReLU(), nn.NewDropout(p, g),
			normalLinear(g, 4096, 4096, 0.01, true), nn.NewReLU(), nn.NewDropout(p, g),
			normalLinear(g, 4096, orDefault(cfg.NumClasses, 1000), 0.01, true),
		),
	}
	m.RegisterModule("features", m.Features)
	m.RegisterModule("avgpool", m.AvgPool)
	m.RegisterModule("classifier", m.Classifier)
	return m
}

// Forward maps images x of shape [N, 3, H, W] (H, W at least 32) to logits
// [N, NumClasses].
func (m *VGG) Forward(x *autograd.Var) *autograd.Var {
	x = nn.Call(m.AvgPool, nn.Call(m.Features, x)).Flatten(1, -1)
	return nn.Call(m.Classifier, x)
}
