package main

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// resnet is torchvision's ResNet (v1.5: the stride of a bottleneck block
// sits on its 3×3 convolution) with randomly initialized weights, as
// torchvision.models.resnet18/resnet50(weights=None): conv 7×7/2, batch
// norm, ReLU, max pool 3×3/2, four stages of residual blocks, global
// average pool and a 1000-way linear layer.
type resnet struct {
	nn.Base
	conv1  *nn.Conv2d
	bn1    *nn.BatchNorm
	blocks []*resBlock
	fc     *nn.Linear
}

// resBlock is a BasicBlock (two 3×3 convolutions) or, with bottleneck, a
// Bottleneck (1×1, 3×3, 1×1 with 4× expansion); down is the 1×1
// projection of the shortcut when the shape changes.
type resBlock struct {
	nn.Base
	convs   []*nn.Conv2d
	bns     []*nn.BatchNorm
	down    *nn.Conv2d
	downBN  *nn.BatchNorm
	residue bool
}

// Forward maps [N, in, H, W] to [N, out, H/stride, W/stride].
// Each convolution and its batch norm (with the residual and ReLU after
// the last) go through nn.Conv2d.ForwardBatchNorm, as models.ResNet's do:
// folded into one pass in no-grad evaluation, separate calls otherwise.
func (b *resBlock) Forward(x *autograd.Var) *autograd.Var {
	h, relu := x, nn.NewReLU()
	for i, c := range b.convs[:len(b.convs)-1] {
		h = c.ForwardBatchNorm(h, b.bns[i], nil, relu)
	}
	short := x
	if b.down != nil {
		short = b.down.ForwardBatchNorm(x, b.downBN, nil, nil)
	}
	last := len(b.convs) - 1
	return b.convs[last].ForwardBatchNorm(h, b.bns[last], short, relu)
}

func convBN(g *tensor.Generator, in, out, k, stride int) (*nn.Conv2d, *nn.BatchNorm) {
	c := nn.NewConv2d(g, in, out, [2]int{k, k}, tensor.Conv2dOptions{
		Stride: [2]int{stride, stride}, Padding: [2]int{k / 2, k / 2},
	}, false)
	// torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu").
	nn.KaimingNormal(g, c.Weight.Value(), 0, nn.FanOut, "relu")
	return c, nn.NewBatchNorm2d(out, nn.BatchNormOptions{})
}

func newResBlock(g *tensor.Generator, in, width, stride int, bottleneck bool) *resBlock {
	b := &resBlock{}
	var out int
	var specs [][3]int // in, out, kernel; the stride goes to the 3×3 conv
	if bottleneck {
		out = width * 4
		specs = [][3]int{{in, width, 1}, {width, width, 3}, {width, out, 1}}
	} else {
		out = width
		specs = [][3]int{{in, width, 3}, {width, width, 3}}
	}
	for i, s := range specs {
		st := 1
		if (bottleneck && i == 1) || (!bottleneck && i == 0) {
			st = stride
		}
		c, bn := convBN(g, s[0], s[1], s[2], st)
		b.convs = append(b.convs, c)
		b.bns = append(b.bns, bn)
		b.RegisterModule(fmt.Sprintf("conv%d", i+1), c)
		b.RegisterModule(fmt.Sprintf("bn%d", i+1), bn)
	}
	if stride != 1 || in != out {
		b.down, b.downBN = convBN(g, in, out, 1, stride)
		b.RegisterModule("downsample_conv", b.down)
		b.RegisterModule("downsample_bn", b.downBN)
	}
	return b
}

// newResNet builds resnet18 (layers 2,2,2,2, basic blocks) or resnet50
// (3,4,6,3, bottlenecks) whose first stage is base channels wide
// (torchvision: 64; the later stages double it).
func newResNet(g *tensor.Generator, depth, base int) *resnet {
	layers, bottleneck := []int{2, 2, 2, 2}, false
	if depth == 50 {
		layers, bottleneck = []int{3, 4, 6, 3}, true
	}
	m := &resnet{}
	m.conv1, m.bn1 = convBN(g, 3, base, 7, 2)
	m.RegisterModule("conv1", m.conv1)
	m.RegisterModule("bn1", m.bn1)
	in := base
	for stage, n := range layers {
		width := base << stage
		for i := range n {
			stride := 1
			if stage > 0 && i == 0 {
				stride = 2
			}
			b := newResBlock(g, in, width, stride, bottleneck)
			m.blocks = append(m.blocks, b)
			m.RegisterModule(fmt.Sprintf("layer%d_%d", stage+1, i), b)
			in = width
			if bottleneck {
				in = width * 4
			}
		}
	}
	m.fc = nn.NewLinear(g, in, 1000, true)
	m.RegisterModule("fc", m.fc)
	return m
}

// Forward maps [N, 3, H, W] images to [N, 1000] logits.
func (m *resnet) Forward(x *autograd.Var) *autograd.Var {
	x = m.conv1.ForwardBatchNorm(x, m.bn1, nil, nn.NewReLU())
	x = autograd.MaxPool2d(x, tensor.Pool2dOptions{
		Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1},
	})
	for _, b := range m.blocks {
		x = b.Forward(x)
	}
	return m.fc.Forward(autograd.AdaptiveAvgPool2d(x, 1, 1).Flatten(1, -1))
}

// buildResNet returns the inference workload of resnet<depth> on a batch
// of random 224×224 images, in evaluation mode and without a tape (the
// parameters do not require gradients), as torch.inference_mode. tiny
// runs a network 8× narrower on 32×32 images, at most 16 of them.
func buildResNet(depth, batch int) func(tiny bool) (*benchRun, error) {
	return func(tiny bool) (*benchRun, error) {
		size, base := 224, 64
		if tiny {
			size, base, batch = 32, 8, min(batch, 16)
		}
		m := newResNet(tensor.NewGenerator(0), depth, base)
		m.Train(false)
		for _, p := range m.Parameters() {
			p.SetRequiresGrad(false)
		}
		xt := tensor.NewGenerator(0).Randn([]int{batch, 3, size, size})
		x := autograd.New(xt)
		var out *tensor.Tensor
		r := &benchRun{
			batch: batch,
			loss:  func() float64 { return 0 },
			model: m,
			data:  []*tensor.Tensor{xt},
		}
		r.step = func() error {
			out = m.Forward(r.in(x)).Value()
			if s := out.Shape(); len(s) != 2 || s[0] != batch || s[1] != 1000 {
				return fmt.Errorf("resnet%d output shape %v, want [%d 1000]", depth, s, batch)
			}
			return nil
		}
		return r, nil
	}
}

// buildResNetTrain returns the training workload of resnet<depth>, as a
// torchvision resnet50(weights=None) training step: training mode (batch
// norm on batch statistics), a batch of random 224×224 images with labels
// among 1000 classes, cross-entropy, SGD (lr 0.01, momentum 0.9). tiny runs
// a network 8× narrower on 4 images of 32×32.
func buildResNetTrain(depth, batch int) func(tiny bool) (*benchRun, error) {
	return func(tiny bool) (*benchRun, error) {
		size, base := 224, 64
		if tiny {
			size, base, batch = 32, 8, min(batch, 4)
		}
		m := newResNet(tensor.NewGenerator(0), depth, base)
		dg := tensor.NewGenerator(0)
		x := dg.Randn([]int{batch, 3, size, size})
		y := dg.RandInt([]int{batch}, 0, 1000)
		opt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.01, Momentum: 0.9})
		return trainStep(m, opt, x, y), nil
	}
}
