package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// GRUGates against PyTorch's composition of the same gate arithmetic, on
// dense operands (the fused kernels) and strided ones (the tensor-op
// fallback), forward and backward.
func TestGRUGatesGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_gru_gates.json") {
		for _, layout := range []string{"contiguous", "strided"} {
			t.Run(c.Name+"/"+layout, func(t *testing.T) {
				in := make([]*autograd.Var, 3)
				for i := range in {
					x := goldtensor.ToTensor(c.Inputs[i])
					if layout == "strided" {
						x = ixgStrided(x)
					}
					in[i] = autograd.Param(x)
				}
				out := autograd.GRUGates(in[0], in[1], in[2])
				assert.Equal(t, "GRUGates", out.Op())
				tol := 1e-12
				if out.DType() == tensor.Float32 {
					tol = 2e-6
				}
				golden.AllClose(t, "h'", c.Outputs[0], out.Shape(), out.Value().To(tensor.Float64).Float64s(), tol, tol)
				require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
				for i, name := range []string{"gi", "gh", "h"} {
					g := in[i].Grad()
					golden.AllClose(t, "grad "+name, *c.Grads[i], g.Shape(), g.To(tensor.Float64).Float64s(), tol, tol)
				}
			})
		}
	}
}

// The fused backward and its recorded (Var-op) form by finite differences,
// with dense, transposed and broadcast operands, and the gradient of the
// gradient.
func TestGRUGatesGradCheck(t *testing.T) {
	gen := tensor.NewGenerator(3)
	gi := gen.Randn([]int{3, 6}, tensor.Float64)
	gh := gen.Randn([]int{3, 6}, tensor.Float64)
	h := gen.Randn([]int{3, 2}, tensor.Float64)
	w := gen.Randn([]int{3, 2}, tensor.Float64)
	weighted := func(out *autograd.Var) *autograd.Var { return out.Mul(autograd.New(w)).Sum(nil, false) }
	cases := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
		x    []*tensor.Tensor
	}{
		{"dense", func(in []*autograd.Var) *autograd.Var {
			return weighted(autograd.GRUGates(in[0], in[1], in[2]))
		}, []*tensor.Tensor{gi, gh, h}},
		{"transposed", func(in []*autograd.Var) *autograd.Var {
			return weighted(autograd.GRUGates(in[0].T(), in[1].T(), in[2].T()))
		}, []*tensor.Tensor{gi.T().Contiguous(), gh.T().Contiguous(), h.T().Contiguous()}},
		{"broadcast_state", func(in []*autograd.Var) *autograd.Var {
			return weighted(autograd.GRUGates(in[0], in[1], in[2].Expand(3, 2)))
		}, []*tensor.Tensor{gi, gh, h.Narrow(0, 0, 1).Contiguous()}},
		{"state_reused", func(in []*autograd.Var) *autograd.Var {
			h1 := autograd.GRUGates(in[0], in[1], in[2])
			return weighted(autograd.GRUGates(in[1], in[0], h1))
		}, []*tensor.Tensor{gi, gh, h}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, c.x...))
			require.NoError(t, autograd.GradGradCheck(c.f, c.x...))
		})
	}
}

// The fused float32 kernels agree with the tensor-op composition they
// replace (reached here through strided operands).
func TestGRUGatesFusedMatchesComposition(t *testing.T) {
	gen := tensor.NewGenerator(11)
	for _, hidden := range []int{1, 7, 16, 33} {
		gi := gen.Randn([]int{5, 3 * hidden}).MulScalar(3)
		gh := gen.Randn([]int{5, 3 * hidden}).MulScalar(3)
		h := gen.Randn([]int{5, hidden})
		dh := gen.Randn([]int{5, hidden})
		out, gates := tensor.GRUGates(gi, gh, h)
		outS, gatesS := tensor.GRUGates(ixgStrided(gi), ixgStrided(gh), ixgStrided(h))
		assert.InDeltaSlice(t, outS.Float32s(), out.Float32s(), 1e-6)
		assert.InDeltaSlice(t, gatesS.Float32s(), gates.Float32s(), 1e-6)
		a, b, c := tensor.GRUGatesBackward(dh, gates, gh, h)
		aS, bS, cS := tensor.GRUGatesBackward(ixgStrided(dh), ixgStrided(gates), ixgStrided(gh), ixgStrided(h))
		assert.InDeltaSlice(t, aS.Float32s(), a.Float32s(), 1e-5)
		assert.InDeltaSlice(t, bS.Float32s(), b.Float32s(), 1e-5)
		assert.InDeltaSlice(t, cS.Float32s(), c.Float32s(), 1e-6)
	}
}

func TestGRUGatesShapePanics(t *testing.T) {
	x := tensor.Zeros([]int{2, 6})
	assert.PanicsWithValue(t, "tensor.GRUGates: want two [N, 3·H] operands and an [N, H] state, got [2 6], [2 6] and [2 3]", func() {
		tensor.GRUGates(x, x, tensor.Zeros([]int{2, 3}))
	})
	assert.Panics(t, func() { tensor.GRUGates(x, x.To(tensor.Float64), tensor.Zeros([]int{2, 2})) })
	assert.Panics(t, func() {
		tensor.GRUGatesBackward(tensor.Zeros([]int{1, 2}), x, x, tensor.Zeros([]int{2, 2}))
	})
}
