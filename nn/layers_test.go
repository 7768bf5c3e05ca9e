package nn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// layerFromCase builds the module a golden layer case describes (Float64).
func layerFromCase(t *testing.T, c golden.Case) nn.Module {
	f64 := tensor.Float64
	g := tensor.NewGenerator(1)
	switch c.Op {
	case "batchnorm1d", "batchnorm2d", "batchnorm3d":
		opt := nn.BatchNormOptions{NoAffine: !c.Bool("affine"), NoTrackRunningStats: !c.Bool("track")}
		if _, ok := c.Attrs["eps"]; ok {
			opt.Eps = c.Float("eps")
		}
		if _, ok := c.Attrs["momentum"]; ok {
			opt.Momentum = c.Float("momentum")
		}
		_, opt.CumulativeAverage = c.Attrs["cumulative"]
		switch c.Op {
		case "batchnorm1d":
			return nn.NewBatchNorm1d(c.Int("c"), opt, f64)
		case "batchnorm2d":
			return nn.NewBatchNorm2d(c.Int("c"), opt, f64)
		}
		return nn.NewBatchNorm3d(c.Int("c"), opt, f64)
	case "instancenorm1d", "instancenorm2d":
		opt := nn.InstanceNormOptions{Affine: c.Bool("affine"), TrackRunningStats: c.Bool("track"), Momentum: c.Float("momentum")}
		if c.Op == "instancenorm1d" {
			return nn.NewInstanceNorm1d(c.Int("c"), opt, f64)
		}
		return nn.NewInstanceNorm2d(c.Int("c"), opt, f64)
	case "layernorm":
		return nn.NewLayerNorm(c.Ints("shape"), c.Float("eps"), c.Bool("affine"), f64)
	case "groupnorm":
		return nn.NewGroupNorm(c.Int("groups"), c.Int("c"), 0, c.Bool("affine"), f64)
	case "rmsnorm":
		return nn.NewRMSNorm(c.Ints("shape"), c.Float("eps"), c.Bool("affine"), f64)
	case "lrn":
		return nn.NewLocalResponseNorm(c.Int("size"), c.Float("alpha"), c.Float("beta"), c.Float("k"))
	}
	return layerFromCaseMore(t, c, g)
}

// attrStrings reads a list-of-strings attribute.
func attrStrings(t *testing.T, c golden.Case, name string) []string {
	raw, ok := c.Attrs[name].([]any)
	require.True(t, ok || c.Attrs[name] == nil, "attr %s", name)
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = v.(string)
	}
	return out
}

// TestLayersGolden runs every module case of golden_layers.json: state-dict
// keys and repr as torch's, output, input and parameter gradients, and the
// buffers after the call.
func TestLayersGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_layers.json") {
		if _, ok := c.Attrs["nx"]; !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			m := layerFromCase(t, c)
			nx := c.Int("nx")
			params, buffers := attrStrings(t, c, "params"), attrStrings(t, c, "buffers")
			assert.Equal(t, attrStrings(t, c, "keys"), append([]string{}, nn.StateDictKeys(m)...))
			if s, ok := m.(fmt.Stringer); ok {
				assert.Equal(t, c.String("repr"), s.String())
			}
			sd := map[string]*tensor.Tensor{}
			for i, name := range params {
				sd[name] = goldtensor.ToTensor(c.Inputs[nx+i])
			}
			for i, name := range buffers {
				sd[name] = goldtensor.ToTensor(c.Inputs[nx+len(params)+i])
			}
			require.NoError(t, nn.LoadStateDict(m, sd, true))
			m.Train(c.Bool("train"))
			xs := make([]*autograd.Var, nx)
			for i := range xs {
				v := goldtensor.ToTensor(c.Inputs[i])
				if v.DType().IsFloat() {
					xs[i] = autograd.Param(v)
				} else {
					xs[i] = autograd.New(v)
				}
			}
			out := forwardLayer(m, xs)
			rtol, atol := 1e-9, 1e-11
			golden.AllClose(t, "output", c.Outputs[0], out.Shape(), out.Value().Float64s(), rtol, atol)
			require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
			for i, x := range xs {
				if c.Grads[i] == nil {
					continue
				}
				require.NotNil(t, x.Grad(), "grad of input %d", i)
				golden.AllClose(t, fmt.Sprintf("grad of input %d", i), *c.Grads[i], x.Grad().Shape(), x.Grad().Float64s(), rtol, atol)
			}
			named := map[string]*autograd.Var{}
			for _, p := range m.NamedParameters() {
				named[p.Name] = p.Param
			}
			for i, name := range params {
				g := named[name].Grad()
				require.NotNil(t, g, "grad of %s", name)
				goldtensor.Check(t, "grad of "+name, *c.Grads[nx+i], g, rtol, atol)
			}
			bufs := map[string]*tensor.Tensor{}
			for _, b := range m.NamedBuffers() {
				bufs[b.Name] = b.Buffer
			}
			for i, name := range buffers {
				b := bufs[name]
				goldtensor.Check(t, "buffer "+name, c.Outputs[1+i], b, rtol, atol)
			}
		})
	}
}

// forwardLayer applies m to xs: one input through Forward, two through a
// two-input method.
func forwardLayer(m nn.Module, xs []*autograd.Var) *autograd.Var {
	if len(xs) == 2 {
		return m.(interface {
			Forward2(a, b *autograd.Var) *autograd.Var
		}).Forward2(xs[0], xs[1])
	}
	return m.Forward(xs[0])
}

// TestBatchNormRunningStatsSteps trains BatchNorm2d for three steps, checks
// the running statistics and batch count against torch, then the
// evaluation-mode output.
func TestBatchNormRunningStatsSteps(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_layers.json") {
		if c.Op != "batchnorm_steps" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			m := nn.NewBatchNorm2d(3, nn.BatchNormOptions{CumulativeAverage: c.Bool("cumulative")}, tensor.Float64)
			require.NoError(t, nn.LoadStateDict(m, map[string]*tensor.Tensor{
				"weight": goldtensor.ToTensor(c.Inputs[4]), "bias": goldtensor.ToTensor(c.Inputs[5]),
			}, false))
			for i := range 3 {
				m.Forward(autograd.New(goldtensor.ToTensor(c.Inputs[i])))
			}
			golden.AllClose(t, "running_mean", c.Outputs[0], m.RunningMean.Shape(), m.RunningMean.Float64s(), 1e-12, 1e-12)
			golden.AllClose(t, "running_var", c.Outputs[1], m.RunningVar.Shape(), m.RunningVar.Float64s(), 1e-12, 1e-12)
			assert.Equal(t, tensor.Int64, m.NumBatchesTracked.DType())
			assert.Equal(t, c.Outputs[2].Int64s(), m.NumBatchesTracked.Int64s())
			m.Train(false)
			y := m.Forward(autograd.New(goldtensor.ToTensor(c.Inputs[3])))
			golden.AllClose(t, "eval output", c.Outputs[3], y.Shape(), y.Value().Float64s(), 1e-12, 1e-12)
			assert.Equal(t, c.Outputs[2].Int64s(), m.NumBatchesTracked.Int64s(), "evaluation does not count batches")
		})
	}
}
