package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// goldenNN is the fixture written by internal/golden/gen/gen_nn.py.
const goldenNN = "testdata/golden_nn.json"

// tol returns the comparison tolerances for a fixture dtype.
func tol(g golden.Tensor) (rtol, atol float64) {
	if g.DType == golden.Float32 {
		return 1e-4, 1e-5
	}
	return 1e-9, 1e-10
}

func check(t *testing.T, name string, want golden.Tensor, got *tensor.Tensor) {
	t.Helper()
	rtol, atol := tol(want)
	goldtensor.Check(t, name, want, got, rtol, atol)
}

func pair(c golden.Case, name string) [2]int {
	v := c.Ints(name)
	return [2]int{v[0], v[1]}
}

func conv2dOpts(c golden.Case) tensor.Conv2dOptions {
	return tensor.Conv2dOptions{Stride: pair(c, "stride"), Padding: pair(c, "padding"), Dilation: pair(c, "dilation"), Groups: c.Int("groups")}
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

// optInput returns input i or nil when the case has fewer inputs.
func optInput(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(in) {
		return in[i]
	}
	return nil
}

// TestNNGolden checks every forward op, and the tensor-level backward
// primitives (conv input/weight gradients, pooling backward), against
// PyTorch.
func TestNNGolden(t *testing.T) {
	cases := golden.Load(t, goldenNN)
	require.NotEmpty(t, cases)
	seen := map[string]int{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			in := make([]*tensor.Tensor, len(c.Inputs))
			for i, g := range c.Inputs {
				in[i] = goldtensor.ToTensor(g)
			}
			var gout *tensor.Tensor
			if len(c.GradOutputs) > 0 {
				gout = goldtensor.ToTensor(c.GradOutputs[0])
			}
			seen[c.Op]++
			switch c.Op {
			case "conv2d":
				opt := conv2dOpts(c)
				check(t, "out", c.Outputs[0], tensor.Conv2d(in[0], in[1], optInput(in, 2), opt))
				xs, ws := in[0].Shape(), in[1].Shape()
				check(t, "dx", *c.Grads[0], tensor.Conv2dBackwardInput(gout, in[1], xs[2], xs[3], opt))
				check(t, "dw", *c.Grads[1], tensor.Conv2dBackwardWeight(in[0], gout, ws[2], ws[3], opt))
				if len(in) == 3 {
					check(t, "db", *c.Grads[2], gout.Sum([]int{0, 2, 3}, false))
				}
			case "conv1d":
				opt := tensor.Conv1dOptions{Stride: c.Int("stride"), Padding: c.Int("padding"), Dilation: c.Int("dilation"), Groups: c.Int("groups")}
				check(t, "out", c.Outputs[0], tensor.Conv1d(in[0], in[1], optInput(in, 2), opt))
			case "conv_transpose2d":
				opt := tensor.ConvTranspose2dOptions{Stride: pair(c, "stride"), Padding: pair(c, "padding"),
					OutputPadding: pair(c, "output_padding"), Dilation: pair(c, "dilation"), Groups: c.Int("groups")}
				check(t, "out", c.Outputs[0], tensor.ConvTranspose2d(in[0], in[1], optInput(in, 2), opt))
				g := tensor.ConvTranspose2dGeometry(in[0].Shape(), in[1].Shape(), opt)
				check(t, "dx", *c.Grads[0], tensor.ConvForward(gout, in[1], g, opt.Groups))
				check(t, "dw", *c.Grads[1], tensor.ConvBackwardWeight(gout, in[0], g, opt.Groups))
			case "max_pool2d":
				out, idx := tensor.MaxPool2d(in[0], poolOpts(c))
				check(t, "out", c.Outputs[0], out)
				require.Equal(t, c.Outputs[1].Int64s(), idx.Int64s(), "indices")
				check(t, "gather", c.Outputs[0], tensor.MaxPool2dGather(in[0], idx))
				if gout != nil {
					s := in[0].Shape()
					check(t, "dx", *c.Grads[0], tensor.MaxPool2dBackward(gout, idx, s[2], s[3]))
				}
			case "avg_pool2d":
				opt := poolOpts(c)
				check(t, "out", c.Outputs[0], tensor.AvgPool2d(in[0], opt))
				s := in[0].Shape()
				check(t, "dx", *c.Grads[0], tensor.AvgPool2dBackward(gout, s[2], s[3], opt))
			case "adaptive_avg_pool2d":
				o := c.Ints("out_size")
				check(t, "out", c.Outputs[0], tensor.AdaptiveAvgPool2d(in[0], o[0], o[1]))
				s := in[0].Shape()
				check(t, "dx", *c.Grads[0], tensor.AdaptiveAvgPool2dBackward(gout, s[2], s[3]))
			case "softmax":
				check(t, "out", c.Outputs[0], in[0].Softmax(c.Int("axis")))
			case "log_softmax":
				check(t, "out", c.Outputs[0], in[0].LogSoftmax(c.Int("axis")))
			case "batch_norm":
				var w, b, rm, rv *tensor.Tensor
				i := 1
				if c.Bool("affine") {
					w, b, i = in[1], in[2], 3
				}
				if c.Bool("running") {
					rm, rv = in[i].Clone(), in[i+1].Clone()
				}
				training, eps := c.Bool("training"), c.Float("eps")
				y, mean, variance := tensor.BatchNormWithStats(in[0], rm, rv, w, b, training, c.Float("momentum"), eps)
				check(t, "out", c.Outputs[0], y)
				if rm != nil {
					check(t, "running_mean", c.Outputs[1], rm)
					check(t, "running_var", c.Outputs[2], rv)
				}
				dx, dw, db := tensor.BatchNormBackward(gout, in[0], mean, variance, w, training || rm == nil, eps)
				check(t, "dx", *c.Grads[0], dx)
				if w != nil {
					check(t, "dw", *c.Grads[1], dw)
					check(t, "db", *c.Grads[2], db)
				}
			case "layer_norm":
				ns, w, eps := c.Ints("normalized_shape"), optInput(in, 1), c.Float("eps")
				y, mean, variance := tensor.LayerNormWithStats(in[0], ns, w, optInput(in, 2), eps)
				check(t, "out", c.Outputs[0], y)
				dx, dw, db := tensor.LayerNormBackward(gout, in[0], mean, variance, ns, w, eps)
				check(t, "dx", *c.Grads[0], dx)
				if w != nil {
					check(t, "dw", *c.Grads[1], dw)
					check(t, "db", *c.Grads[2], db)
				}
			case "group_norm":
				groups, w, eps := c.Int("groups"), optInput(in, 1), c.Float("eps")
				y, mean, variance := tensor.GroupNormWithStats(in[0], groups, w, optInput(in, 2), eps)
				check(t, "out", c.Outputs[0], y)
				dx, dw, db := tensor.GroupNormBackward(gout, in[0], mean, variance, groups, w, eps)
				check(t, "dx", *c.Grads[0], dx)
				if w != nil {
					check(t, "dw", *c.Grads[1], dw)
					check(t, "db", *c.Grads[2], db)
				}
			case "embedding":
				check(t, "out", c.Outputs[0], tensor.Embedding(in[0], in[1]))
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
		})
	}
	for _, op := range []string{"conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
		"softmax", "log_softmax", "batch_norm", "layer_norm", "group_norm", "embedding"} {
		require.Positive(t, seen[op], "no golden case for %s", op)
	}
}
