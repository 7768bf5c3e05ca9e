package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

func moveTo(t testing.TB, x *tensor.Tensor, d tensor.Device) *tensor.Tensor {
	t.Helper()
	y, err := x.ToDevice(d)
	require.NoError(t, err)
	return y
}

// TestToDevice checks that nn.ToDevice moves parameters, gradients and
// buffers in place, keeping every identity.
func TestToDevice(t *testing.T) {
	d := devicetest.Device(0)
	g := tensor.NewGenerator(1)
	conv := nn.NewConv2d(g, 2, 3, [2]int{3, 3}, tensor.Conv2dOptions{}, true)
	bn := nn.NewBatchNorm2d(3, nn.BatchNormOptions{})
	frozen := nn.NewLinear(g, 4, 2, true)
	frozen.Weight.SetRequiresGrad(false)
	m := nn.NewSequential(conv, bn, nn.NewFlatten(1, -1), frozen)
	params := m.Parameters()
	values := make([]*tensor.Tensor, len(params))
	requires := make([]bool, len(params))
	before := nn.StateDict(m)
	for i, p := range params {
		values[i] = p.Value()
		requires[i] = p.RequiresGrad()
	}
	conv.Weight.SetGrad(tensor.OnesLike(conv.Weight.Value()))
	running := bn.RunningMean

	require.NoError(t, nn.ToDevice(m, d))

	for i, p := range m.Parameters() {
		assert.Same(t, params[i], p, "parameter %d was replaced", i)
		assert.Same(t, values[i], p.Value(), "parameter %d's tensor was replaced", i)
		assert.Equal(t, requires[i], p.RequiresGrad())
		assert.Equal(t, d, p.Value().Device())
	}
	assert.Equal(t, d, conv.Weight.Grad().Device())
	assert.Same(t, running, bn.RunningMean)
	for _, b := range m.NamedBuffers() {
		assert.Equal(t, d, b.Buffer.Device(), b.Name)
	}
	for k, v := range nn.StateDict(m) {
		assert.Equal(t, before[k].Float64s(), v.Float64s(), k)
	}
	// Moving again, or back, works the same way.
	require.NoError(t, nn.ToDevice(m, d))
	require.NoError(t, nn.ToDevice(m, tensor.CPU))
	assert.Equal(t, tensor.CPU, bn.RunningVar.Device())
	assert.Equal(t, tensor.CPU, conv.Weight.Grad().Device())

	err := nn.ToDevice(m, "nosuch:0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nn.ToDevice")
	assert.Contains(t, err.Error(), `"nosuch:0"`)
	assert.Equal(t, tensor.CPU, conv.Weight.Value().Device(), "a failed move must move nothing")
}

// TestLayersOnEmulatedDevice runs layers, losses and helpers forward and
// backward on the emulated device and compares with the CPU.
func TestLayersOnEmulatedDevice(t *testing.T) { runLayerCases(t, devicetest.Device(0), 0) }

// runLayerCases runs every layer case on device d and on the CPU and
// compares, with at least the tolerance minTol.
func runLayerCases(t *testing.T, d tensor.Device, minTol float64) {
	type layerCase struct {
		name string
		tol  float64
		// run builds a module with a fixed seed, moves it with place (the
		// model) and mv (inputs), and returns a scalar loss and the module.
		run func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module)
	}
	cases := []layerCase{
		{"embedding with padding", 0, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			e := nn.NewEmbedding(tensor.NewGenerator(2), 6, 3, nn.EmbeddingOptions{HasPaddingIdx: true, PaddingIdx: 1})
			place(e)
			ids := mv(tensor.FromSlice([]int64{0, 1, 5, 1, 2, 0}, 2, 3))
			return e.Forward(autograd.New(ids)).Square().Sum(nil, false), e
		}},
		{"embedding bag", 0, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			e := nn.NewEmbeddingBag(tensor.NewGenerator(3), 6, 3, nn.EmbeddingBagOptions{})
			place(e)
			ids := mv(tensor.FromSlice([]int64{0, 1, 5, 1, 2, 4, 4}))
			offsets := mv(tensor.FromSlice([]int64{0, 2, 2, 5}))
			return e.Bag(ids, offsets, nil).Exp().Sum(nil, false), e
		}},
		// The CPU runs the GRU's recurrence with fused kernels (tensor.GRUSequence:
		// the hidden weight's gradient summed over all steps in one product),
		// another device step by step, so sums round in another order.
		{"lstm and gru", 1e-6, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			g := tensor.NewGenerator(4)
			lstm := nn.NewLSTM(g, 3, 4, nn.RNNOptions{NumLayers: 2})
			gru := nn.NewGRU(g, 4, 2, nn.RNNOptions{BatchFirst: false})
			m := nn.NewSequential(lstm, gru)
			place(m)
			x := mv(tensor.NewGenerator(5).Randn([]int{5, 2, 3}))
			return m.Forward(autograd.New(x)).Tanh().Sum(nil, false), m
		}},
		{"attention and transformer", 1e-6, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			layer := nn.NewTransformerEncoderLayer(tensor.NewGenerator(6), 8, 2, nn.TransformerOptions{DimFeedforward: 16})
			layer.Train(false)
			place(layer)
			x := autograd.New(mv(tensor.NewGenerator(7).Randn([]int{4, 2, 8})))
			q := autograd.New(mv(tensor.NewGenerator(8).Randn([]int{2, 5, 4})))
			causal := nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{IsCausal: true})
			return layer.Forward(x).Square().Mean(nil, false).Add(causal.Sum(nil, false)), layer
		}},
		{"cnn with norms", 1e-5, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			g := tensor.NewGenerator(9)
			m := nn.NewSequential(
				nn.NewConv2d(g, 2, 4, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true),
				nn.NewBatchNorm2d(4, nn.BatchNormOptions{CumulativeAverage: true}),
				nn.NewRReLU(0.1, 0.3, tensor.NewGenerator(10)),
				nn.NewGroupNorm(2, 4, 1e-5, true),
				nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}}),
				nn.NewDropout(0.3, tensor.NewGenerator(11)),
				nn.NewFlatten(1, -1),
				nn.NewLayerNorm([]int{16}, 1e-5, true),
				nn.NewLinear(g, 16, 5, true),
			)
			place(m)
			x := mv(tensor.NewGenerator(12).Randn([]int{3, 2, 4, 4}))
			logits := m.Forward(autograd.New(x))
			y := mv(tensor.FromSlice([]int64{4, 0, 2}))
			ce := nn.NewCrossEntropyLoss().Forward(logits, y)
			mm := nn.NewMultiMarginLoss().Forward(logits, y)
			return ce.Add(mm), m
		}},
		{"ctc loss", 1e-6, func(place func(nn.Module), mv func(*tensor.Tensor) *tensor.Tensor) (*autograd.Var, nn.Module) {
			lin := nn.NewLinear(tensor.NewGenerator(13), 3, 4, true)
			place(lin)
			x := mv(tensor.NewGenerator(14).Randn([]int{6, 2, 3}))
			lp := autograd.LogSoftmax(lin.Forward(autograd.New(x)), 2)
			targets := mv(tensor.FromSlice([]int64{1, 2, 3, 1}, 2, 2))
			lens := mv(tensor.FromSlice([]int64{6, 5}))
			tlens := mv(tensor.FromSlice([]int64{2, 2}))
			return nn.NewCTCLoss().Forward(lp, targets, lens, tlens), lin
		}},
	}
	for _, c := range cases {
		c.tol = max(c.tol, minTol)
		t.Run(c.name, func(t *testing.T) {
			wantLoss, wantM := c.run(func(nn.Module) {}, func(x *tensor.Tensor) *tensor.Tensor { return x })
			wantLoss.Backward()
			gotLoss, gotM := c.run(func(m nn.Module) { require.NoError(t, nn.ToDevice(m, d)) }, func(x *tensor.Tensor) *tensor.Tensor { return moveTo(t, x, d) })
			require.Equal(t, d, gotLoss.Value().Device())
			gotLoss.Backward()
			assert.InDelta(t, wantLoss.Item(), gotLoss.Item(), c.tol*(1+math.Abs(wantLoss.Item())))
			wp, gp := wantM.NamedParameters(), gotM.NamedParameters()
			require.Len(t, gp, len(wp))
			for i := range wp {
				wg, gg := wp[i].Param.Grad(), gp[i].Param.Grad()
				if wg == nil {
					assert.Nil(t, gg, wp[i].Name)
					continue
				}
				require.NotNil(t, gg, wp[i].Name)
				require.Equal(t, d, gg.Device(), "%s: gradient left the device", wp[i].Name)
				w, g := wg.Float64s(), gg.Float64s()
				for j := range w {
					require.LessOrEqual(t, math.Abs(w[j]-g[j]), c.tol*(1+math.Abs(w[j])), fmt.Sprintf("%s grad[%d]: %v on %s, %v on the CPU", wp[i].Name, j, g[j], d, w[j]))
				}
			}
			for i, b := range gotM.NamedBuffers() {
				require.Equal(t, d, b.Buffer.Device(), b.Name)
				assert.InDeltaSlice(t, wantM.NamedBuffers()[i].Buffer.Float64s(), b.Buffer.Float64s(), max(c.tol, 1e-6), b.Name)
			}
		})
	}
}

// TestHelpersOnEmulatedDevice covers the module-free helpers.
func TestHelpersOnEmulatedDevice(t *testing.T) {
	d := devicetest.Device(0)
	w := tensor.NewGenerator(15).Randn([]int{3, 4})
	want := nn.MaxNorm(w.Clone(), 1)
	got := nn.MaxNorm(moveTo(t, w, d), 1)
	require.Equal(t, d, got.Device())
	assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-7)

	m := nn.NewSequential(nn.NewLinear(tensor.NewGenerator(16), 4, 2, true), nn.NewReLU())
	cpuSummary := nn.Summary(m, 5, 4)
	require.NoError(t, nn.ToDevice(m, d))
	assert.Equal(t, cpuSummary, nn.Summary(m, 5, 4))
	mask := nn.GenerateSquareSubsequentMask(3)
	assert.Equal(t, tensor.CPU, mask.Device())
}
