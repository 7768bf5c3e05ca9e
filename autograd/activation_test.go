package autograd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// goldenActivations is written by internal/golden/gen/gen_activations.py.
const goldenActivations = "testdata/golden_activations.json"

// activationOf returns the activation a golden case names, applied to its
// inputs (x, and the weight for prelu).
func activationOf(t *testing.T, c golden.Case) func(in []*autograd.Var) *autograd.Var {
	t.Helper()
	switch c.Op {
	case "relu6":
		return func(in []*autograd.Var) *autograd.Var { return autograd.ReLU6(in[0]) }
	case "leaky_relu":
		s := c.Float("negative_slope")
		return func(in []*autograd.Var) *autograd.Var { return autograd.LeakyReLU(in[0], s) }
	case "prelu":
		return func(in []*autograd.Var) *autograd.Var { return autograd.PReLU(in[0], in[1]) }
	case "elu":
		a := c.Float("alpha")
		return func(in []*autograd.Var) *autograd.Var { return autograd.ELU(in[0], a) }
	case "selu":
		return func(in []*autograd.Var) *autograd.Var { return autograd.SELU(in[0]) }
	case "celu":
		a := c.Float("alpha")
		return func(in []*autograd.Var) *autograd.Var { return autograd.CELU(in[0], a) }
	case "gelu":
		a := c.String("approximate")
		return func(in []*autograd.Var) *autograd.Var { return autograd.GELU(in[0], a) }
	case "silu":
		return func(in []*autograd.Var) *autograd.Var { return autograd.SiLU(in[0]) }
	case "mish":
		return func(in []*autograd.Var) *autograd.Var { return autograd.Mish(in[0]) }
	case "hardsigmoid":
		return func(in []*autograd.Var) *autograd.Var { return autograd.HardSigmoid(in[0]) }
	case "hardswish":
		return func(in []*autograd.Var) *autograd.Var { return autograd.HardSwish(in[0]) }
	case "hardtanh":
		lo, hi := c.Float("min_val"), c.Float("max_val")
		return func(in []*autograd.Var) *autograd.Var { return autograd.HardTanh(in[0], lo, hi) }
	case "softplus":
		b, th := c.Float("beta"), c.Float("threshold")
		return func(in []*autograd.Var) *autograd.Var { return autograd.Softplus(in[0], b, th) }
	case "softsign":
		return func(in []*autograd.Var) *autograd.Var { return autograd.Softsign(in[0]) }
	case "softmin":
		ax := c.Int("axis")
		return func(in []*autograd.Var) *autograd.Var { return autograd.Softmin(in[0], ax) }
	case "threshold":
		th, v := c.Float("threshold"), c.Float("value")
		return func(in []*autograd.Var) *autograd.Var { return autograd.Threshold(in[0], th, v) }
	case "logsigmoid":
		return func(in []*autograd.Var) *autograd.Var { return autograd.LogSigmoid(in[0]) }
	case "glu":
		ax := c.Int("axis")
		return func(in []*autograd.Var) *autograd.Var { return autograd.GLU(in[0], ax) }
	case "tanhshrink":
		return func(in []*autograd.Var) *autograd.Var { return autograd.Tanhshrink(in[0]) }
	case "softshrink":
		l := c.Float("lambd")
		return func(in []*autograd.Var) *autograd.Var { return autograd.Softshrink(in[0], l) }
	case "hardshrink":
		l := c.Float("lambd")
		return func(in []*autograd.Var) *autograd.Var { return autograd.Hardshrink(in[0], l) }
	}
	t.Fatalf("unknown activation %q", c.Op)
	return nil
}

// TestActivationGolden compares every activation's output and input
// gradients with torch.nn.functional's, at the kinks, thresholds and large
// magnitudes included in each case's input.
func TestActivationGolden(t *testing.T) {
	cases := golden.Load(t, goldenActivations)
	ops := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ops[c.Op] = true
			f := activationOf(t, c)
			in := make([]*autograd.Var, len(c.Inputs))
			for i, g := range c.Inputs {
				in[i] = autograd.Param(goldtensor.ToTensor(g))
			}
			out := f(in)
			rtol, atol := 1e-12, 1e-14
			if c.Outputs[0].DType == golden.Float32 {
				rtol, atol = 2e-5, 1e-6
			}
			golden.AllClose(t, c.Name+" output", c.Outputs[0], out.Shape(), out.Value().Float64s(), rtol, atol)
			if c.Op == "hardsigmoid" {
				// PyTorch scales the gradient by 1/6 rounded to float32
				// even for float64 inputs.
				rtol = max(rtol, 1e-7)
			}
			out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{})
			for i, want := range c.Grads {
				got := in[i].Grad()
				require.NotNil(t, got, "input %d has no gradient", i)
				goldtensor.Check(t, c.Name+" grad", *want, got, rtol, atol)
			}
		})
	}
	assert.Len(t, ops, 21, "every activation has golden cases")
}

// TestActivationGradCheck checks each activation's gradient against finite
// differences on inputs away from its kinks, contiguous and transposed.
func TestActivationGradCheck(t *testing.T) {
	gen := tensor.NewGenerator(7)
	// Values in (-4, 4) kept 0.05 away from every kink used below (0, ±0.5,
	// ±1, ±3, 6, the softplus threshold 2 at beta 2, the threshold 0.3).
	raw := gen.Rand([]int{5, 4}, tensor.Float64).MulScalar(8).AddScalar(-4).Float64s()
	kinks := []float64{0, 0.5, -0.5, 1, -1, 3, -3, 2, 0.3, -2}
	for i, v := range raw {
		for _, k := range kinks {
			if math.Abs(v-k) < 0.05 {
				v = k + 0.1
			}
		}
		raw[i] = v
	}
	x := tensor.FromSlice(raw, 5, 4)
	xt := x.T()               // non-contiguous [4, 5]
	xs := x.Slice(0, 0, 5, 2) // strided rows [3, 4]
	one := func(f func(*autograd.Var) *autograd.Var) func(in []*autograd.Var) *autograd.Var {
		return func(in []*autograd.Var) *autograd.Var { return f(in[0]) }
	}
	tests := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
	}{
		{"ReLU6", one(func(v *autograd.Var) *autograd.Var { return autograd.ReLU6(v.MulScalar(2)) })},
		{"LeakyReLU", one(func(v *autograd.Var) *autograd.Var { return autograd.LeakyReLU(v, 0.1) })},
		{"ELU", one(func(v *autograd.Var) *autograd.Var { return autograd.ELU(v, 0.7) })},
		{"SELU", one(autograd.SELU)},
		{"CELU", one(func(v *autograd.Var) *autograd.Var { return autograd.CELU(v, 2) })},
		{"GELU/none", one(func(v *autograd.Var) *autograd.Var { return autograd.GELU(v, "none") })},
		{"GELU/tanh", one(func(v *autograd.Var) *autograd.Var { return autograd.GELU(v, "tanh") })},
		{"SiLU", one(autograd.SiLU)},
		{"Mish", one(autograd.Mish)},
		{"HardSigmoid", one(autograd.HardSigmoid)},
		{"HardSwish", one(autograd.HardSwish)},
		{"HardTanh", one(func(v *autograd.Var) *autograd.Var { return autograd.HardTanh(v, -1, 3) })},
		{"Softplus", one(func(v *autograd.Var) *autograd.Var { return autograd.Softplus(v, 2, 4) })},
		{"Softsign", one(autograd.Softsign)},
		{"Softmin", one(func(v *autograd.Var) *autograd.Var { return autograd.Softmin(v, 1) })},
		{"Threshold", one(func(v *autograd.Var) *autograd.Var { return autograd.Threshold(v, 0.3, -1) })},
		{"LogSigmoid", one(autograd.LogSigmoid)},
		{"GLU", one(func(v *autograd.Var) *autograd.Var { return autograd.GLU(v, -1+v.Shape()[1]%2) })},
		{"Tanhshrink", one(autograd.Tanhshrink)},
		{"Softshrink", one(func(v *autograd.Var) *autograd.Var { return autograd.Softshrink(v, 0.5) })},
		{"Hardshrink", one(func(v *autograd.Var) *autograd.Var { return autograd.Hardshrink(v, 0.5) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(tt.f, x))
			require.NoError(t, autograd.GradCheck(tt.f, xt), "transposed input")
			require.NoError(t, autograd.GradCheck(tt.f, xs), "sliced input")
		})
	}
	t.Run("PReLU", func(t *testing.T) {
		x3 := tensor.FromSlice(raw, 2, 5, 2).Transpose(1, 2) // [2, 2, 5], non-contiguous
		w := tensor.FromSlice([]float64{0.25, -0.4}, 2)
		f := func(in []*autograd.Var) *autograd.Var { return autograd.PReLU(in[0], in[1]) }
		require.NoError(t, autograd.GradCheck(f, x3, w))
		require.NoError(t, autograd.GradCheck(f, x, tensor.FromSlice([]float64{0.3}, 1)))
	})
}

// TestActivationGradGrad checks second derivatives of the smooth
// activations (and of the piecewise ones away from their kinks).
func TestActivationGradGrad(t *testing.T) {
	x := tensor.FromSlice([]float64{-2.3, -0.7, 0.4, 1.9, 4.2, -3.6}, 2, 3)
	tests := []struct {
		name string
		f    func(*autograd.Var) *autograd.Var
	}{
		{"ELU", func(v *autograd.Var) *autograd.Var { return autograd.ELU(v, 1) }},
		{"SELU", autograd.SELU},
		{"CELU", func(v *autograd.Var) *autograd.Var { return autograd.CELU(v, 0.5) }},
		{"GELU/none", func(v *autograd.Var) *autograd.Var { return autograd.GELU(v, "none") }},
		{"GELU/tanh", func(v *autograd.Var) *autograd.Var { return autograd.GELU(v, "tanh") }},
		{"SiLU", autograd.SiLU},
		{"Mish", autograd.Mish},
		{"HardSwish", autograd.HardSwish},
		{"Softplus", func(v *autograd.Var) *autograd.Var { return autograd.Softplus(v, 1, 20) }},
		{"Softsign", autograd.Softsign},
		{"Softmin", func(v *autograd.Var) *autograd.Var { return autograd.Softmin(v, -1) }},
		{"LogSigmoid", autograd.LogSigmoid},
		{"GLU", func(v *autograd.Var) *autograd.Var { return autograd.GLU(v, 0) }},
		{"Tanhshrink", autograd.Tanhshrink},
		{"LeakyReLU", func(v *autograd.Var) *autograd.Var { return autograd.LeakyReLU(v, 0.2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, autograd.GradGradCheck(func(in []*autograd.Var) *autograd.Var { return tt.f(in[0]) }, x))
		})
	}
}

// TestActivationLargeInputsFinite checks that the branch not taken cannot
// poison the gradient: exp overflows in it for these inputs.
func TestActivationLargeInputsFinite(t *testing.T) {
	fs := map[string]func(*autograd.Var) *autograd.Var{
		"ELU":        func(v *autograd.Var) *autograd.Var { return autograd.ELU(v, 1) },
		"CELU":       func(v *autograd.Var) *autograd.Var { return autograd.CELU(v, 0.1) },
		"Softplus":   func(v *autograd.Var) *autograd.Var { return autograd.Softplus(v, 1, 20) },
		"Mish":       autograd.Mish,
		"LogSigmoid": autograd.LogSigmoid,
	}
	for name, f := range fs {
		t.Run(name, func(t *testing.T) {
			x := autograd.Param(tensor.FromSlice([]float64{-1e4, 1e4, 800, -800}, 4))
			y := f(x)
			y.Sum(nil, false).Backward()
			for i, g := range x.Grad().Float64s() {
				assert.False(t, math.IsNaN(g) || math.IsInf(g, 0), "gradient %d is %v", i, g)
			}
			for i, v := range y.Value().Float64s() {
				assert.False(t, math.IsNaN(v), "output %d is NaN", i)
			}
		})
	}
}

func TestActivationPanics(t *testing.T) {
	x := autograd.New(tensor.FromSlice([]float64{1, 2, 3}, 3))
	assert.PanicsWithValue(t, `autograd.GELU: approximate must be "none" or "tanh", got "erf"`, func() { autograd.GELU(x, "erf") })
	assert.Panics(t, func() { autograd.GLU(x, 0) }, "odd axis")
	assert.Panics(t, func() { autograd.GLU(x, 1) }, "axis out of range")
	assert.Panics(t, func() { autograd.CELU(x, 0) })
	assert.Panics(t, func() { autograd.Softplus(x, 0, 20) })
	assert.Panics(t, func() { autograd.Softshrink(x, -1) })
	assert.Panics(t, func() { autograd.HardTanh(x, 1, -1) })
	assert.Panics(t, func() { autograd.PReLU(x, autograd.New(tensor.FromSlice([]float64{1, 2}, 2))) })
	assert.Panics(t, func() { autograd.ELU(autograd.New(tensor.Arange(0, 3, 1)), 1) }, "integer input")
}
