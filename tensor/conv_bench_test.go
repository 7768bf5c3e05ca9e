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
	{"mnist1_1to16_28", 32, 1, 16, 28, 28, 3, 1, 1},
	{"mnist2_16to32_14", 32, 16, 32, 14, 14, 3, 1, 1},
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

// resnet18Layers are the distinct convolutions of ResNet-18 at batch 1
// (224×224 input): the stem, each stage's 3×3 layers, and the strided
// first 3×3 and 1×1 downsample of stages 2 to 4.
var resnet18Layers = []struct {
	name                    string
	c, o, h, k, stride, pad int
}{
	{"stem_7x7_3to64_224", 3, 64, 224, 7, 2, 3},
	{"3x3_64_56", 64, 64, 56, 3, 1, 1},
	{"3x3s2_64to128_56", 64, 128, 56, 3, 2, 1},
	{"1x1s2_64to128_56", 64, 128, 56, 1, 2, 0},
	{"3x3_128_28", 128, 128, 28, 3, 1, 1},
	{"3x3s2_128to256_28", 128, 256, 28, 3, 2, 1},
	{"1x1s2_128to256_28", 128, 256, 28, 1, 2, 0},
	{"3x3_256_14", 256, 256, 14, 3, 1, 1},
	{"3x3s2_256to512_14", 256, 512, 14, 3, 2, 1},
	{"1x1s2_256to512_14", 256, 512, 14, 1, 2, 0},
	{"3x3_512_7", 512, 512, 7, 3, 1, 1},
}

// BenchmarkResNet18Layers times each convolution of batch-1 ResNet-18 with
// a packed weight, bias and ReLU (the inference path of nn and onnx), at 1
// and 2 threads, to show which layers scale. Run with
//
//	go test ./tensor -run '^$' -bench ResNet18Layers -count 3
func BenchmarkResNet18Layers(b *testing.B) {
	defer tensor.SetNumThreads(0)
	gen := tensor.NewGenerator(1)
	for _, l := range resnet18Layers {
		x := gen.Randn([]int{1, l.c, l.h, l.h}, tensor.Float32)
		w := tensor.PackConv2dWeight(gen.Randn([]int{l.o, l.c, l.k, l.k}, tensor.Float32), 1)
		bias := gen.Randn([]int{l.o}, tensor.Float32)
		opt := tensor.Conv2dOptions{Stride: [2]int{l.stride, l.stride}, Padding: [2]int{l.pad, l.pad}}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", l.name, threads), func(b *testing.B) {
				tensor.SetNumThreads(threads)
				for b.Loop() {
					tensor.Conv2dPacked(x, w, bias, opt, nil, true)
				}
			})
		}
	}
}
