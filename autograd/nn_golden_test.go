package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// goldenNN is written by internal/golden/gen/gen_nn.py.
const goldenNN = "../tensor/testdata/golden_nn.json"

func closeTo(t *testing.T, name string, want golden.Tensor, got *tensor.Tensor) {
	t.Helper()
	rtol, atol := 1e-9, 1e-10
	if want.DType == golden.Float32 {
		rtol, atol = 1e-4, 1e-5
	}
	require.NotNil(t, got, "%s: no gradient", name)
	goldtensor.Check(t, name, want, got, rtol, atol)
}

func pair(c golden.Case, name string) [2]int {
	v := c.Ints(name)
	return [2]int{v[0], v[1]}
}

func poolOpts(c golden.Case) tensor.Pool2dOptions {
	o := tensor.Pool2dOptions{Kernel: pair(c, "kernel"), Stride: pair(c, "stride"), Padding: pair(c, "padding"), CeilMode: c.Bool("ceil_mode")}
	if c.Has("dilation") {
		o.Dilation = pair(c, "dilation")
	}
	if c.Has("count_include_pad") {
		o.CountIncludePad = c.Bool("count_include_pad")
	}
	return o
}

// TestNNGoldenGrad runs every differentiable golden case through the
// autograd op and compares outputs and input gradients with PyTorch's.
func TestNNGoldenGrad(t *testing.T) {
	cases := golden.Load(t, goldenNN)
	ran := map[string]int{}
	for _, c := range cases {
		if len(c.Grads) == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			vars := make([]*autograd.Var, len(c.Inputs))
			ts := make([]*tensor.Tensor, len(c.Inputs))
			for i, g := range c.Inputs {
				ts[i] = goldtensor.ToTensor(g)
				if c.Grads[i] != nil {
					vars[i] = autograd.Param(ts[i])
				} else {
					vars[i] = autograd.New(ts[i])
				}
			}
			opt := func(i int) *autograd.Var {
				if i < len(vars) {
					return vars[i]
				}
				return nil
			}
			var out *autograd.Var
			ran[c.Op]++
			switch c.Op {
			case "conv2d":
				out = autograd.Conv2d(vars[0], vars[1], opt(2), tensor.Conv2dOptions{Stride: pair(c, "stride"), Padding: pair(c, "padding"), Dilation: pair(c, "dilation"), Groups: c.Int("groups")})
			case "conv1d":
				out = autograd.Conv1d(vars[0], vars[1], opt(2), tensor.Conv1dOptions{Stride: c.Int("stride"), Padding: c.Int("padding"), Dilation: c.Int("dilation"), Groups: c.Int("groups")})
			case "conv_transpose2d":
				out = autograd.ConvTranspose2d(vars[0], vars[1], opt(2), tensor.ConvTranspose2dOptions{Stride: pair(c, "stride"), Padding: pair(c, "padding"),
					OutputPadding: pair(c, "output_padding"), Dilation: pair(c, "dilation"), Groups: c.Int("groups")})
			case "max_pool2d":
				var idx *tensor.Tensor
				out, idx = autograd.MaxPool2dWithIndices(vars[0], poolOpts(c))
				require.Equal(t, c.Outputs[1].Int64s(), idx.Int64s(), "indices")
			case "avg_pool2d":
				out = autograd.AvgPool2d(vars[0], poolOpts(c))
			case "adaptive_avg_pool2d":
				o := c.Ints("out_size")
				out = autograd.AdaptiveAvgPool2d(vars[0], o[0], o[1])
			case "softmax":
				out = autograd.Softmax(vars[0], c.Int("axis"))
			case "log_softmax":
				out = autograd.LogSoftmax(vars[0], c.Int("axis"))
			case "batch_norm":
				var w, b *autograd.Var
				var rm, rv *tensor.Tensor
				i := 1
				if c.Bool("affine") {
					w, b, i = vars[1], vars[2], 3
				}
				if c.Bool("running") {
					rm, rv = ts[i], ts[i+1]
				}
				out = autograd.BatchNorm(vars[0], w, b, rm, rv, c.Bool("training"), c.Float("momentum"), c.Float("eps"))
				if rm != nil {
					closeTo(t, "running_mean", c.Outputs[1], rm)
					closeTo(t, "running_var", c.Outputs[2], rv)
				}
			case "layer_norm":
				out = autograd.LayerNorm(vars[0], c.Ints("normalized_shape"), opt(1), opt(2), c.Float("eps"))
			case "group_norm":
				out = autograd.GroupNorm(vars[0], c.Int("groups"), opt(1), opt(2), c.Float("eps"))
			case "embedding":
				out = autograd.Embedding(ts[0], vars[1])
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
			closeTo(t, "out", c.Outputs[0], out.Value())
			require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
			for i, g := range c.Grads {
				if g != nil {
					closeTo(t, "grad", *g, vars[i].Grad())
				}
			}
		})
	}
	for _, op := range []string{"conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
		"softmax", "log_softmax", "batch_norm", "layer_norm", "group_norm", "embedding"} {
		require.Positive(t, ran[op], "no gradient case for %s", op)
	}
}
