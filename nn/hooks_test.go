package nn_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

func TestForwardHooks(t *testing.T) {
	lin := nn.NewLinear(tensor.NewGenerator(1), 2, 2, false, tensor.Float64)
	nn.Eye(lin.Weight.Value())
	act := nn.NewReLU()
	model := nn.NewSequential(lin, act)
	x := autograd.New(tensor.FromSlice([]float64{1, -2}, 1, 2))

	var log []string
	hPre := lin.RegisterForwardPreHook(func(m nn.Module, in *autograd.Var) *autograd.Var {
		log = append(log, "pre")
		return in.MulScalar(2) // doubles the input
	})
	hPost := lin.RegisterForwardHook(func(m nn.Module, in, out *autograd.Var) *autograd.Var {
		log = append(log, "post")
		assert.Same(t, lin, m)
		assert.Equal(t, []float64{2, -4}, in.Value().Float64s(), "forward hook sees the pre-hook's input")
		return nil
	})
	hAct := act.RegisterForwardHook(func(m nn.Module, in, out *autograd.Var) *autograd.Var {
		log = append(log, "act")
		return out.AddScalar(1) // replaces the output
	})
	y := model.Forward(x)
	assert.Equal(t, []string{"pre", "post", "act"}, log)
	assert.Equal(t, []float64{3, 1}, y.Value().Float64s())

	// Hooks are skipped by a direct Forward call, as torch's module.forward.
	log = nil
	lin.Forward(x)
	assert.Empty(t, log)

	hPre.Remove()
	hPost.Remove()
	hAct.Remove()
	y = nn.Call(model, x)
	assert.Empty(t, log)
	assert.Equal(t, []float64{1, 0}, y.Value().Float64s())
}

// TestForwardHooksRaceWithCall registers and removes hooks on a module
// (its first registration included) while other goroutines call it; run
// with -race. Every call sees either no hook or the hook, never a torn
// state: the output is x or x+1.
func TestForwardHooksRaceWithCall(t *testing.T) {
	act := nn.NewReLU()
	x := autograd.New(tensor.FromSlice([]float64{1, 2}, 1, 2))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 200 {
				y := nn.Call(act, x).Value().Float64s()
				switch y[0] {
				case 1:
					assert.Equal(t, []float64{1, 2}, y)
				case 2:
					assert.Equal(t, []float64{2, 3}, y)
				default:
					t.Errorf("output %v is neither x nor x+1", y)
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			h := act.RegisterForwardHook(func(m nn.Module, in, out *autograd.Var) *autograd.Var {
				return out.AddScalar(1)
			})
			h.Remove()
		}
	})
	wg.Wait()
	assert.False(t, nn.HasForwardHooks(act), "every hook was removed")
}

func TestRegisterGradHooks(t *testing.T) {
	lin := nn.NewLinear(tensor.NewGenerator(1), 3, 2, true, tensor.Float64)
	var names []string
	h := nn.RegisterGradHooks(lin, func(name string, g *tensor.Tensor) *tensor.Tensor {
		names = append(names, name)
		return g.Clamp(-0.1, 0.1)
	})
	x := autograd.New(tensor.FromSlice([]float64{1, 2, 3, -4, 5, 6}, 2, 3))
	require.NoError(t, lin.Forward(x).Sum(nil, false).Backward())
	assert.ElementsMatch(t, []string{"weight", "bias"}, names)
	for _, v := range lin.Weight.Grad().Float64s() {
		assert.LessOrEqual(t, v, 0.1)
	}
	assert.Equal(t, []float64{0.1, 0.1}, lin.Bias.Grad().Float64s())

	h.Remove()
	lin.ZeroGrad()
	require.NoError(t, lin.Forward(x).Sum(nil, false).Backward())
	assert.Equal(t, []float64{2, 2}, lin.Bias.Grad().Float64s())
}

func TestFreeze(t *testing.T) {
	g := tensor.NewGenerator(1)
	l1, l2 := nn.NewLinear(g, 3, 4, true, tensor.Float64), nn.NewLinear(g, 4, 2, true, tensor.Float64)
	model := nn.NewSequential(l1, nn.NewTanh(), l2)
	opt := optim.NewSGD(model.Parameters(), optim.SGDOptions{LR: 0.1})
	x := autograd.New(g.Randn([]int{5, 3}, tensor.Float64))

	frozenBefore := l1.Weight.Value().Clone()
	require.NoError(t, model.Forward(x).Sum(nil, false).Backward())
	nn.Freeze(l1)
	assert.Nil(t, l1.Weight.Grad(), "freezing drops the stale gradient")
	assert.Len(t, model.Parameters(), 4, "frozen parameters are still listed")
	assert.Len(t, nn.TrainableParameters(model), 2)
	l2Before := l2.Weight.Value().Clone()
	require.NoError(t, opt.Step())
	assert.Equal(t, frozenBefore.Float64s(), l1.Weight.Value().Float64s())
	assert.NotEqual(t, l2Before.Float64s(), l2.Weight.Value().Float64s())

	opt.ZeroGrad()
	require.NoError(t, model.Forward(x).Sum(nil, false).Backward())
	assert.Nil(t, l1.Weight.Grad(), "no gradient flows to a frozen parameter")
	assert.NotNil(t, l2.Weight.Grad())

	nn.Unfreeze(model)
	assert.Len(t, nn.TrainableParameters(model), 4)
	require.NoError(t, model.Forward(x).Sum(nil, false).Backward())
	assert.NotNil(t, l1.Weight.Grad())
}
