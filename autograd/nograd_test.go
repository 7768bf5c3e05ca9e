package autograd_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// noGradCNN is a small image classifier built from nn modules, with every
// layer whose fast path depends on recording: Conv2d (packed inference
// kernel), MaxPool2d (argmax only when recorded), Linear (a transposed
// parameter), LogSoftmax.
func noGradCNN(seed uint64) nn.Module {
	g := tensor.NewGenerator(seed)
	conv := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	return nn.NewSequential(
		nn.NewConv2d(g, 1, 4, [2]int{3, 3}, conv, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewConv2d(g, 4, 8, [2]int{3, 3}, conv, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewFlatten(1, -1),
		nn.NewLinear(g, 8*7*7, 10, true),
		nn.NewLogSoftmax(1),
	)
}

// TestNoGradMatchesGradModeAndRecordsNothing evaluates a model whose
// parameters require gradients on a marked input: the output equals the
// recorded run's bit for bit, records no node, does not require a gradient
// and carries the mark; the parameters get no gradient from it.
func TestNoGradMatchesGradModeAndRecordsNothing(t *testing.T) {
	model := noGradCNN(1)
	x := tensor.NewGenerator(2).Randn([]int{3, 1, 28, 28})

	recorded := nn.Call(model, autograd.New(x))
	require.True(t, recorded.RequiresGrad())
	_, isNode := recorded.Node()
	require.True(t, isNode, "the grad-mode run records")

	out := nn.Call(model, autograd.NoGrad(autograd.New(x)))
	assert.Equal(t, recorded.Value().Float32s(), out.Value().Float32s())
	_, isNode = out.Node()
	assert.False(t, isNode)
	assert.True(t, out.IsLeaf())
	assert.False(t, out.RequiresGrad())
	assert.True(t, out.IsNoGrad())

	// Backward on it fails with ErrNoGrad, as PyTorch refuses backward
	// through a no_grad result; autograd.Grad does too.
	err := out.Sum(nil, false).Backward()
	require.Error(t, err)
	assert.True(t, errors.Is(err, autograd.ErrNoGrad), "%v", err)
	assert.Contains(t, err.Error(), "autograd.NoGrad")
	_, err = autograd.Grad([]*autograd.Var{out.Sum(nil, false)}, model.Parameters(), nil, autograd.Options{})
	assert.True(t, errors.Is(err, autograd.ErrNoGrad), "%v", err)
	for _, p := range model.Parameters() {
		assert.Nil(t, p.Grad())
	}
}

// TestNoGradMarkPropagation checks the rule op by op: any marked input
// stops recording, even beside a parameter and whichever operand it is;
// the mark passes through ops with several outputs (Unbind) and through
// fast paths (MaxPool2d); unmarked computations still record.
func TestNoGradMarkPropagation(t *testing.T) {
	w := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
	x := autograd.New(tensor.FromSlice([]float64{0.5, -1, 2, 0.25}, 2, 2))
	m := autograd.NoGrad(x)

	for name, v := range map[string]*autograd.Var{
		"x·w":        m.MatMul(w),
		"w·x":        w.MatMul(m),
		"w+x":        w.Add(m),
		"where":      autograd.Where(tensor.FromSlice([]bool{true, false, true, false}, 2, 2), w, m),
		"chain":      m.Mul(w).Tanh().Sum([]int{1}, false).Exp(),
		"maxpool":    autograd.MaxPool2d(m.Add(w).Reshape(1, 1, 2, 2), tensor.Pool2dOptions{Kernel: [2]int{2, 2}}),
		"unbind[1]":  m.Add(w).Unbind(0)[1],
		"std":        m.Mul(w).Std(nil, 1, false),
		"softmax":    autograd.Softmax(w.Mul(m), 1),
		"bias conv":  autograd.Conv2d(w.Reshape(1, 1, 2, 2), m.Reshape(1, 1, 2, 2), w.Sum(nil, false).Reshape(1), tensor.Conv2dOptions{}),
		"conv":       autograd.Conv2d(m.Reshape(1, 1, 2, 2), w.Reshape(1, 1, 2, 2), nil, tensor.Conv2dOptions{}),
		"detached w": m.Add(w.Detach()),
		"custom": autograd.Custom("Plus", m.Value().Add(w.Value()), []*autograd.Var{m, w}, nil,
			func(g *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g, g}
			}),
		"function": autograd.NewFunction("Times", func(in []*autograd.Var) *autograd.Var { return in[0].Mul(in[1]) },
			func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g.Mul(in[1]), g.Mul(in[0])}
			}).Apply(w, m),
	} {
		_, isNode := v.Node()
		assert.False(t, isNode, name)
		assert.False(t, v.RequiresGrad(), name)
		assert.True(t, v.IsNoGrad(), name)
	}

	// The same op without the mark records, in the same goroutine.
	y := x.MatMul(w)
	info, isNode := y.Node()
	require.True(t, isNode)
	assert.Equal(t, "MatMul", info.Op)
	assert.False(t, y.IsNoGrad())
	require.NoError(t, y.Sum(nil, false).Backward())
	assert.Equal(t, []float64{2.5, 2.5, -0.75, -0.75}, w.Grad().Float64s()) // xᵀ·1

	// NoGrad shares the value; Detach drops the mark.
	assert.Same(t, x.Value(), m.Value())
	assert.False(t, m.Detach().IsNoGrad())
	assert.True(t, m.Detach().Add(w).RequiresGrad())
	// A marked Var cannot be made to require a gradient.
	assert.PanicsWithValue(t, "autograd.SetRequiresGrad: the Var is marked no-grad (autograd.NoGrad), so no op on it records a gradient; use Detach for an unmarked copy", func() {
		m.SetRequiresGrad(true)
	})
	// NoGrad of a recorded Var is a marked leaf: evaluation may start
	// anywhere.
	z := autograd.NoGrad(y)
	assert.True(t, z.IsLeaf())
	assert.False(t, z.Mul(w).RequiresGrad())
}

// TestNeedsGradAndUnrecorded checks the predicate every op follows and the
// wrapper for values computed outside the tape.
func TestNeedsGradAndUnrecorded(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1}, 1))
	c := autograd.New(tensor.FromSlice([]float64{2}, 1))
	m := autograd.NoGrad(c)
	var absent *autograd.Var
	assert.True(t, autograd.NeedsGrad(p))
	assert.True(t, autograd.NeedsGrad(c, p, absent))
	assert.False(t, autograd.NeedsGrad(c, absent))
	assert.False(t, autograd.NeedsGrad())
	assert.False(t, autograd.NeedsGrad(p, m), "a marked input stops recording")

	out := tensor.FromSlice([]float64{3}, 1)
	v := autograd.Unrecorded(out, c)
	assert.Same(t, out, v.Value())
	assert.False(t, v.IsNoGrad())
	assert.True(t, autograd.Unrecorded(out, p, m).IsNoGrad())
	assert.PanicsWithValue(t, "autograd.Unrecorded: an input requires a gradient, which a value of shape [1] computed outside the tape would drop; record it with Custom", func() {
		autograd.Unrecorded(out, c, p)
	})
}

// TestNoGradEvaluationBesideTraining shares one model between a goroutine
// that trains it (forward, backward, gradients accumulating) and one that
// evaluates it on marked inputs; run it with -race. The evaluations equal
// the value computed before, record nothing, and add nothing to the
// gradients: after the run each gradient is exactly steps times the
// gradient of one step.
func TestNoGradEvaluationBesideTraining(t *testing.T) {
	model := noGradCNN(3)
	g := tensor.NewGenerator(4)
	trainX, evalX := g.Randn([]int{4, 1, 28, 28}), g.Randn([]int{4, 1, 28, 28})
	loss := func() *autograd.Var { return nn.Call(model, autograd.New(trainX)).Mean(nil, false).Neg() }

	// One step's gradient, for reference.
	require.NoError(t, loss().Backward())
	params := model.Parameters()
	oneStep := make([][]float64, len(params))
	for i, p := range params {
		oneStep[i] = p.Grad().To(tensor.Float64).Float64s()
		p.ZeroGrad()
	}
	want := nn.Call(model, autograd.New(evalX)).Value().Float32s()

	const steps = 4
	var wg sync.WaitGroup
	errs := make(chan error, steps)
	wg.Go(func() {
		for range steps {
			errs <- loss().Backward()
		}
	})
	evaluated := make([][]float32, 2*steps)
	marked := make([]bool, 2*steps)
	wg.Go(func() {
		for i := range evaluated {
			out := nn.Call(model, autograd.NoGrad(autograd.New(evalX)))
			_, isNode := out.Node()
			marked[i] = out.IsNoGrad() && !isNode
			evaluated[i] = out.Value().Float32s()
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i, got := range evaluated {
		assert.Equal(t, want, got, "evaluation %d", i)
		assert.True(t, marked[i], "evaluation %d recorded a node", i)
	}
	for i, p := range params {
		got := p.Grad().To(tensor.Float64).Float64s()
		for j := range got {
			assert.InDelta(t, steps*oneStep[i][j], got[j], 1e-4*(1+abs(oneStep[i][j])), "parameter %d element %d", i, j)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
