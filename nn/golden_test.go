package nn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

func tolerances(dt string) (rtol, atol float64) {
	if dt == golden.Float32 {
		return 1e-5, 1e-6
	}
	return 1e-10, 1e-12
}

func reductionOf(s string) nn.Reduction {
	switch s {
	case "sum":
		return nn.ReduceSum
	case "none":
		return nn.ReduceNone
	}
	return nn.ReduceMean
}

// TestGoldenModules checks losses and layers against PyTorch: values and
// the gradients of the differentiable inputs.
func TestGoldenModules(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_nn_modules.json") {
		t.Run(c.Name, func(t *testing.T) {
			in := make([]*autograd.Var, len(c.Inputs))
			for i, g := range c.Inputs {
				v := goldtensor.ToTensor(g)
				if v.DType().IsFloat() {
					in[i] = autograd.Param(v)
				} else {
					in[i] = autograd.New(v)
				}
			}
			var out *autograd.Var
			checkGrad := []bool{true}
			switch c.Op {
			case "cross_entropy":
				opts := []nn.CrossEntropyOption{
					nn.WithReduction(reductionOf(c.String("reduction"))),
					nn.WithIgnoreIndex(int64(c.Int("ignore_index"))),
					nn.WithLabelSmoothing(c.Float("label_smoothing")),
				}
				if c.Bool("weighted") {
					opts = append(opts, nn.WithClassWeights(in[2].Value()))
				}
				out = nn.NewCrossEntropyLoss(opts...).Forward(in[0], in[1].Value())
			case "mse":
				// The golden target gradient is not checked: Ember's
				// targets are data (see the nn package doc).
				out = nn.NewMSELoss(reductionOf(c.String("reduction"))).Forward(in[0], in[1].Value())
			case "linear":
				w := c.Inputs[1]
				l := nn.NewLinear(tensor.NewGenerator(1), w.Shape[1], w.Shape[0], len(in) == 3, tensor.Float64)
				require.NoError(t, nn.LoadStateDict(l, stateFrom(in[1:], "weight", "bias"), true))
				in = []*autograd.Var{in[0], l.Weight, l.Bias}
				out = l.Forward(in[0])
				checkGrad = []bool{true, true, len(c.Inputs) == 3}
			case "conv2d":
				w := c.Inputs[1]
				opt := tensor.Conv2dOptions{Stride: pair(c.Ints("stride")), Padding: pair(c.Ints("padding")),
					Dilation: pair(c.Ints("dilation")), Groups: c.Int("groups")}
				conv := nn.NewConv2d(tensor.NewGenerator(1), c.Inputs[0].Shape[1], w.Shape[0], [2]int{w.Shape[2], w.Shape[3]},
					opt, len(in) == 3, tensor.Float64)
				require.NoError(t, nn.LoadStateDict(conv, stateFrom(in[1:], "weight", "bias"), true))
				in = []*autograd.Var{in[0], conv.Weight, conv.Bias}
				out = conv.Forward(in[0])
				checkGrad = []bool{true, true, len(c.Inputs) == 3}
			case "maxpool2d":
				out = nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: pair(c.Ints("kernel")), Stride: pair(c.Ints("stride")),
					Padding: pair(c.Ints("padding")), CeilMode: c.Bool("ceil_mode")}).Forward(in[0])
			case "flatten":
				out = nn.NewFlatten(c.Int("start"), c.Int("end")).Forward(in[0])
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
			rtol, atol := tolerances(c.Outputs[0].DType)
			golden.AllClose(t, "output", c.Outputs[0], out.Shape(), out.Value().Float64s(), rtol, atol)
			require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
			for i, want := range checkGrad {
				if !want {
					continue
				}
				g := in[i].Grad()
				require.NotNil(t, g, "grad of input %d", i)
				goldtensor.Check(t, "grad", *c.Grads[i], g, rtol, atol)
			}
		})
	}
}

func pair(v []int) [2]int { return [2]int{v[0], v[1]} }

// stateFrom names the values of vs with names, skipping missing ones.
func stateFrom(vs []*autograd.Var, names ...string) map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	for i, v := range vs {
		sd[names[i]] = v.Value()
	}
	return sd
}

// TestCrossEntropyGradCheck checks the loss's gradient by finite
// differences, with weights, ignore index and smoothing together, on
// transposed (non-contiguous) logits.
func TestCrossEntropyGradCheck(t *testing.T) {
	g := tensor.NewGenerator(3)
	x := g.Randn([]int{4, 5}, tensor.Float64)
	target := tensor.FromSlice([]int64{1, -1, 3, 0, 2})
	w := g.Uniform([]int{4}, 0.5, 1.5, tensor.Float64)
	for _, red := range []nn.Reduction{nn.ReduceMean, nn.ReduceSum, nn.ReduceNone} {
		loss := nn.NewCrossEntropyLoss(nn.WithReduction(red), nn.WithIgnoreIndex(-1),
			nn.WithLabelSmoothing(0.2), nn.WithClassWeights(w))
		err := autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
			return loss.Forward(in[0].T(), target)
		}, x)
		require.NoError(t, err, red.String())
	}
}

func TestCrossEntropyMisuse(t *testing.T) {
	x := autograd.New(tensor.Zeros([]int{2, 3}))
	ce := nn.NewCrossEntropyLoss()
	cases := map[string]struct {
		f    func()
		want string
	}{
		"out of range": {func() { ce.Forward(x, tensor.FromSlice([]int64{0, 3})) }, "out of bounds"},
		"shape":        {func() { ce.Forward(x, tensor.FromSlice([]int64{0, 1, 2})) }, "target shape"},
		"float target": {func() { ce.Forward(x, tensor.Zeros([]int{2})) }, "probability target shape"},
		"weights": {func() {
			nn.NewCrossEntropyLoss(nn.WithClassWeights(tensor.Ones([]int{4}))).Forward(x, tensor.FromSlice([]int64{0, 1}))
		}, "class weights"},
		"smoothing": {func() { nn.NewCrossEntropyLoss(nn.WithLabelSmoothing(1.5)) }, "label smoothing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				require.Contains(t, r.(string), tc.want)
			}()
			tc.f()
		})
	}
}

func TestAllIgnoredMeanIsNaN(t *testing.T) {
	x := autograd.Param(tensor.Zeros([]int{2, 3}, tensor.Float64))
	out := nn.NewCrossEntropyLoss().Forward(x, tensor.FromSlice([]int64{-100, -100}))
	require.True(t, math.IsNaN(out.Item()))
	require.True(t, strings.HasPrefix(nn.ReduceNone.String(), "none"))
}
