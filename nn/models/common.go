package models

import (
	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// convOpts returns 2-d convolution options with equal stride and padding on
// both axes.
func convOpts(stride, pad, groups int) tensor.Conv2dOptions {
	return tensor.Conv2dOptions{Stride: [2]int{stride, stride}, Padding: [2]int{pad, pad}, Groups: groups}
}

// kaimingConv returns a k×k convolution without bias whose weight is drawn
// from kaiming_normal_(mode="fan_out", nonlinearity="relu"), as torchvision
// initializes the convolutions of its classification models.
func kaimingConv(g *tensor.Generator, in, out, k, stride, pad, groups int) *nn.Conv2d {
	c := nn.NewConv2d(g, in, out, [2]int{k, k}, convOpts(stride, pad, groups), false)
	nn.KaimingNormal(g, c.Weight.Value(), 0, nn.FanOut, "relu")
	return c
}

// batchNorm2d returns a BatchNorm2d with torchvision's initialization
// (weight 1, bias 0), which is also nn's default.
func batchNorm2d(c int) *nn.BatchNorm {
	return nn.NewBatchNorm2d(c, nn.BatchNormOptions{})
}

// normalLinear returns a Linear layer with weight N(0, std²) and a zero
// bias. It draws the weight once, without nn.NewLinear's default draw
// first, and in blocks of rows, so that VGG's classifier (over 100 million
// weights) never needs a float64 copy of the whole matrix.
func normalLinear(g *tensor.Generator, in, out int, std float64, bias bool) *nn.Linear {
	w := tensor.Zeros([]int{out, in}, tensor.Float32)
	const blockElems = 1 << 20
	rows := max(1, blockElems/max(in, 1))
	for r := 0; r < out; r += rows {
		n := min(rows, out-r)
		w.Narrow(0, r, n).CopyFrom(g.Normal([]int{n, in}, 0, std, tensor.Float32))
	}
	l := &nn.Linear{InFeatures: in, OutFeatures: out}
	l.Weight = l.RegisterParameter("weight", autograd.Param(w))
	if bias {
		l.Bias = l.RegisterParameter("bias", autograd.Param(tensor.Zeros([]int{out}, tensor.Float32)))
	}
	return l
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
