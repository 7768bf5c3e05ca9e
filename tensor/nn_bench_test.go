package tensor_test

import (
	"fmt"
	"testing"

	"github.com/emberml/ember/tensor"
)

// benchConv is a 16→32 channel 3x3 convolution over a batch of 64 4x4
// maps: the second stage of the quickstart CNN.
func benchConv() (x, w, g *tensor.Tensor, opt tensor.Conv2dOptions) {
	gen := tensor.NewGenerator(1)
	opt = tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	x = gen.Randn([]int{64, 16, 4, 4})
	w = gen.Randn([]int{32, 16, 3, 3})
	g = gen.Randn([]int{64, 32, 4, 4})
	return x, w, g, opt
}

func BenchmarkConv2dForward(b *testing.B) {
	x, w, _, opt := benchConv()
	for b.Loop() {
		tensor.Conv2d(x, w, nil, opt)
	}
}

func BenchmarkConv2dBackwardInput(b *testing.B) {
	_, w, g, opt := benchConv()
	for b.Loop() {
		tensor.Conv2dBackwardInput(g, w, 4, 4, opt)
	}
}

func BenchmarkConv2dBackwardWeight(b *testing.B) {
	x, _, g, opt := benchConv()
	for b.Loop() {
		tensor.Conv2dBackwardWeight(x, g, 3, 3, opt)
	}
}

// BenchmarkConv2dGEMMOnly is the matrix product inside BenchmarkConv2dForward,
// for judging the lowering overhead.
func BenchmarkConv2dGEMMOnly(b *testing.B) {
	gen := tensor.NewGenerator(1)
	w := gen.Randn([]int{32, 144})
	col := gen.Randn([]int{144, 1024})
	for b.Loop() {
		w.MatMul(col)
	}
}

func BenchmarkMaxPool2d(b *testing.B) {
	x := tensor.NewGenerator(1).Randn([]int{64, 16, 8, 8})
	opt := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	for b.Loop() {
		tensor.MaxPool2d(x, opt)
	}
}

// BenchmarkMaxPool2dTraining times 2×2 max pooling with positions and its
// gradient on examples/ddp's CNN shapes at batch 32, ReLU outputs as input.
// Run with
//
//	go test ./tensor -run '^$' -bench MaxPool2dTraining -cpu 1
func BenchmarkMaxPool2dTraining(b *testing.B) {
	opt := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	for _, shape := range [][]int{{32, 16, 28, 28}, {32, 32, 14, 14}} {
		x := tensor.NewGenerator(1).Randn(shape, tensor.Float32).Relu()
		y, idx := tensor.MaxPool2d(x, opt)
		grad := tensor.NewGenerator(2).Randn(y.Shape(), tensor.Float32)
		name := fmt.Sprintf("%dx%dx%d", shape[1], shape[2], shape[3])
		b.Run(name+"/forward", func(b *testing.B) {
			for b.Loop() {
				tensor.MaxPool2d(x, opt)
			}
		})
		b.Run(name+"/backward", func(b *testing.B) {
			for b.Loop() {
				tensor.MaxPool2dBackward(grad, idx, shape[2], shape[3])
			}
		})
	}
}

func BenchmarkSoftmax(b *testing.B) {
	x := tensor.NewGenerator(1).Randn([]int{256, 1000})
	for b.Loop() {
		x.LogSoftmax(1)
	}
}
