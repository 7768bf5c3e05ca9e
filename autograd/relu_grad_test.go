package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Relu's backward is one fused masking op; check it and the gradient of that
// op (GradGradCheck) numerically, with dense, transposed and broadcast
// inputs.
func TestReluGradCheck(t *testing.T) {
	x := tensor.FromSlice([]float64{-1.5, 0.7, 2, -0.3, 1.1, -2.2}, 2, 3)
	w := tensor.FromSlice([]float64{0.5, -1, 2, 1.5, -0.25, 3}, 2, 3)
	cases := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
	}{
		{"relu", func(in []*autograd.Var) *autograd.Var { return in[0].Relu().Mul(in[1]) }},
		{"transposed", func(in []*autograd.Var) *autograd.Var { return in[0].T().Relu().Mul(in[1].T()) }},
		{"broadcast", func(in []*autograd.Var) *autograd.Var {
			return in[0].Narrow(0, 0, 1).Expand(2, 3).Relu().Mul(in[1])
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, x, w))
			require.NoError(t, autograd.GradGradCheck(c.f, x, w))
		})
	}
}
