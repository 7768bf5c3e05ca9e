package autograd_test

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

func coreVec(v ...float64) *tensor.Tensor { return tensor.FromSlice(v) }

// coreSquareSum returns sum(x*x), whose gradient is 2x.
func coreSquareSum(x *autograd.Var) *autograd.Var { return x.Mul(x).Sum(nil, false) }

func TestCoreBackwardAccumulates(t *testing.T) {
	x := autograd.Param(coreVec(1, -2, 3))
	require.NoError(t, coreSquareSum(x).Backward())
	assert.Equal(t, []float64{2, -4, 6}, x.Grad().Float64s())
	// A second graph over the same leaf adds to its gradient.
	require.NoError(t, coreSquareSum(x).Backward())
	assert.Equal(t, []float64{4, -8, 12}, x.Grad().Float64s())
	// One graph using the leaf twice sums both paths.
	require.NoError(t, x.Mul(x).Add(x.MulScalar(3)).Sum(nil, false).Backward())
	assert.Equal(t, []float64{4 + 2 + 3, -8 - 4 + 3, 12 + 6 + 3}, x.Grad().Float64s())

	x.ZeroGrad()
	assert.Nil(t, x.Grad())
	assert.Nil(t, x.GradVar())
	require.NoError(t, coreSquareSum(x).Backward())
	assert.Equal(t, []float64{2, -4, 6}, x.Grad().Float64s())

	x.SetGrad(coreVec(1, 1, 1))
	require.NoError(t, coreSquareSum(x).Backward())
	assert.Equal(t, []float64{3, -3, 7}, x.Grad().Float64s())
}

func TestCoreRetainGraph(t *testing.T) {
	x := autograd.Param(coreVec(1, 2))
	y := x.Exp().Mul(x).Sum(nil, false)
	require.NoError(t, y.Backward())
	first := x.Grad().Float64s()
	err := y.Backward()
	require.Error(t, err)
	assert.True(t, errors.Is(err, autograd.ErrGraphFreed), "got %v", err)
	assert.Equal(t, first, x.Grad().Float64s(), "a failed backward leaves the gradient alone")

	x.ZeroGrad()
	y = x.Exp().Mul(x).Sum(nil, false)
	require.NoError(t, y.BackwardWith(nil, autograd.Options{RetainGraph: true}))
	require.NoError(t, y.BackwardWith(nil, autograd.Options{RetainGraph: true}))
	assert.InDeltaSlice(t, []float64{2 * first[0], 2 * first[1]}, x.Grad().Float64s(), 1e-12)
	// The last pass may free the graph; after it the graph is gone.
	require.NoError(t, y.Backward())
	assert.InDeltaSlice(t, []float64{3 * first[0], 3 * first[1]}, x.Grad().Float64s(), 1e-12)
	require.ErrorIs(t, y.Backward(), autograd.ErrGraphFreed)

	// autograd.Grad without RetainGraph frees the graph too.
	z := coreSquareSum(x)
	_, err = autograd.Grad([]*autograd.Var{z}, []*autograd.Var{x}, nil, autograd.Options{})
	require.NoError(t, err)
	_, err = autograd.Grad([]*autograd.Var{z}, []*autograd.Var{x}, nil, autograd.Options{})
	require.ErrorIs(t, err, autograd.ErrGraphFreed)
}

func TestCoreDetach(t *testing.T) {
	x := autograd.Param(coreVec(1, 2, 3))
	d := x.Detach()
	assert.False(t, d.RequiresGrad())
	assert.True(t, d.IsLeaf())
	assert.Same(t, x.Value(), d.Value())
	// Only the attached factor carries gradient: d(x·stop(x))/dx = x.
	require.NoError(t, x.Mul(d).Sum(nil, false).Backward())
	assert.Equal(t, []float64{1, 2, 3}, x.Grad().Float64s())
	assert.Nil(t, d.Grad())

	// Detaching an intermediate cuts the graph above it.
	x.ZeroGrad()
	h := x.Exp()
	out := h.Detach().Mul(x).Sum(nil, false)
	require.NoError(t, out.Backward())
	assert.Equal(t, h.Value().Float64s(), x.Grad().Float64s())

	// A graph with nothing requiring a gradient records nothing.
	p := autograd.New(coreVec(1, 2))
	q := p.Exp().Mul(p).Sum(nil, false)
	assert.False(t, q.RequiresGrad())
	assert.True(t, q.IsLeaf())
	assert.Equal(t, "", q.Op())
	require.Error(t, q.Backward())
}

func TestCoreInPlaceVersionCheck(t *testing.T) {
	cases := map[string]func(x, w *autograd.Var) (*autograd.Var, func()){
		"CopyFrom on a saved input": func(x, w *autograd.Var) (*autograd.Var, func()) {
			return x.Mul(w).Sum(nil, false), func() { x.Value().CopyFrom(coreVec(9, 9, 9)) }
		},
		"AddInPlace on a saved input": func(x, w *autograd.Var) (*autograd.Var, func()) {
			return w.Mul(x).Sum(nil, false), func() { w.Value().AddInPlace(tensor.ScalarOf(1, tensor.Float64)) }
		},
		"write through a view of a saved input": func(x, w *autograd.Var) (*autograd.Var, func()) {
			return x.Log().Sum(nil, false), func() { x.Value().Narrow(0, 1, 1).Fill(5) }
		},
		"write to a saved output": func(x, w *autograd.Var) (*autograd.Var, func()) {
			e := x.Exp()
			return e.Sum(nil, false), func() { e.Value().MulScalarInPlace(2) }
		},
		"write to an input saved by MatMul": func(x, w *autograd.Var) (*autograd.Var, func()) {
			return x.MatMul(w), func() { w.Value().Zero() }
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			x, w := autograd.Param(coreVec(1, 2, 3)), autograd.Param(coreVec(4, 5, 6))
			y, write := build(x, w)
			write()
			err := y.Backward()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "modified in place")
		})
	}
	// Writing to a tensor the gradient does not read is allowed.
	x, w := autograd.Param(coreVec(1, 2, 3)), autograd.Param(coreVec(4, 5, 6))
	y := x.Add(w).Sum(nil, false)
	x.Value().Fill(0)
	require.NoError(t, y.Backward())
	assert.Equal(t, []float64{1, 1, 1}, x.Grad().Float64s())
	// Writing after backward is fine, and a new graph sees the new value.
	x.ZeroGrad()
	y = x.Mul(w).Sum(nil, false)
	require.NoError(t, y.Backward())
	w.Value().Fill(2)
	x.ZeroGrad()
	require.NoError(t, x.Mul(w).Sum(nil, false).Backward())
	assert.Equal(t, []float64{2, 2, 2}, x.Grad().Float64s())
}

func TestCoreHigherOrder(t *testing.T) {
	xs := []float64{-1.5, 0.5, 2}
	x := autograd.Param(coreVec(xs...))
	y := x.PowScalar(3).Sum(nil, false) // dy/dx = 3x², d²y/dx² = 6x, d³ = 6
	g1, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, nil, autograd.Options{CreateGraph: true})
	require.NoError(t, err)
	require.True(t, g1[0].RequiresGrad())
	assert.InDeltaSlice(t, []float64{6.75, 0.75, 12}, g1[0].Value().Float64s(), 1e-12)
	g2, err := autograd.Grad([]*autograd.Var{g1[0].Sum(nil, false)}, []*autograd.Var{x}, nil, autograd.Options{CreateGraph: true})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{-9, 3, 12}, g2[0].Value().Float64s(), 1e-12)
	g3, err := autograd.Grad([]*autograd.Var{g2[0].Sum(nil, false)}, []*autograd.Var{x}, nil, autograd.Options{})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{6, 6, 6}, g3[0].Value().Float64s(), 1e-12)
	assert.Nil(t, x.Grad(), "autograd.Grad leaves Grad alone")

	// The same through x*x*x and Backward with CreateGraph: GradVar is
	// differentiable.
	x2 := autograd.Param(coreVec(xs...))
	require.NoError(t, x2.Mul(x2).Mul(x2).Sum(nil, false).BackwardWith(nil, autograd.Options{CreateGraph: true}))
	gv := x2.GradVar()
	require.True(t, gv.RequiresGrad())
	h, err := autograd.Grad([]*autograd.Var{gv.Sum(nil, false)}, []*autograd.Var{x2}, nil, autograd.Options{})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{-9, 3, 12}, h[0].Value().Float64s(), 1e-12)

	// Mixed second derivative of x·y: d/dy (d/dx xy) = 1.
	a, b := autograd.Param(coreVec(2)), autograd.Param(coreVec(3))
	ga, err := autograd.Grad([]*autograd.Var{a.Mul(b).Sum(nil, false)}, []*autograd.Var{a}, nil, autograd.Options{CreateGraph: true})
	require.NoError(t, err)
	gab, err := autograd.Grad([]*autograd.Var{ga[0].Sum(nil, false)}, []*autograd.Var{a, b}, nil, autograd.Options{})
	require.NoError(t, err)
	assert.Equal(t, []float64{0}, gab[0].Value().Float64s())
	assert.Equal(t, []float64{1}, gab[1].Value().Float64s())
}

func TestCoreGradAPI(t *testing.T) {
	x := autograd.Param(coreVec(1, 2))
	unused := autograd.Param(coreVec(5))
	h := x.Exp().RetainGrad()
	y := h.Mul(x)
	// Non-scalar outputs need an explicit gradient.
	require.Error(t, y.Backward())
	require.Error(t, y.BackwardWith(coreVec(1, 2, 3), autograd.Options{}))
	_, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, nil, autograd.Options{RetainGraph: true})
	require.Error(t, err)
	_, err = autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, []*tensor.Tensor{coreVec(1)}, autograd.Options{RetainGraph: true})
	require.Error(t, err)

	gs, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x, unused, h}, []*tensor.Tensor{coreVec(1, 1)}, autograd.Options{RetainGraph: true})
	require.NoError(t, err)
	e := h.Value().Float64s()
	assert.InDeltaSlice(t, []float64{e[0] * 2, e[1] * 3}, gs[0].Value().Float64s(), 1e-12) // e^x (1 + x)
	assert.Equal(t, []float64{0}, gs[1].Value().Float64s(), "unreachable input gets zeros")
	assert.Equal(t, []float64{1, 2}, gs[2].Value().Float64s(), "gradient at an intermediate")
	assert.Nil(t, x.Grad())
	assert.Nil(t, h.Grad())

	// A float32 gradient for a float64 output is converted.
	require.NoError(t, y.BackwardWith(tensor.FromSlice([]float32{1, 1}), autograd.Options{}))
	assert.Equal(t, tensor.Float64, x.Grad().DType())
	assert.InDeltaSlice(t, []float64{e[0] * 2, e[1] * 3}, x.Grad().Float64s(), 1e-12)
	assert.Equal(t, []float64{1, 2}, h.Grad().Float64s(), "RetainGrad keeps an intermediate's gradient")
	assert.Nil(t, unused.Grad())

	assert.Panics(t, func() { h.SetRequiresGrad(false) })
	assert.False(t, autograd.Param(coreVec(1)).SetRequiresGrad(false).RequiresGrad())
}

// TestCoreGradOwnership checks that stored gradients are dense tensors owned
// by their leaf: Add hands the same gradient to both operands and Expand's
// gradient is a broadcast view, yet updating one Grad in place must not
// change another, nor the gradient the caller passed in.
func TestCoreGradOwnership(t *testing.T) {
	a, b := autograd.Param(coreVec(1, 2)), autograd.Param(coreVec(3, 4))
	gout := coreVec(1, 1)
	require.NoError(t, a.Add(b).BackwardWith(gout, autograd.Options{}))
	assert.False(t, a.Grad().SharesStorage(b.Grad()))
	assert.False(t, a.Grad().SharesStorage(gout))
	a.Grad().MulScalarInPlace(10)
	assert.Equal(t, []float64{1, 1}, b.Grad().Float64s())
	assert.Equal(t, []float64{1, 1}, gout.Float64s())

	s := autograd.Param(tensor.FromSlice([]float64{2}).Reshape())
	require.NoError(t, s.Expand(3).Sum(nil, false).Backward())
	assert.True(t, s.Grad().IsContiguous())
	s.Grad().AddScalarInPlace(1) // must not panic on a stride-0 view
	assert.Equal(t, []float64{4}, s.Grad().Float64s())

	// A leaf that is itself the output gets a gradient that is not its value.
	l := autograd.Param(tensor.FromSlice([]float64{1}).Reshape())
	require.NoError(t, l.Backward())
	assert.False(t, l.Grad().SharesStorage(l.Value()))
	assert.Equal(t, []float64{1}, l.Grad().Float64s())
}

func TestCoreMixedDTypeGrads(t *testing.T) {
	a := autograd.Param(tensor.FromSlice([]float32{1, 2}))
	b := autograd.Param(tensor.FromSlice([]float64{3, 4}))
	y := a.Mul(b).Sum(nil, false)
	assert.Equal(t, tensor.Float64, y.DType())
	require.NoError(t, y.Backward())
	assert.Equal(t, tensor.Float32, a.Grad().DType())
	assert.Equal(t, tensor.Float64, b.Grad().DType())
	assert.Equal(t, []float32{3, 4}, a.Grad().Float32s())
	assert.Equal(t, []float64{1, 2}, b.Grad().Float64s())

	// To records a conversion whose gradient converts back.
	c := autograd.Param(tensor.FromSlice([]float64{0.5, 1.5}))
	z := c.To(tensor.Float32).Square().Sum(nil, false)
	assert.Equal(t, tensor.Float32, z.DType())
	require.NoError(t, z.Backward())
	assert.Equal(t, tensor.Float64, c.Grad().DType())
	assert.Equal(t, []float64{1, 3}, c.Grad().Float64s())

	// Integer operands get no gradient and do not need one.
	i := autograd.New(tensor.FromSlice([]int64{2, 3}))
	f := autograd.Param(tensor.FromSlice([]float64{1.5, 2}))
	require.NoError(t, f.Mul(i).Sum(nil, false).Backward())
	assert.Equal(t, []float64{2, 3}, f.Grad().Float64s())
	assert.Nil(t, i.Grad())
}

// TestCoreConcurrentGraphs builds and differentiates independent graphs in
// goroutines that also share one parameter; run with -race.
func TestCoreConcurrentGraphs(t *testing.T) {
	const workers = 8
	shared := autograd.Param(tensor.FromSlice([]float64{1, -1, 0.5}))
	var wg sync.WaitGroup
	own := make([]*autograd.Var, workers)
	errs := make([]error, workers)
	for w := range workers {
		own[w] = autograd.Param(tensor.FromSlice([]float64{float64(w), 1, 2}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := own[w]
			for range 10 {
				// loss = sum(shared * x) + sum(x²)/2: d/dshared = x, d/dx = shared + x.
				loss := shared.Mul(x).Sum(nil, false).Add(x.Square().Sum(nil, false).MulScalar(0.5))
				if err := loss.Backward(); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	want := []float64{0, 0, 0}
	for w := range workers {
		require.NoError(t, errs[w])
		x := own[w].Value().Float64s()
		g := own[w].Grad().Float64s()
		s := shared.Value().Float64s()
		for i := range x {
			want[i] += 10 * x[i]
			assert.InDelta(t, 10*(s[i]+x[i]), g[i], 1e-12)
		}
	}
	assert.InDeltaSlice(t, want, shared.Grad().Float64s(), 1e-9)
}

func TestCoreEdgeGrads(t *testing.T) {
	nan := math.NaN()
	// A NaN maximum sends the gradient to the NaN, as PyTorch does.
	x := autograd.Param(coreVec(1, nan, 3))
	require.NoError(t, x.Max(nil, false).Backward())
	assert.Equal(t, []float64{0, 1, 0}, x.Grad().Float64s())
	// Ties share the gradient evenly.
	y := autograd.Param(coreVec(3, 1, 3, 3))
	require.NoError(t, y.Max(nil, false).Backward())
	assert.InDeltaSlice(t, []float64{1.0 / 3, 0, 1.0 / 3, 1.0 / 3}, y.Grad().Float64s(), 1e-15)
	// The infinity norm splits among the largest magnitudes with their sign.
	z := autograd.Param(coreVec(-2, 1, 2))
	require.NoError(t, z.Norm(math.Inf(1), nil, false).Backward())
	assert.Equal(t, []float64{-0.5, 0, 0.5}, z.Grad().Float64s())
	// The 0-"norm" counts non-zeros: zero gradient.
	z.ZeroGrad()
	require.NoError(t, z.Norm(0, nil, false).Backward())
	assert.Equal(t, []float64{0, 0, 0}, z.Grad().Float64s())
	// Step functions give zero gradients, even for an infinite upstream one.
	s := autograd.Param(coreVec(0.5, -1.5))
	require.NoError(t, s.Floor().BackwardWith(coreVec(math.Inf(1), nan), autograd.Options{}))
	assert.Equal(t, []float64{0, 0}, s.Grad().Float64s())
	// Prod with two zeros in a lane: every gradient in it is zero but the
	// gradient of a zero is the product of the others.
	p := autograd.Param(tensor.FromSlice([]float64{0, 2, 0, 3, 0, 5}, 2, 3))
	require.NoError(t, p.Prod([]int{1}, false).Sum(nil, false).Backward())
	assert.Equal(t, []float64{0, 0, 0, 0, 15, 0}, p.Grad().Float64s())
	// Integer division of a Var stays float: DivScalar is a true division.
	d := autograd.Param(coreVec(1, 2))
	assert.Equal(t, []float64{1.0 / 3, 2.0 / 3}, d.DivScalar(3).Value().Float64s())
}

func TestCorePanics(t *testing.T) {
	a, b := autograd.Param(coreVec(1, 2)), autograd.Param(coreVec(1, 2, 3))
	assert.PanicsWithValue(t, "autograd.Dot: want two 1-d Vars of equal length, got [2] and [3]", func() { a.Dot(b) })
	assert.PanicsWithValue(t, "autograd.Outer: want two 1-d Vars, got [2] and []", func() {
		a.Outer(autograd.New(tensor.Scalar(1)))
	})
	assert.PanicsWithValue(t, "autograd.Stack: no Vars", func() { autograd.Stack(nil, 0) })
	assert.PanicsWithValue(t, "autograd.Concat: no Vars", func() { autograd.Concat(nil, 0) })
	corePanicsContaining(t, func() { a.Add(b) }, "tensor.Add", "[2]", "[3]")
	corePanicsContaining(t, func() { a.Mean([]int{1}, false) }, "tensor.Sum", "axis 1")
	corePanicsContaining(t, func() { a.MatMul(b) }, "tensor.MatMul", "[2]", "[3]")
	corePanicsContaining(t, func() { a.Reshape(3) }, "tensor.Reshape", "[3]")
}

func corePanicsContaining(t *testing.T, f func(), parts ...string) {
	t.Helper()
	var msg any
	func() {
		defer func() { msg = recover() }()
		f()
	}()
	s, ok := msg.(string)
	require.True(t, ok, "want a string panic, got %v", msg)
	for _, p := range parts {
		assert.Contains(t, s, p)
	}
}
