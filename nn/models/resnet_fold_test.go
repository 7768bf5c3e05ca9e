package models_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
)

// separateForward is ResNet.Forward with every convolution, batch norm,
// residual add and ReLU as its own call: the computation that
// Conv2d.ForwardBatchNorm fuses in no-grad evaluation.
func separateForward(m *models.ResNet, x *autograd.Var) *autograd.Var {
	relu := nn.NewReLU()
	cbr := func(c *nn.Conv2d, bn *nn.BatchNorm, x *autograd.Var) *autograd.Var {
		return nn.Call(bn, nn.Call(c, x))
	}
	short := func(ds *nn.Sequential, x *autograd.Var) *autograd.Var {
		if ds == nil {
			return x
		}
		return nn.Call(ds, x)
	}
	x = nn.Call(m.MaxPool, nn.Call(relu, cbr(m.Conv1, m.BN1, x)))
	for _, layer := range []*nn.Sequential{m.Layer1, m.Layer2, m.Layer3, m.Layer4} {
		for i := range layer.Len() {
			switch b := layer.At(i).(type) {
			case *models.BasicBlock:
				out := nn.Call(relu, cbr(b.Conv1, b.BN1, x))
				x = nn.Call(relu, cbr(b.Conv2, b.BN2, out).Add(short(b.Downsample, x)))
			case *models.Bottleneck:
				out := nn.Call(relu, cbr(b.Conv1, b.BN1, x))
				out = nn.Call(relu, cbr(b.Conv2, b.BN2, out))
				x = nn.Call(relu, cbr(b.Conv3, b.BN3, out).Add(short(b.Downsample, x)))
			}
		}
	}
	return nn.Call(m.FC, nn.Call(m.AvgPool, x).Flatten(1, -1))
}

// newFoldResNet returns resnet18 or resnet50 from seed with running
// statistics from two training-mode batches, so folding them is not
// the identity.
func newFoldResNet(bottleneck bool, seed uint64) *models.ResNet {
	g := tensor.NewGenerator(seed)
	m := models.ResNet18(g, models.ResNetConfig{NumClasses: 10})
	if bottleneck {
		m = models.ResNet50(g, models.ResNetConfig{NumClasses: 10})
	}
	m.Train(true)
	for range 2 {
		m.Forward(autograd.New(g.Randn([]int{2, 3, 32, 32}).MulScalar(2).AddScalar(0.5)))
	}
	return m
}

// TestResNetFoldedBatchNorm covers every block kind (BasicBlock and
// Bottleneck, with and without a projection shortcut): in no-grad
// evaluation the folded forward matches the separate calls to float32
// rounding; in training mode, or with gradients, it is them bit for bit,
// running statistics included.
func TestResNetFoldedBatchNorm(t *testing.T) {
	if testing.Short() {
		t.Skip("two full ResNets, forward in training and evaluation: minutes on a busy machine")
	}
	for _, bottleneck := range []bool{false, true} {
		name := map[bool]string{false: "resnet18", true: "resnet50"}[bottleneck]
		t.Run(name, func(t *testing.T) {
			x := autograd.New(tensor.NewGenerator(3).Randn([]int{2, 3, 32, 32}))
			a, b := newFoldResNet(bottleneck, 1), newFoldResNet(bottleneck, 1)

			a.Train(false)
			want := separateForward(a, x).Value().Float64s() // with gradients: unfused
			require.Equal(t, want, a.Forward(x).Value().Float64s(), "eval with gradients")
			for _, p := range a.Parameters() {
				p.SetRequiresGrad(false)
			}
			for range 2 {
				got := a.Forward(x).Value().Float64s()
				for i, v := range want {
					require.InDelta(t, v, got[i], 1e-4*(1+math.Abs(v)), "eval no-grad logit %d", i)
				}
			}

			// Training mode, no gradients: both models take the same
			// unfused path and update the same statistics.
			for _, m := range []*models.ResNet{a, b} {
				m.Train(true)
				for _, p := range m.Parameters() {
					p.SetRequiresGrad(false)
				}
			}
			require.Equal(t, separateForward(b, x).Value().Float64s(), a.Forward(x).Value().Float64s(), "training")
			require.Equal(t, b.BN1.RunningVar.Float64s(), a.BN1.RunningVar.Float64s())
			last := a.Layer4.At(a.Layer4.Len() - 1)
			lastB := b.Layer4.At(b.Layer4.Len() - 1)
			if bottleneck {
				require.Equal(t, lastB.(*models.Bottleneck).BN3.RunningMean.Float64s(), last.(*models.Bottleneck).BN3.RunningMean.Float64s())
			} else {
				require.Equal(t, lastB.(*models.BasicBlock).BN2.RunningMean.Float64s(), last.(*models.BasicBlock).BN2.RunningMean.Float64s())
			}
		})
	}
}
