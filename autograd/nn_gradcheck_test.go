package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

type gradCase struct {
	name     string
	f        func(in []*autograd.Var) *autograd.Var
	inputs   []*tensor.Tensor
	gradgrad bool // also check second derivatives
}

// nnGradCases lists every differentiable NN op with small inputs, including
// non-contiguous views (transposed or strided) built inside f.
func nnGradCases() []gradCase {
	g := tensor.NewGenerator(7)
	rn := func(s ...int) *tensor.Tensor { return g.Randn(s, tensor.Float64) }
	ids := tensor.FromSlice([]int64{2, 0, 2, 4, 1, 0}, 2, 3)
	return []gradCase{
		{"softmax/last", func(in []*autograd.Var) *autograd.Var { return autograd.Softmax(in[0], -1) }, []*tensor.Tensor{rn(3, 4)}, true},
		{"softmax/middle_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.Softmax(in[0].Transpose(0, 2), 1)
		}, []*tensor.Tensor{rn(4, 3, 2)}, true},
		{"log_softmax/first", func(in []*autograd.Var) *autograd.Var { return autograd.LogSoftmax(in[0], 0) }, []*tensor.Tensor{rn(3, 4)}, true},
		{"log_softmax/strided", func(in []*autograd.Var) *autograd.Var {
			return autograd.LogSoftmax(in[0].Slice(1, 0, 6, 2), 1)
		}, []*tensor.Tensor{rn(2, 6)}, true},
		{"conv2d/groups_stride_pad_dilation", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv2d(in[0], in[1], in[2], tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 2}, Groups: 2})
		}, []*tensor.Tensor{rn(2, 4, 5, 4), rn(4, 2, 3, 2), rn(4)}, false},
		{"conv2d/transposed_input", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv2d(in[0].Transpose(2, 3), in[1].Transpose(2, 3), nil, tensor.Conv2dOptions{Padding: [2]int{1, 0}})
		}, []*tensor.Tensor{rn(2, 2, 4, 3), rn(3, 2, 2, 2)}, false},
		{"conv2d/small", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv2d(in[0], in[1], in[2], tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 0}})
		}, []*tensor.Tensor{rn(1, 2, 4, 3), rn(2, 2, 2, 2), rn(2)}, true},
		{"conv2d/unbatched", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv2d(in[0], in[1], nil, tensor.Conv2dOptions{})
		}, []*tensor.Tensor{rn(2, 3, 3), rn(1, 2, 2, 2)}, false},
		{"conv1d/groups_dilation", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv1d(in[0], in[1], in[2], tensor.Conv1dOptions{Stride: 2, Padding: 1, Dilation: 2, Groups: 2})
		}, []*tensor.Tensor{rn(2, 4, 7), rn(2, 2, 2), rn(2)}, true},
		{"conv_transpose2d/stride_outpad_groups", func(in []*autograd.Var) *autograd.Var {
			return autograd.ConvTranspose2d(in[0], in[1], in[2], tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 0}, OutputPadding: [2]int{1, 1}, Groups: 2})
		}, []*tensor.Tensor{rn(2, 2, 3, 2), rn(2, 2, 3, 2), rn(4)}, false},
		{"conv_transpose2d/outpad_dilation", func(in []*autograd.Var) *autograd.Var {
			return autograd.ConvTranspose2d(in[0].Transpose(2, 3), in[1], nil, tensor.ConvTranspose2dOptions{OutputPadding: [2]int{1, 1}, Dilation: [2]int{2, 2}})
		}, []*tensor.Tensor{rn(1, 2, 3, 3), rn(2, 2, 2, 2)}, true},
		{"max_pool2d/overlap_pad", func(in []*autograd.Var) *autograd.Var {
			return autograd.MaxPool2d(in[0], tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{1, 2}, Padding: [2]int{1, 1}})
		}, []*tensor.Tensor{rn(2, 2, 4, 5)}, true},
		{"max_pool2d/ceil_dilation_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.MaxPool2d(in[0].Transpose(2, 3), tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Dilation: [2]int{1, 2}, CeilMode: true})
		}, []*tensor.Tensor{rn(1, 2, 6, 5)}, false},
		{"avg_pool2d/exclude_pad_ceil", func(in []*autograd.Var) *autograd.Var {
			return autograd.AvgPool2d(in[0], tensor.Pool2dOptions{Kernel: [2]int{3, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true})
		}, []*tensor.Tensor{rn(2, 2, 5, 4)}, true},
		{"avg_pool2d/include_pad_strided", func(in []*autograd.Var) *autograd.Var {
			return autograd.AvgPool2d(in[0].Slice(3, 0, 8, 2), tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1}, CountIncludePad: true})
		}, []*tensor.Tensor{rn(1, 2, 3, 8)}, false},
		{"adaptive_avg_pool2d", func(in []*autograd.Var) *autograd.Var {
			return autograd.AdaptiveAvgPool2d(in[0], 3, 2)
		}, []*tensor.Tensor{rn(2, 2, 5, 4)}, true},
		{"adaptive_avg_pool2d/unbatched_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.AdaptiveAvgPool2d(in[0].Transpose(1, 2), 4, 3)
		}, []*tensor.Tensor{rn(2, 3, 5)}, false},
		{"batch_norm/train", func(in []*autograd.Var) *autograd.Var {
			return autograd.BatchNorm(in[0], in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}, []*tensor.Tensor{rn(3, 2, 2, 2), rn(2), rn(2)}, true},
		{"batch_norm/train_2d_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.BatchNorm(in[0].T(), nil, in[1], nil, nil, true, 0.1, 1e-5)
		}, []*tensor.Tensor{rn(3, 4), rn(3)}, false},
		{"batch_norm/eval", func(in []*autograd.Var) *autograd.Var {
			rm := tensor.FromSlice([]float64{0.1, -0.2}, 2)
			rv := tensor.FromSlice([]float64{0.8, 1.5}, 2)
			return autograd.BatchNorm(in[0], in[1], in[2], rm, rv, false, 0.1, 1e-5)
		}, []*tensor.Tensor{rn(2, 2, 3), rn(2), rn(2)}, true},
		{"layer_norm/last", func(in []*autograd.Var) *autograd.Var {
			return autograd.LayerNorm(in[0], []int{4}, in[1], in[2], 1e-5)
		}, []*tensor.Tensor{rn(2, 3, 4), rn(4), rn(4)}, true},
		{"layer_norm/two_axes_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.LayerNorm(in[0].Transpose(0, 2), []int{3, 2}, in[1], nil, 1e-5)
		}, []*tensor.Tensor{rn(2, 3, 4), rn(3, 2)}, false},
		{"layer_norm/whole", func(in []*autograd.Var) *autograd.Var {
			return autograd.LayerNorm(in[0], []int{2, 3}, nil, nil, 1e-5)
		}, []*tensor.Tensor{rn(2, 3)}, false},
		{"group_norm", func(in []*autograd.Var) *autograd.Var {
			return autograd.GroupNorm(in[0], 2, in[1], in[2], 1e-5)
		}, []*tensor.Tensor{rn(2, 4, 3), rn(4), rn(4)}, true},
		{"group_norm/transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.GroupNorm(in[0].Transpose(2, 3), 3, nil, in[1], 1e-5)
		}, []*tensor.Tensor{rn(1, 3, 2, 2), rn(3)}, false},
		{"dropout", func(in []*autograd.Var) *autograd.Var {
			return autograd.Dropout(in[0], 0.4, true, tensor.NewGenerator(3))
		}, []*tensor.Tensor{rn(3, 5)}, true},
		{"embedding", func(in []*autograd.Var) *autograd.Var {
			return autograd.Embedding(in[1].Value(), in[0]).Square()
		}, []*tensor.Tensor{rn(5, 3), ids}, true},
	}
}

func TestNNGradCheck(t *testing.T) {
	for _, c := range nnGradCases() {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, c.inputs...))
			if c.gradgrad {
				require.NoError(t, autograd.GradGradCheck(c.f, c.inputs...))
			}
		})
	}
}

// TestNNRecordedGradMatches checks that the gradients a recorded backward
// pass (CreateGraph, which takes the Var-operation rules) produces equal
// those of a plain pass (which may take fused tensor kernels), for every op.
func TestNNRecordedGradMatches(t *testing.T) {
	for _, c := range nnGradCases() {
		t.Run(c.name, func(t *testing.T) {
			grads := func(create bool) [][]float64 {
				in := make([]*autograd.Var, len(c.inputs))
				var targets []*autograd.Var
				for i, x := range c.inputs {
					if x.DType().IsFloat() {
						in[i] = autograd.Param(x)
						targets = append(targets, in[i])
					} else {
						in[i] = autograd.New(x)
					}
				}
				out := c.f(in)
				w := tensor.Linspace(-1, 2, out.Value().Numel(), tensor.Float64).Reshape(out.Shape()...)
				gs, err := autograd.Grad([]*autograd.Var{out}, targets, []*tensor.Tensor{w}, autograd.Options{CreateGraph: create})
				require.NoError(t, err)
				res := make([][]float64, len(gs))
				for i, g := range gs {
					res[i] = g.Value().Float64s()
				}
				return res
			}
			plain, recorded := grads(false), grads(true)
			for i := range plain {
				require.InDeltaSlice(t, plain[i], recorded[i], 1e-10, "input %d", i)
			}
		})
	}
}
