package nn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// activationModule builds the module a golden activation case names, with
// the case's settings. For prelu the weight is the case's second input.
func activationModule(t *testing.T, c golden.Case) nn.Module {
	t.Helper()
	switch c.Op {
	case "relu6":
		return nn.NewReLU6()
	case "leaky_relu":
		return nn.NewLeakyReLU(c.Float("negative_slope"))
	case "prelu":
		w := goldtensor.ToTensor(c.Inputs[1])
		m := nn.NewPReLU(w.Shape()[0], 0.25, w.DType())
		m.Weight.Value().CopyFrom(w)
		return m
	case "elu":
		return nn.NewELU(c.Float("alpha"))
	case "selu":
		return nn.NewSELU()
	case "celu":
		return nn.NewCELU(c.Float("alpha"))
	case "gelu":
		return nn.NewGELU(c.String("approximate"))
	case "silu":
		return nn.NewSiLU()
	case "mish":
		return nn.NewMish()
	case "hardsigmoid":
		return nn.NewHardSigmoid()
	case "hardswish":
		return nn.NewHardSwish()
	case "hardtanh":
		return nn.NewHardTanh(c.Float("min_val"), c.Float("max_val"))
	case "softplus":
		return nn.NewSoftplus(c.Float("beta"), c.Float("threshold"))
	case "softsign":
		return nn.NewSoftsign()
	case "softmin":
		return nn.NewSoftmin(c.Int("axis"))
	case "threshold":
		return nn.NewThreshold(c.Float("threshold"), c.Float("value"))
	case "logsigmoid":
		return nn.NewLogSigmoid()
	case "glu":
		return nn.NewGLU(c.Int("axis"))
	case "tanhshrink":
		return nn.NewTanhshrink()
	case "softshrink":
		return nn.NewSoftshrink(c.Float("lambd"))
	case "hardshrink":
		return nn.NewHardshrink(c.Float("lambd"))
	}
	t.Fatalf("unknown activation %q", c.Op)
	return nil
}

// TestActivationModulesGolden runs the activation golden cases (written by
// internal/golden/gen/gen_activations.py) through the modules: outputs and
// gradients of the input and of PReLU's weight match PyTorch's.
func TestActivationModulesGolden(t *testing.T) {
	cases := golden.Load(t, "../autograd/testdata/golden_activations.json")
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			m := activationModule(t, c)
			x := autograd.Param(goldtensor.ToTensor(c.Inputs[0]))
			y := m.Forward(x)
			rtol, atol := 1e-12, 1e-14
			if c.Outputs[0].DType == golden.Float32 {
				rtol, atol = 2e-5, 1e-6
			}
			golden.AllClose(t, c.Name+" output", c.Outputs[0], y.Shape(), y.Value().Float64s(), rtol, atol)
			if c.Op == "hardsigmoid" {
				rtol = 1e-7 // PyTorch's gradient uses 1/6 rounded to float32
			}
			y.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{})
			golden.AllClose(t, c.Name+" grad x", *c.Grads[0], x.Grad().Shape(), x.Grad().Float64s(), rtol, atol)
			if c.Op == "prelu" {
				w := m.(*nn.PReLU).Weight.Grad()
				require.NotNil(t, w)
				goldtensor.Check(t, c.Name+" grad weight", *c.Grads[1], w, rtol, atol)
			}
		})
	}
}

func TestActivationModuleStrings(t *testing.T) {
	tests := []struct {
		m    nn.Module
		want string
	}{
		{nn.NewReLU6(), "ReLU6()"},
		{nn.NewLeakyReLU(0.01), "LeakyReLU(negative_slope=0.01)"},
		{nn.NewLeakyReLU(1e-5), "LeakyReLU(negative_slope=1e-05)"},
		{nn.NewPReLU(1, 0.25), "PReLU(num_parameters=1)"},
		{nn.NewPReLU(3, 0.1), "PReLU(num_parameters=3)"},
		{nn.NewELU(1), "ELU(alpha=1.0)"},
		{nn.NewSELU(), "SELU()"},
		{nn.NewCELU(2.5), "CELU(alpha=2.5)"},
		{nn.NewGELU("none"), "GELU(approximate='none')"},
		{&nn.GELU{}, "GELU(approximate='none')"},
		{nn.NewGELU("tanh"), "GELU(approximate='tanh')"},
		{nn.NewSiLU(), "SiLU()"},
		{nn.NewMish(), "Mish()"},
		{nn.NewHardSigmoid(), "Hardsigmoid()"},
		{nn.NewHardSwish(), "Hardswish()"},
		{nn.NewHardTanh(-1, 1), "Hardtanh(min_val=-1.0, max_val=1.0)"},
		{nn.NewSoftplus(1, 20), "Softplus(beta=1, threshold=20)"},
		{nn.NewSoftplus(2.5, 5), "Softplus(beta=2.5, threshold=5)"},
		{nn.NewSoftsign(), "Softsign()"},
		{nn.NewSoftmin(1), "Softmin(dim=1)"},
		{nn.NewThreshold(0.5, -2), "Threshold(threshold=0.5, value=-2.0)"},
		{nn.NewLogSigmoid(), "LogSigmoid()"},
		{nn.NewGLU(-1), "GLU(dim=-1)"},
		{nn.NewTanhshrink(), "Tanhshrink()"},
		{nn.NewSoftshrink(0.5), "Softshrink(0.5)"},
		{nn.NewHardshrink(0.25), "Hardshrink(0.25)"},
	}
	for _, tt := range tests {
		s, ok := tt.m.(interface{ String() string })
		require.True(t, ok, "%T has String", tt.m)
		assert.Equal(t, tt.want, s.String())
		assert.Empty(t, tt.m.NamedBuffers(), tt.want)
		if _, isPReLU := tt.m.(*nn.PReLU); !isPReLU {
			assert.Empty(t, tt.m.Parameters(), "%s has no parameters", tt.want)
		}
	}
}

// TestPReLUModule checks the learnable slope: one parameter named "weight"
// of shape [num_parameters], PyTorch's init, and a gradient after backward.
func TestPReLUModule(t *testing.T) {
	m := nn.NewPReLU(3, 0.25)
	named := m.NamedParameters()
	require.Len(t, named, 1)
	assert.Equal(t, "weight", named[0].Name)
	assert.Same(t, m.Weight, named[0].Param)
	assert.Equal(t, []int{3}, m.Weight.Shape())
	assert.Equal(t, tensor.Float32, m.Weight.DType())
	assert.Equal(t, []float32{0.25, 0.25, 0.25}, m.Weight.Value().Float32s())

	x := autograd.New(tensor.FromSlice([]float32{-4, 2, -1, 3, -2, -8}, 1, 3, 2))
	y := m.Forward(x)
	assert.Equal(t, []float32{-1, 2, -0.25, 3, -0.5, -2}, y.Value().Float32s())
	y.Sum(nil, false).Backward()
	// d/dw_c = sum of the negative inputs of channel c.
	assert.Equal(t, []float32{-4, -1, -10}, m.Weight.Grad().Float32s())

	d := nn.NewPReLU(1, 0.1, tensor.Float64)
	assert.Equal(t, tensor.Float64, d.Weight.DType())
	assert.Equal(t, []float64{-0.5, 5}, d.Forward(autograd.New(tensor.FromSlice([]float64{-5, 5}, 2))).Value().Float64s())

	assert.Panics(t, func() { nn.NewPReLU(0, 0.25) })
	assert.Panics(t, func() { m.Forward(autograd.New(tensor.Zeros([]int{2, 4}))) }, "channel mismatch")
}

// TestActivationModulesInSequential trains nothing but checks that the
// modules compose and that the zero values of the setting-free ones work.
func TestActivationModulesInSequential(t *testing.T) {
	seq := nn.NewSequential(&nn.SiLU{}, &nn.Mish{}, &nn.HardSwish{}, nn.NewPReLU(1, 0.25, tensor.Float64), &nn.GELU{})
	x := autograd.New(tensor.FromSlice([]float64{-1, 0, 2}, 3))
	y := seq.Forward(x)
	require.Equal(t, []int{3}, y.Shape())
	names := []string{}
	for _, p := range seq.NamedParameters() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"3.weight"}, names)
	// gelu(prelu(hardswish(mish(silu(0))))) = 0.
	assert.InDelta(t, 0, y.Value().Float64s()[1], 1e-15)
}

func TestActivationModuleConstructorsPanic(t *testing.T) {
	assert.Panics(t, func() { nn.NewGELU("erf") })
	assert.Panics(t, func() { nn.NewHardTanh(1, -1) })
	assert.Panics(t, func() { nn.NewSoftplus(0, 20) })
	assert.Panics(t, func() { nn.NewSoftshrink(-0.1) })
}
