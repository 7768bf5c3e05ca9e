package tensor_test

import (
	"fmt"
	"testing"

	"github.com/emberml/ember/tensor"
)

// convBenchCase is one convolution layer of a benchmark workload.
type convBenchCase struct {
	name                string
	n, c, o, h, w, k, p int
	groups              int
}

// convBenchCases are the CIFAR-10 CNN layers of the cnn workload (batch 64)
// and ResNet-18's 56x56 3x3 and 1x1 convolutions at batch 1, plus a
// depthwise layer.
var convBenchCases = []convBenchCase{
	{"cnn1_3to50_32", 64, 3, 50, 32, 32, 3, 1, 1},
	{"cnn2_50to50_32", 64, 50, 50, 32, 32, 3, 1, 1},
	{"cnn3_50to100_16", 64, 50, 100, 16, 16, 3, 1, 1},
	{"cnn4_100to100_16", 64, 100, 100, 16, 16, 3, 1, 1},
	{"resnet_3x3_64_56", 1, 64, 64, 56, 56, 3, 1, 1},
	{"resnet_1x1_64to256_56", 1, 64, 256, 56, 56, 1, 0, 1},
	{"depthwise_64_56", 8, 64, 64, 56, 56, 3, 1, 64},
}

func convBenchOperands(c convBenchCase) (x, w, b, gy *tensor.Tensor, g tensor.ConvGeom) {
	gen := tensor.NewGenerator(1)
	x = gen.Randn([]int{c.n, c.c, c.h, c.w}, tensor.Float32)
	w = gen.Randn([]int{c.o, c.c / c.groups, c.k, c.k}, tensor.Float32)
	b = gen.Randn([]int{c.o}, tensor.Float32)
	opt := tensor.Conv2dOptions{Padding: [2]int{c.p, c.p}, Groups: c.groups}
	g = tensor.Conv2dGeometry(x.Shape(), w.Shape(), opt)
	gy = gen.Randn([]int{c.n, c.o, g.OH, g.OW}, tensor.Float32)
	return x, w, b, gy, g
}

// BenchmarkConv2d times the forward convolution (with bias) and both
// backward products of each layer. Run with
//
//	go test ./tensor -run '^$' -bench Conv2d -count 5
func BenchmarkConv2d(b *testing.B) {
	for _, c := range convBenchCases {
		x, w, bias, gy, g := convBenchOperands(c)
		opt := tensor.Conv2dOptions{Padding: [2]int{c.p, c.p}, Groups: c.groups}
		b.Run(fmt.Sprintf("%s/forward", c.name), func(b *testing.B) {
			for b.Loop() {
				tensor.Conv2d(x, w, bias, opt)
			}
		})
		b.Run(fmt.Sprintf("%s/backward_input", c.name), func(b *testing.B) {
			for b.Loop() {
				tensor.ConvBackwardInput(gy, w, g, c.groups)
			}
		})
		b.Run(fmt.Sprintf("%s/backward_weight", c.name), func(b *testing.B) {
			for b.Loop() {
				tensor.ConvBackwardWeight(x, gy, g, c.groups)
			}
		})
	}
}
