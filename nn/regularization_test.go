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

// closeTo compares a tensor with a golden one in float64.
func closeTo(t *testing.T, name string, want golden.Tensor, got *tensor.Tensor) {
	t.Helper()
	goldtensor.Check(t, name, want, got, 1e-10, 1e-12)
}

// goldenLayer builds the case's Linear or Conv2d with the golden weight and
// bias.
func goldenLayer(c golden.Case) nn.Module {
	w, b := goldtensor.ToTensor(c.Inputs[0]), goldtensor.ToTensor(c.Inputs[1])
	g := tensor.NewGenerator(1)
	if c.Has("layer") && c.String("layer") == "conv2d" {
		s := w.Shape()
		m := nn.NewConv2d(g, s[1], s[0], [2]int{s[2], s[3]}, tensor.Conv2dOptions{}, true, tensor.Float64)
		m.Weight.Value().CopyFrom(w)
		m.Bias.Value().CopyFrom(b)
		return m
	}
	m := nn.NewLinear(g, w.Shape()[1], w.Shape()[0], true, tensor.Float64)
	m.Weight.Value().CopyFrom(w)
	m.Bias.Value().CopyFrom(b)
	return m
}

func paramNames(m nn.Module) []string {
	var out []string
	for _, p := range m.NamedParameters() {
		out = append(out, p.Name)
	}
	return out
}

func TestGoldenRegularization(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_regularization.json") {
		t.Run(c.Name, func(t *testing.T) {
			switch c.Op {
			case "renorm":
				w := goldtensor.ToTensor(c.Inputs[0])
				closeTo(t, "renorm", c.Outputs[0], nn.MaxNorm(w, c.Float("maxnorm")))
			case "elastic_net":
				a, b := autograd.Param(goldtensor.ToTensor(c.Inputs[0])), autograd.Param(goldtensor.ToTensor(c.Inputs[1]))
				pen := nn.ElasticNetPenalty([]*autograd.Var{a, b}, c.Float("alpha"), c.Float("l1_ratio"))
				closeTo(t, "penalty", c.Outputs[0], pen.Value())
				require.NoError(t, pen.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
				closeTo(t, "grad a", *c.Grads[0], a.Grad())
				closeTo(t, "grad b", *c.Grads[1], b.Grad())
			case "weight_norm":
				v := goldtensor.ToTensor(c.Inputs[1])
				m := nn.NewLinear(tensor.NewGenerator(1), v.Shape()[1], v.Shape()[0], true, tensor.Float64)
				m.Weight.Value().CopyFrom(v)
				m.Bias.Value().CopyFrom(goldtensor.ToTensor(c.Inputs[2]))
				dim := -1
				if c.Attrs["dim"] != nil {
					dim = c.Int("dim")
				}
				wn := nn.ApplyWeightNorm(m, "weight", dim)
				assert.Equal(t, []string{"bias", "weight_g", "weight_v"}, paramNames(m))
				closeTo(t, "weight_g", c.Inputs[0], wn.G.Value())
				closeTo(t, "weight_v", c.Inputs[1], wn.V.Value())
				x := autograd.Param(goldtensor.ToTensor(c.Inputs[3]))
				y := nn.Call(m, x)
				closeTo(t, "y", c.Outputs[0], y.Value())
				require.NoError(t, y.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
				closeTo(t, "grad g", *c.Grads[0], wn.G.Grad())
				closeTo(t, "grad v", *c.Grads[1], wn.V.Grad())
				closeTo(t, "grad x", *c.Grads[3], x.Grad())
			case "spectral_norm":
				m := goldenLayer(c)
				sn := nn.ApplySpectralNorm(tensor.NewGenerator(1), m, "weight", c.Int("n_power_iterations"), 1e-12, c.Int("dim"))
				assert.Equal(t, []string{"bias", "weight_orig"}, paramNames(m))
				var bufs []string
				for _, b := range m.NamedBuffers() {
					bufs = append(bufs, b.Name)
				}
				assert.Equal(t, []string{"weight_u", "weight_v"}, bufs)
				sn.U.CopyFrom(goldtensor.ToTensor(c.Inputs[3]))
				sn.V.CopyFrom(goldtensor.ToTensor(c.Inputs[4]))
				m.Train(c.Bool("train"))
				x := autograd.Param(goldtensor.ToTensor(c.Inputs[2]))
				y := nn.Call(m, x)
				closeTo(t, "y", c.Outputs[0], y.Value())
				closeTo(t, "u", c.Outputs[1], sn.U)
				closeTo(t, "v", c.Outputs[2], sn.V)
				require.NoError(t, y.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
				closeTo(t, "grad weight_orig", *c.Grads[0], sn.Orig.Grad())
				closeTo(t, "grad x", *c.Grads[2], x.Grad())
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
		})
	}
}

func TestPenaltyGradCheck(t *testing.T) {
	g := tensor.NewGenerator(3)
	a := g.Normal([]int{3, 4}, 0, 1, tensor.Float64)
	b := g.Normal([]int{4, 3}, 0, 1, tensor.Float64).T() // non-contiguous
	tests := map[string]func(ps []*autograd.Var) *autograd.Var{
		"l1":      nn.L1Penalty,
		"l2":      nn.L2Penalty,
		"elastic": func(ps []*autograd.Var) *autograd.Var { return nn.ElasticNetPenalty(ps, 0.7, 0.4) },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var { return f(in) }, a, b))
		})
	}
	p := autograd.Param(tensor.FromSlice([]float64{1, -2, 3}, 3))
	assert.InDelta(t, 6, nn.L1Penalty([]*autograd.Var{p}).Item(), 1e-15)
	assert.InDelta(t, 14, nn.L2Penalty([]*autograd.Var{p}).Item(), 1e-15)
	assert.Panics(t, func() { nn.L1Penalty(nil) })
	assert.Panics(t, func() { nn.ElasticNetPenalty([]*autograd.Var{p}, 1, 2) })
}

func TestReparametrizationGradCheck(t *testing.T) {
	g := tensor.NewGenerator(4)
	v := g.Normal([]int{3, 4}, 0, 1, tensor.Float64)
	gain := g.Normal([]int{3, 1}, 0, 1, tensor.Float64)
	require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
		return nn.WeightNormOf(in[0], in[1], 0)
	}, v, gain))
	require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
		return nn.WeightNormOf(in[0], in[1], -1)
	}, v.T(), tensor.ScalarOf(1.3, tensor.Float64)))
}

func TestWeightNormTrainAndRemove(t *testing.T) {
	lin := nn.NewLinear(tensor.NewGenerator(1), 3, 2, true, tensor.Float64)
	before := lin.Weight.Value().Clone()
	wn := nn.ApplyWeightNorm(lin, "weight", 0)
	x := autograd.New(tensor.NewGenerator(2).Normal([]int{4, 3}, 0, 1, tensor.Float64))
	// The reparametrized weight starts equal to the original.
	golden.AllClose(t, "weight", golden.Tensor{Shape: before.Shape(), DType: golden.Float64, Data: before.Float64s()},
		lin.Weight.Shape(), lin.Weight.Value().Float64s(), 1e-12, 1e-14)
	// Two training steps: the hook recomputes the weight each forward.
	for range 2 {
		lin.ZeroGrad()
		require.NoError(t, nn.Call(lin, x).Sum(nil, false).Backward())
		for _, p := range lin.Parameters() {
			p.Value().CopyFrom(p.Value().Sub(p.Grad().MulScalar(0.1)))
		}
	}
	want := nn.WeightNormOf(wn.V, wn.G, 0).Value()
	y := nn.Call(lin, x).Value()
	wn.Remove()
	assert.Equal(t, []string{"bias", "weight"}, paramNames(lin))
	assert.True(t, lin.Weight.IsLeaf())
	golden.AllClose(t, "weight after remove", golden.Tensor{Shape: want.Shape(), DType: golden.Float64, Data: want.Float64s()},
		lin.Weight.Shape(), lin.Weight.Value().Float64s(), 1e-14, 1e-14)
	got := nn.Call(lin, x).Value()
	golden.AllClose(t, "output after remove", golden.Tensor{Shape: y.Shape(), DType: golden.Float64, Data: y.Float64s()},
		got.Shape(), got.Float64s(), 1e-14, 1e-14)
}

func TestSpectralNormConverges(t *testing.T) {
	lin := nn.NewLinear(tensor.NewGenerator(1), 6, 4, false, tensor.Float64)
	w := tensor.FromSlice([]float64{
		3, 0, 0, 0, 0, 0,
		0, 1, 0, 0, 0, 0,
		0, 0, 0.5, 0, 0, 0,
		0, 0, 0, 0.1, 0, 0,
	}, 4, 6)
	lin.Weight.Value().CopyFrom(w)
	sn := nn.ApplySpectralNorm(tensor.NewGenerator(2), lin, "weight", 5, 1e-12, 0)
	x := autograd.New(tensor.Zeros([]int{1, 6}, tensor.Float64))
	for range 4 {
		nn.Call(lin, x)
	}
	assert.InDelta(t, 3, sn.Sigma(), 1e-9, "power iteration finds the largest singular value")
	assert.InDelta(t, 1, lin.Weight.Value().Float64s()[0], 1e-9)
	sn.Remove()
	assert.Equal(t, []string{"weight"}, paramNames(lin))
	assert.Empty(t, lin.NamedBuffers())
	assert.InDelta(t, 1, lin.Weight.Value().Float64s()[0], 1e-9)
	assert.Panics(t, func() { nn.ApplySpectralNorm(tensor.NewGenerator(1), lin, "nope", 1, 1e-12, 0) })
	assert.Panics(t, func() { nn.ApplyWeightNorm(lin, "weight", 5) })
}

func TestMaxNorm(t *testing.T) {
	w := tensor.FromSlice([]float32{3, 4, 0.3, 0.4}, 2, 2)
	nn.MaxNorm(w, 1)
	assert.InDeltaSlice(t, []float64{0.6, 0.8, 0.3, 0.4}, w.Float64s(), 1e-6)
	assert.Equal(t, tensor.Float32, w.DType())
	assert.Panics(t, func() { nn.MaxNorm(tensor.Scalar(1), 1) })
}
