package autograd_test

import (
	"fmt"
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
		if c.Op != "gru_gates" {
			continue
		}
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

// GRUSequence against PyTorch's step-by-step recurrence, forward and
// backward, with dense and strided inputs.
func TestGRUSequenceGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_gru_gates.json") {
		if c.Op != "gru_sequence" {
			continue
		}
		for _, layout := range []string{"contiguous", "strided"} {
			t.Run(c.Name+"/"+layout, func(t *testing.T) {
				in := make([]*autograd.Var, 4)
				for i := range c.Inputs {
					x := goldtensor.ToTensor(c.Inputs[i])
					if layout == "strided" {
						x = ixgStrided(x)
					}
					in[i] = autograd.Param(x)
				}
				out := autograd.GRUSequence(in[0], in[1], in[2], in[3], c.Bool("reverse"))
				assert.Equal(t, "GRUSequence", out.Op())
				tol := 1e-12
				if out.DType() == tensor.Float32 {
					tol = 1e-5
				}
				golden.AllClose(t, "h", c.Outputs[0], out.Shape(), out.Value().To(tensor.Float64).Float64s(), tol, tol)
				require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
				for i := range c.Inputs {
					g := in[i].Grad()
					golden.AllClose(t, fmt.Sprintf("grad %d", i), *c.Grads[i], g.Shape(), g.To(tensor.Float64).Float64s(), tol, tol)
				}
			})
		}
	}
}

// GRUSequence's fused backward and its recorded form by finite differences
// (forward and reverse, with and without bias, a broadcast initial state)
// and the gradient of the gradient.
func TestGRUSequenceGradCheck(t *testing.T) {
	gen := tensor.NewGenerator(4)
	gi := gen.Randn([]int{3, 2, 6}, tensor.Float64)
	h0 := gen.Randn([]int{2, 2}, tensor.Float64)
	whh := gen.Randn([]int{6, 2}, tensor.Float64).MulScalar(0.5)
	bhh := gen.Randn([]int{6}, tensor.Float64)
	w := gen.Randn([]int{3, 2, 2}, tensor.Float64)
	weighted := func(out *autograd.Var) *autograd.Var { return out.Mul(autograd.New(w)).Sum(nil, false) }
	for _, reverse := range []bool{false, true} {
		cases := []struct {
			name string
			f    func(in []*autograd.Var) *autograd.Var
			x    []*tensor.Tensor
		}{
			{"bias", func(in []*autograd.Var) *autograd.Var {
				return weighted(autograd.GRUSequence(in[0], in[1], in[2], in[3], reverse))
			}, []*tensor.Tensor{gi, h0, whh, bhh}},
			{"no_bias", func(in []*autograd.Var) *autograd.Var {
				return weighted(autograd.GRUSequence(in[0], in[1], in[2], nil, reverse))
			}, []*tensor.Tensor{gi, h0, whh}},
			{"broadcast_h0_transposed_w", func(in []*autograd.Var) *autograd.Var {
				return weighted(autograd.GRUSequence(in[0], in[1].Expand(2, 2), in[2].T(), in[3], reverse))
			}, []*tensor.Tensor{gi, h0.Narrow(0, 0, 1).Contiguous(), whh.T().Contiguous(), bhh}},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/reverse=%t", c.name, reverse), func(t *testing.T) {
				require.NoError(t, autograd.GradCheck(c.f, c.x...))
				require.NoError(t, autograd.GradGradCheck(c.f, c.x...))
			})
		}
	}
}

// GRUSequence equals the step-by-step composition of MatMul and GRUGates,
// values and gradients, in float32.
func TestGRUSequenceMatchesSteps(t *testing.T) {
	gen := tensor.NewGenerator(9)
	steps, n, hidden := 6, 5, 19
	gi := gen.Randn([]int{steps, n, 3 * hidden})
	h0 := gen.Randn([]int{n, hidden})
	whh := gen.Randn([]int{3 * hidden, hidden}).MulScalar(0.3)
	bhh := gen.Randn([]int{3 * hidden})
	gout := gen.Randn([]int{steps, n, hidden})
	for _, reverse := range []bool{false, true} {
		fused := []*autograd.Var{autograd.Param(gi), autograd.Param(h0), autograd.Param(whh), autograd.Param(bhh)}
		out := autograd.GRUSequence(fused[0], fused[1], fused[2], fused[3], reverse)
		require.NoError(t, out.BackwardWith(gout, autograd.Options{}))
		ref := []*autograd.Var{autograd.Param(gi), autograd.Param(h0), autograd.Param(whh), autograd.Param(bhh)}
		outs := make([]*autograd.Var, steps)
		h := ref[1]
		for i := range steps {
			t := i
			if reverse {
				t = steps - 1 - i
			}
			h = autograd.GRUGates(ref[0].Select(0, t), h.MatMul(ref[2].T()).Add(ref[3]), h)
			outs[t] = h
		}
		refOut := autograd.Stack(outs, 0)
		require.NoError(t, refOut.BackwardWith(gout, autograd.Options{}))
		assert.InDeltaSlice(t, refOut.Value().Float32s(), out.Value().Float32s(), 1e-5)
		for i := range fused {
			assert.InDeltaSlice(t, ref[i].Grad().Float32s(), fused[i].Grad().Float32s(), 1e-4, "grad %d reverse=%t", i, reverse)
		}
	}
	assert.PanicsWithValue(t, "autograd.GRUSequence: want gi [T, N, 3·H], h0 [N, H], whh [3·H, H] and bhh [3·H], got [6 5 57], [5 19], [57 19] and [19]", func() {
		autograd.GRUSequence(autograd.New(gi), autograd.New(h0), autograd.New(whh), autograd.New(h0.Select(0, 0)), false)
	})
}

// With several threads GRUSequence splits the batch rows into chunks, each
// on its own goroutine; the result matches the single-chunk run, and a
// retained graph gives the same gradients on a second backward pass.
func TestGRUSequenceChunked(t *testing.T) {
	t.Cleanup(func() { tensor.SetNumThreads(0) })
	gen := tensor.NewGenerator(12)
	steps, n, hidden := 4, 50, 24
	gi := gen.Randn([]int{steps, n, 3 * hidden})
	h0 := gen.Randn([]int{n, hidden})
	whh := gen.Randn([]int{3 * hidden, hidden}).MulScalar(0.3)
	bhh := gen.Randn([]int{3 * hidden})
	gout := gen.Randn([]int{steps, n, hidden})
	run := func(threads int, reverse bool) (*tensor.Tensor, []*tensor.Tensor) {
		tensor.SetNumThreads(threads)
		in := []*autograd.Var{autograd.Param(gi), autograd.Param(h0), autograd.Param(whh), autograd.Param(bhh)}
		out := autograd.GRUSequence(in[0], in[1], in[2], in[3], reverse)
		require.NoError(t, out.BackwardWith(gout, autograd.Options{RetainGraph: true}))
		first := make([]*tensor.Tensor, len(in))
		for i, v := range in {
			first[i] = v.Grad().Clone()
		}
		require.NoError(t, out.BackwardWith(gout, autograd.Options{}))
		for i, v := range in {
			assert.InDeltaSlice(t, first[i].MulScalar(2).Float32s(), v.Grad().Float32s(), 1e-4, "second pass grad %d", i)
		}
		return out.Value(), first
	}
	for _, reverse := range []bool{false, true} {
		out1, g1 := run(1, reverse)
		out3, g3 := run(3, reverse)
		assert.InDeltaSlice(t, out1.Float32s(), out3.Float32s(), 1e-6)
		for i := range g1 {
			assert.InDeltaSlice(t, g1[i].Float32s(), g3[i].Float32s(), 1e-4, "grad %d reverse=%t", i, reverse)
		}
	}
}
