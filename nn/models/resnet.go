package models

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// ResNetConfig configures the ResNet constructors. The zero value is
// torchvision's default.
type ResNetConfig struct {
	// NumClasses is the size of the fc output (0 means 1000).
	NumClasses int
	// ZeroInitResidual starts the last batch norm of every residual block
	// at weight 0, so each block begins as the identity
	// (torchvision's zero_init_residual=True).
	ZeroInitResidual bool
}

// BasicBlock is torchvision's two-convolution residual block of ResNet-18
// and ResNet-34: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the
// shortcut being Downsample (registered as downsample.0 conv and
// downsample.1 batch norm) when the shape changes, else the identity.
type BasicBlock struct {
	nn.Base
	Conv1, Conv2 *nn.Conv2d
	BN1, BN2     *nn.BatchNorm
	// Downsample is nil when the block keeps its input's shape.
	Downsample *nn.Sequential
	relu       *nn.ReLU
}

// Bottleneck is torchvision's three-convolution residual block of
// ResNet-50 (version 1.5: the stride is on the 3×3 conv2): 1×1 conv1
// reduces to the block's width, 3×3 conv2, 1×1 conv3 expands by 4, each
// followed by a batch norm; the shortcut is as BasicBlock's.
type Bottleneck struct {
	nn.Base
	Conv1, Conv2, Conv3 *nn.Conv2d
	BN1, BN2, BN3       *nn.BatchNorm
	// Downsample is nil when the block keeps its input's shape.
	Downsample *nn.Sequential
	relu       *nn.ReLU
}

// ResNet is torchvision.models.ResNet: a 7×7 stride-2 stem (conv1, bn1,
// relu, 3×3 stride-2 max pool), four stages layer1..layer4 of residual
// blocks, global average pooling and the fc classifier. Its state dict has
// torchvision's names (conv1.weight, bn1.running_mean,
// layer2.0.downsample.0.weight, fc.bias, ...).
type ResNet struct {
	nn.Base
	Conv1                          *nn.Conv2d
	BN1                            *nn.BatchNorm
	MaxPool                        *nn.MaxPool2d
	Layer1, Layer2, Layer3, Layer4 *nn.Sequential
	AvgPool                        *nn.AdaptiveAvgPool2d
	FC                             *nn.Linear
	relu                           *nn.ReLU
}

// downsample returns the 1×1 convolution and batch norm of a projection
// shortcut, or nil when none is needed.
func downsample(g *tensor.Generator, in, out, stride int) *nn.Sequential {
	if stride == 1 && in == out {
		return nil
	}
	return nn.NewSequential(kaimingConv(g, in, out, 1, stride, 0, 1), batchNorm2d(out))
}

func newBasicBlock(g *tensor.Generator, in, planes, stride int, zeroInit bool) *BasicBlock {
	b := &BasicBlock{
		Conv1: kaimingConv(g, in, planes, 3, stride, 1, 1),
		BN1:   batchNorm2d(planes),
		Conv2: kaimingConv(g, planes, planes, 3, 1, 1, 1),
		BN2:   batchNorm2d(planes),
		relu:  nn.NewReLU(),
	}
	b.RegisterModule("conv1", b.Conv1)
	b.RegisterModule("bn1", b.BN1)
	b.RegisterModule("relu", b.relu)
	b.RegisterModule("conv2", b.Conv2)
	b.RegisterModule("bn2", b.BN2)
	if b.Downsample = downsample(g, in, planes, stride); b.Downsample != nil {
		b.RegisterModule("downsample", b.Downsample)
	}
	if zeroInit {
		nn.Zeros(b.BN2.Weight.Value())
	}
	return b
}

// Forward applies the block to x of shape [N, C, H, W].
// Each convolution and its batch norm go through nn.Conv2d.ForwardBatchNorm,
// which folds the norm into the convolution in no-grad evaluation.
func (b *BasicBlock) Forward(x *autograd.Var) *autograd.Var {
	out := b.Conv1.ForwardBatchNorm(x, b.BN1, nil, b.relu)
	return b.Conv2.ForwardBatchNorm(out, b.BN2, shortcut(b.Downsample, x), b.relu)
}

func newBottleneck(g *tensor.Generator, in, planes, stride int, zeroInit bool) *Bottleneck {
	out := planes * 4
	b := &Bottleneck{
		Conv1: kaimingConv(g, in, planes, 1, 1, 0, 1),
		BN1:   batchNorm2d(planes),
		Conv2: kaimingConv(g, planes, planes, 3, stride, 1, 1),
		BN2:   batchNorm2d(planes),
		Conv3: kaimingConv(g, planes, out, 1, 1, 0, 1),
		BN3:   batchNorm2d(out),
		relu:  nn.NewReLU(),
	}
	b.RegisterModule("conv1", b.Conv1)
	b.RegisterModule("bn1", b.BN1)
	b.RegisterModule("conv2", b.Conv2)
	b.RegisterModule("bn2", b.BN2)
	b.RegisterModule("conv3", b.Conv3)
	b.RegisterModule("bn3", b.BN3)
	b.RegisterModule("relu", b.relu)
	if b.Downsample = downsample(g, in, out, stride); b.Downsample != nil {
		b.RegisterModule("downsample", b.Downsample)
	}
	if zeroInit {
		nn.Zeros(b.BN3.Weight.Value())
	}
	return b
}

// Forward applies the block to x of shape [N, C, H, W].
// The convolutions fold their batch norms as BasicBlock's do.
func (b *Bottleneck) Forward(x *autograd.Var) *autograd.Var {
	out := b.Conv1.ForwardBatchNorm(x, b.BN1, nil, b.relu)
	out = b.Conv2.ForwardBatchNorm(out, b.BN2, nil, b.relu)
	return b.Conv3.ForwardBatchNorm(out, b.BN3, shortcut(b.Downsample, x), b.relu)
}

// shortcut returns x through the projection ds (its convolution folding
// its batch norm when it can), or x itself when ds is nil. A Sequential
// that holds other modules than downsample's conv and batch norm, or that
// has forward hooks, is called as it is.
func shortcut(ds *nn.Sequential, x *autograd.Var) *autograd.Var {
	if ds == nil {
		return x
	}
	if ds.Len() == 2 && !nn.HasForwardHooks(ds) {
		if c, ok := ds.At(0).(*nn.Conv2d); ok {
			if bn, ok := ds.At(1).(*nn.BatchNorm); ok {
				return c.ForwardBatchNorm(x, bn, nil, nil)
			}
		}
	}
	return nn.Call(ds, x)
}

// ResNet18 returns torchvision's resnet18 (BasicBlock, [2, 2, 2, 2]).
func ResNet18(g *tensor.Generator, cfg ResNetConfig) *ResNet {
	return NewResNet(g, false, [4]int{2, 2, 2, 2}, cfg)
}

// ResNet34 returns torchvision's resnet34 (BasicBlock, [3, 4, 6, 3]).
func ResNet34(g *tensor.Generator, cfg ResNetConfig) *ResNet {
	return NewResNet(g, false, [4]int{3, 4, 6, 3}, cfg)
}

// ResNet50 returns torchvision's resnet50 (Bottleneck, [3, 4, 6, 3]).
func ResNet50(g *tensor.Generator, cfg ResNetConfig) *ResNet {
	return NewResNet(g, true, [4]int{3, 4, 6, 3}, cfg)
}

// NewResNet returns a ResNet with the given number of blocks per stage,
// Bottleneck blocks when bottleneck is true and BasicBlocks otherwise.
// It is initialized as torchvision: every convolution from
// kaiming_normal_(mode="fan_out", nonlinearity="relu"), batch norms at
// weight 1 and bias 0, fc with nn.Linear's default, all drawn from g.
func NewResNet(g *tensor.Generator, bottleneck bool, layers [4]int, cfg ResNetConfig) *ResNet {
	for i, n := range layers {
		if n < 1 {
			panic(fmt.Sprintf("models.NewResNet: stage %d has %d blocks; every stage needs at least 1", i+1, n))
		}
	}
	expansion := 1
	if bottleneck {
		expansion = 4
	}
	m := &ResNet{
		Conv1:   kaimingConv(g, 3, 64, 7, 2, 3, 1),
		BN1:     batchNorm2d(64),
		MaxPool: nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}),
		AvgPool: nn.NewAdaptiveAvgPool2d(1, 1),
		relu:    nn.NewReLU(),
	}
	inplanes := 64
	stage := func(planes, blocks, stride int) *nn.Sequential {
		s := nn.NewSequential()
		for i := range blocks {
			st := 1
			if i == 0 {
				st = stride
			}
			if bottleneck {
				s.Append(newBottleneck(g, inplanes, planes, st, cfg.ZeroInitResidual))
			} else {
				s.Append(newBasicBlock(g, inplanes, planes, st, cfg.ZeroInitResidual))
			}
			inplanes = planes * expansion
		}
		return s
	}
	m.Layer1 = stage(64, layers[0], 1)
	m.Layer2 = stage(128, layers[1], 2)
	m.Layer3 = stage(256, layers[2], 2)
	m.Layer4 = stage(512, layers[3], 2)
	m.FC = nn.NewLinear(g, 512*expansion, orDefault(cfg.NumClasses, 1000), true)
	m.RegisterModule("conv1", m.Conv1)
	m.RegisterModule("bn1", m.BN1)
	m.RegisterModule("relu", m.relu)
	m.RegisterModule("maxpool", m.MaxPool)
	m.RegisterModule("layer1", m.Layer1)
	m.RegisterModule("layer2", m.Layer2)
	m.RegisterModule("layer3", m.Layer3)
	m.RegisterModule("layer4", m.Layer4)
	m.RegisterModule("avgpool", m.AvgPool)
	m.RegisterModule("fc", m.FC)
	return m
}

// Forward maps images x of shape [N, 3, H, W] to logits [N, NumClasses].
// H and W of at least 32 keep every stage non-empty.
func (m *ResNet) Forward(x *autograd.Var) *autograd.Var {
	x = nn.Call(m.MaxPool, m.Conv1.ForwardBatchNorm(x, m.BN1, nil, m.relu))
	x = nn.Call(m.Layer4, nn.Call(m.Layer3, nn.Call(m.Layer2, nn.Call(m.Layer1, x))))
	return nn.Call(m.FC, nn.Call(m.AvgPool, x).Flatten(1, -1))
}
