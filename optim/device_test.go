package optim_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// deviceModel is a model with its training batch.
type deviceModel struct {
	name  string
	tol   float64 // 0: bitwise; the CPU's convolution kernels round differently
	build func() (nn.Module, *tensor.Tensor, *tensor.Tensor)
}

func deviceModels() []deviceModel {
	return []deviceModel{
		{"mlp", 0, func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			g := tensor.NewGenerator(21)
			m := nn.NewSequential(nn.NewLinear(g, 8, 16, true), nn.NewReLU(), nn.NewLinear(g, 16, 3, true))
			return m, g.Randn([]int{6, 8}), tensor.FromSlice([]int64{0, 2, 1, 1, 0, 2})
		}},
		{"cnn", 1e-5, func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			g := tensor.NewGenerator(22)
			m := nn.NewSequential(
				// No bias before BatchNorm: its gradient is rounding noise,
				// which Adam would amplify to full-size steps of either sign.
				nn.NewConv2d(g, 1, 4, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false),
				nn.NewBatchNorm2d(4, nn.BatchNormOptions{}),
				nn.NewReLU(),
				nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}}),
				nn.NewDropout(0.2, tensor.NewGenerator(23)),
				nn.NewFlatten(1, -1),
				nn.NewLinear(g, 4*3*3, 3, true),
			)
			return m, g.Randn([]int{4, 1, 6, 6}), tensor.FromSlice([]int64{2, 0, 1, 2})
		}},
	}
}

var deviceOptimizers = []struct {
	name string
	make func([]*autograd.Var) optim.Optimizer
}{
	{"sgd momentum", func(ps []*autograd.Var) optim.Optimizer {
		return optim.NewSGD(ps, optim.SGDOptions{LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3})
	}},
	{"adamw", func(ps []*autograd.Var) optim.Optimizer {
		return optim.NewAdamW(ps, optim.AdamOptions{LR: 0.01, WeightDecay: 0.01})
	}},
}

const deviceSteps = 5

// train builds the model, moves it (and its batch) to d with one call each,
// builds the optimizer, trains for deviceSteps and returns the state dict
// on the CPU and the losses.
func train(t *testing.T, dm deviceModel, mk func([]*autograd.Var) optim.Optimizer, d tensor.Device, perStep func()) (map[string]*tensor.Tensor, []float64) {
	t.Helper()
	m, x, y := dm.build()
	require.NoError(t, nn.ToDevice(m, d))
	x, err := x.ToDevice(d)
	require.NoError(t, err)
	y, err = y.ToDevice(d)
	require.NoError(t, err)
	opt := mk(m.Parameters())
	loss := nn.NewCrossEntropyLoss()
	var losses []float64
	for range deviceSteps {
		opt.ZeroGrad()
		l := loss.Forward(m.Forward(autograd.New(x)), y)
		l.Backward()
		require.NoError(t, opt.Step())
		losses = append(losses, l.Item())
		if perStep != nil {
			perStep()
		}
	}
	sd := nn.StateDict(m)
	for k, v := range sd {
		require.Equal(t, d, v.Device(), "%s left the device", k)
	}
	for _, p := range m.Parameters() {
		require.Equal(t, d, p.Grad().Device(), "a gradient left the device")
	}
	return sd, losses
}

// TestTrainOnEmulatedDevice trains an MLP and a small CNN on the emulated
// device and checks that they end where CPU training ends, and that a
// training step does not copy tensors through the host.
func TestTrainOnEmulatedDevice(t *testing.T) {
	for i, dm := range deviceModels() {
		for j, o := range deviceOptimizers {
			t.Run(dm.name+"/"+o.name, func(t *testing.T) {
				wantSD, wantLoss := train(t, dm, o.make, tensor.CPU, nil)
				d := devicetest.Device(10 + 2*i + j)
				be := devicetest.Open(d)
				var toHost, fromHost []int64
				be.ResetCounters()
				gotSD, gotLoss := train(t, dm, o.make, d, func() {
					th, fh := be.Transfers()
					toHost, fromHost = append(toHost, th), append(fromHost, fh)
				})
				requireSameTraining(t, d, wantSD, gotSD, wantLoss, gotLoss, dm.tol)
				// Per step the host sees the loss and the class-target bounds
				// verdict (two scalars) and sends a dropout mask; nothing
				// else crosses.
				for s := 1; s < deviceSteps; s++ {
					assert.LessOrEqual(t, toHost[s]-toHost[s-1], int64(2), "step %d copied to the host %d times", s, toHost[s]-toHost[s-1])
					assert.LessOrEqual(t, fromHost[s]-fromHost[s-1], int64(1), "step %d copied from the host %d times", s, fromHost[s]-fromHost[s-1])
				}
			})
		}
	}
}

// requireSameTraining compares the final state dicts and the losses of two
// training runs, to the relative tolerance tol (0: bitwise).
func requireSameTraining(t *testing.T, d tensor.Device, wantSD, gotSD map[string]*tensor.Tensor, wantLoss, gotLoss []float64, tol float64) {
	t.Helper()
	require.Len(t, gotSD, len(wantSD))
	for k, w := range wantSD {
		g := gotSD[k]
		require.NotNil(t, g, k)
		wv, gv := w.Float64s(), g.Float64s()
		for e := range wv {
			require.LessOrEqual(t, math.Abs(wv[e]-gv[e]), tol*(1+math.Abs(wv[e])), fmt.Sprintf("%s[%d]: %v on %s, %v on the CPU", k, e, gv[e], d, wv[e]))
		}
	}
	assert.InDeltaSlice(t, wantLoss, gotLoss, max(tol, 1e-5))
}

// TestOptimizerStateOnParamDevice checks that optimizer state is created
// on the parameters' device.
func TestOptimizerStateOnParamDevice(t *testing.T) {
	d := devicetest.Device(0)
	w, err := tensor.Ones([]int{3}).ToDevice(d)
	require.NoError(t, err)
	p := autograd.Param(w)
	opt := optim.NewAdamW([]*autograd.Var{p}, optim.AdamOptions{})
	l := p.Mul(p).Sum(nil, false)
	l.Backward()
	require.NoError(t, opt.Step())
	moments := 0
	for k, v := range opt.StateDict() {
		if v.Numel() == 3 { // exp_avg and exp_avg_sq, shaped like p
			moments++
			assert.Equal(t, d, v.Device(), k)
		}
	}
	assert.Equal(t, 2, moments)
}
