package autograd_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/tensor"
)

// deviceGraph builds a scalar loss from its parameters; int inputs are
// passed as plain tensors through mv.
type deviceGraph struct {
	name   string
	params []*tensor.Tensor
	tol    float64 // 0: bitwise; else relative, where the CPU has fast kernels
	loss   func(p []*autograd.Var, mv func(*tensor.Tensor) *tensor.Tensor) *autograd.Var
}

func deviceGraphs() []deviceGraph {
	g := tensor.NewGenerator(11)
	x := g.Randn([]int{3, 5})
	withZeros := tensor.FromSlice([]float32{1, 0, 2, -1, 3, 0.5, 2, 0, 1, 4, 1, 2}, 3, 4)
	img := g.Randn([]int{2, 3, 5, 5})
	conv := g.Randn([]int{4, 3, 3, 3})
	gamma := g.Uniform([]int{4}, 0.5, 1.5)
	beta := g.Randn([]int{4})
	lin := g.Randn([]int{5, 4 * 2 * 2})
	labels := tensor.FromSlice([]int64{1, 3})
	table := g.Randn([]int{6, 4})
	ids := tensor.FromSlice([]int64{0, 5, 2, 2, 1, 0}, 2, 3)
	mpIdx := tensor.FromSlice([]int64{0, 3, 5, 6}, 1, 1, 2, 2)
	return []deviceGraph{
		{"views and slices", []*tensor.Tensor{x}, 0, func(p []*autograd.Var, _ func(*tensor.Tensor) *tensor.Tensor) *autograd.Var {
			v := p[0]
			a := v.Narrow(1, 1, 3).Mul(v.Slice(1, 0, 5, 2))
			b := v.Select(0, 1).Unsqueeze(0).Add(v.T().Sum([]int{1}, false).Unsqueeze(0))
			parts := v.Unbind(0)
			c := parts[0].Mul(parts[2]).Sum(nil, false)
			return a.Sum(nil, false).Add(b.Tanh().Sum(nil, false)).Add(c).Add(v.Pad([]int{1, 2}, tensor.PadReflect, 0).Square().Mean(nil, false))
		}},
		{"reductions with zeros", []*tensor.Tensor{withZeros}, 0, func(p []*autograd.Var, _ func(*tensor.Tensor) *tensor.Tensor) *autograd.Var {
			v := p[0]
			return v.Prod([]int{1}, false).Sum(nil, false).Add(v.CumProd(1).Sum(nil, false)).Add(v.AddScalar(5).Prod(nil, false).MulScalar(1e-3)).
				Add(v.Clamp(-0.5, 1.5).Sum(nil, false)).Add(v.Max([]int{0}, false).Sum(nil, false))
		}},
		{"cnn", []*tensor.Tensor{img, conv, gamma, beta, lin}, 1e-5, func(p []*autograd.Var, mv func(*tensor.Tensor) *tensor.Tensor) *autograd.Var {
			h := autograd.Conv2d(p[0], p[1], nil, tensor.Conv2dOptions{Padding: [2]int{1, 1}})
			rm, rv := mv(tensor.Zeros([]int{4})), mv(tensor.Ones([]int{4}))
			h = autograd.BatchNorm(h, p[2], p[3], rm, rv, true, 0.1, 1e-5).Relu()
			h = autograd.MaxPool2d(h, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}})
			h = autograd.Dropout(h, 0.25, true, tensor.NewGenerator(5))
			logits := h.Reshape(2, 16).MatMul(p[4].T())
			lp := autograd.LogSoftmax(logits, 1)
			return lp.Gather(1, mv(labels).Unsqueeze(1)).Mean(nil, false).Neg()
		}},
		// 2e-6: the CPU's float32 LayerNorm backward rounds each term of a
		// gradient that cancels to nearly 0 here (sum of squares of a
		// normalized row) in float32, as PyTorch's does.
		{"embedding, norms, upsampling", []*tensor.Tensor{table, img}, 2e-6, func(p []*autograd.Var, mv func(*tensor.Tensor) *tensor.Tensor) *autograd.Var {
			e := autograd.Embedding(mv(ids), p[0])
			l := autograd.LayerNorm(e, []int{4}, nil, nil, 1e-5).Square().Sum(nil, false)
			u := autograd.UpsampleBilinear2d(p[1], 7, 8, false, 0, 0).Sin().Sum(nil, false)
			n := autograd.UpsampleNearest2d(p[1], 10, 10, 0, 0).Mul(autograd.UpsampleNearest2d(p[1], 10, 10, 0, 0)).Mean(nil, false)
			gn := autograd.GroupNorm(p[1], 3, nil, nil, 1e-5).Exp().Mean(nil, false)
			mu := autograd.MaxUnpool2d(p[1].Narrow(0, 0, 1).Narrow(1, 0, 1).Narrow(2, 0, 2).Narrow(3, 0, 2), mv(mpIdx), 3, 3).Square().Sum(nil, false)
			return l.Add(u).Add(n).Add(gn).Add(mu).Add(autograd.Softmax(p[1], 1).Square().Sum(nil, false))
		}},
	}
}

// TestBackwardOnEmulatedDevice checks that gradients of composite graphs on
// the emulated device equal the CPU's and stay on the device.
func TestBackwardOnEmulatedDevice(t *testing.T) { runDeviceGraphs(t, devicetest.Device(0), 0) }

// runDeviceGraphs runs every graph on device d and on the CPU and compares
// losses and gradients, with at least the tolerance minTol.
func runDeviceGraphs(t *testing.T, d tensor.Device, minTol float64) {
	move := func(x *tensor.Tensor) *tensor.Tensor {
		y, err := x.ToDevice(d)
		require.NoError(t, err)
		return y
	}
	run := func(c deviceGraph, mv func(*tensor.Tensor) *tensor.Tensor) (float64, []*tensor.Tensor) {
		ps := make([]*autograd.Var, len(c.params))
		for i, p := range c.params {
			ps[i] = autograd.Param(mv(p))
		}
		loss := c.loss(ps, mv)
		loss.Backward()
		gs := make([]*tensor.Tensor, len(ps))
		for i, p := range ps {
			gs[i] = p.Grad()
		}
		return loss.Item(), gs
	}
	for _, c := range deviceGraphs() {
		c.tol = max(c.tol, minTol)
		t.Run(c.name, func(t *testing.T) {
			wantLoss, want := run(c, func(x *tensor.Tensor) *tensor.Tensor { return x })
			gotLoss, got := run(c, move)
			require.InDelta(t, wantLoss, gotLoss, c.tol*(1+math.Abs(wantLoss)))
			for i := range want {
				require.NotNil(t, got[i], "parameter %d has no gradient", i)
				require.Equal(t, d, got[i].Device(), "gradient %d left the device", i)
				w, g := want[i].Float64s(), got[i].Float64s()
				require.Len(t, g, len(w))
				for j := range w {
					require.LessOrEqual(t, math.Abs(w[j]-g[j]), c.tol*(1+math.Abs(w[j])), fmt.Sprintf("gradient %d element %d: %v on %s, %v on the CPU", i, j, g[j], d, w[j]))
				}
			}
		})
	}
}

// TestGradCheckOnEmulatedDevice runs the finite-difference check with
// inputs on the emulated device.
func TestGradCheckOnEmulatedDevice(t *testing.T) {
	d := devicetest.Device(0)
	x, err := tensor.NewGenerator(3).Randn([]int{2, 3}, tensor.Float64).ToDevice(d)
	require.NoError(t, err)
	w, err := tensor.NewGenerator(4).Randn([]int{3, 2}, tensor.Float64).ToDevice(d)
	require.NoError(t, err)
	f := func(in []*autograd.Var) *autograd.Var {
		return autograd.Softmax(in[0].MatMul(in[1]).Tanh(), 1).Mul(in[0].Narrow(1, 0, 2))
	}
	require.NoError(t, autograd.GradCheck(f, x, w))
	require.NoError(t, autograd.GradGradCheck(func(in []*autograd.Var) *autograd.Var { return in[0].Mul(in[1].T()).Sigmoid() }, x, w))
}
