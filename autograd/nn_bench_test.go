package autograd_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// BenchmarkSmallCNNStep times one forward and backward pass of the kind of
// network the quickstart trains on 8x8 digits: two 3x3 conv + ReLU + 2x2
// max-pool stages and a linear classifier with log-softmax, batch 64.
func BenchmarkSmallCNNStep(b *testing.B) {
	g := tensor.NewGenerator(1)
	x := g.Randn([]int{64, 1, 8, 8})
	onehot := tensor.Zeros([]int{64, 10})
	w1, b1 := autograd.Param(g.Randn([]int{16, 1, 3, 3}).MulScalar(0.3)), autograd.Param(tensor.Zeros([]int{16}))
	w2, b2 := autograd.Param(g.Randn([]int{32, 16, 3, 3}).MulScalar(0.1)), autograd.Param(tensor.Zeros([]int{32}))
	w3 := autograd.Param(g.Randn([]int{128, 10}).MulScalar(0.1))
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	conv := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	b.ReportAllocs()
	for b.Loop() {
		h := autograd.Conv2d(autograd.New(x), w1, b1, conv).Relu()
		h = autograd.MaxPool2d(h, pool)
		h = autograd.Conv2d(h, w2, b2, conv).Relu()
		h = autograd.MaxPool2d(h, pool)
		logits := h.Reshape(64, 128).MatMul(w3)
		loss := autograd.LogSoftmax(logits, 1).Mul(autograd.New(onehot)).Sum(nil, false).Neg()
		if err := loss.Backward(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchNormStep times a training-mode batch norm forward and
// backward on a [64, 32, 8, 8] activation.
func BenchmarkBatchNormStep(b *testing.B) {
	g := tensor.NewGenerator(2)
	x := autograd.Param(g.Randn([]int{64, 32, 8, 8}))
	w, bias := autograd.Param(tensor.Ones([]int{32})), autograd.Param(tensor.Zeros([]int{32}))
	rm, rv := tensor.Zeros([]int{32}), tensor.Ones([]int{32})
	gout := g.Randn([]int{64, 32, 8, 8})
	for b.Loop() {
		y := autograd.BatchNorm(x, w, bias, rm, rv, true, 0.1, 1e-5)
		if err := y.BackwardWith(gout, autograd.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
