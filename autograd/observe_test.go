package autograd_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// pairObserver checks that BeginOp and EndOp come in matched, nested
// pairs and logs the ops that ended.
type pairObserver struct {
	t     *testing.T
	stack []string
	ended []string
	depth int // deepest nesting seen
}

func (o *pairObserver) BeginOp(op string, backward bool) {
	if backward {
		op += ".backward"
	}
	o.stack = append(o.stack, op)
	o.depth = max(o.depth, len(o.stack))
}

func (o *pairObserver) EndOp(e autograd.OpEvent) {
	name := e.Op
	if e.Backward {
		name += ".backward"
	}
	require.NotEmpty(o.t, o.stack, "EndOp(%s) without BeginOp", name)
	top := o.stack[len(o.stack)-1]
	require.Equal(o.t, top, name, "EndOp does not match the innermost BeginOp")
	o.stack = o.stack[:len(o.stack)-1]
	if !e.Backward {
		require.Len(o.t, e.Outputs, 1)
	}
	o.ended = append(o.ended, name)
}

func count(names []string, name string) int {
	n := 0
	for _, s := range names {
		if s == name {
			n++
		}
	}
	return n
}

func TestObserveReportsMatchedForwardAndBackwardOps(t *testing.T) {
	obs := &pairObserver{t: t}
	g := tensor.NewGenerator(1)
	x := autograd.Observe(autograd.New(g.Randn([]int{2, 3, 6, 6})), obs)
	w := autograd.Param(g.Randn([]int{4, 3, 3, 3}))
	b := autograd.Param(g.Randn([]int{4}))
	fc := autograd.Param(g.Randn([]int{4 * 2 * 2, 5}))

	h := autograd.Conv2d(x, w, b, tensor.Conv2dOptions{}).Relu()
	h = autograd.MaxPool2d(h, tensor.Pool2dOptions{Kernel: [2]int{2, 2}})
	h = h.Flatten(1, -1).MatMul(fc)
	loss := autograd.LogSoftmax(h, 1).Mean(nil, false).Neg()
	// Every op of the forward pass was reported, in order, and none is
	// still open.
	require.Empty(t, obs.stack)
	// Mean is built on Sum and DivScalar.
	assert.Equal(t, []string{"Conv2d", "Relu", "MaxPool2d", "Flatten", "MatMul", "LogSoftmax", "Sum", "DivScalar", "Neg"}, obs.ended)
	require.True(t, loss.Observer() == autograd.OpObserver(obs), "the mark reaches the result")

	obs.ended = nil
	require.NoError(t, loss.Backward())
	require.Empty(t, obs.stack)
	for _, op := range []string{"Neg", "DivScalar", "Sum", "LogSoftmax", "MatMul", "Flatten", "MaxPool2d", "Relu", "Conv2d"} {
		assert.Equal(t, 1, count(obs.ended, op+".backward"), "backward of %s", op)
	}
	// The ops a backward rule runs are reported inside it: Conv2d's
	// weight gradient is the recorded op ConvBackwardWeight.
	assert.Equal(t, 1, count(obs.ended, "ConvBackwardWeight"))
	assert.Equal(t, 2, count(obs.ended, "MatMul"), "MatMul's rule runs two products (input and weight)")
	assert.Equal(t, 2, obs.depth, "nothing nests deeper than a backward and the ops of its rule")
	require.NotNil(t, w.Grad())
}

func forwardOnly(names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasSuffix(n, ".backward") {
			out = append(out, n)
		}
	}
	return out
}

func TestObserveSeesTheOpsACompositeIsMadeOf(t *testing.T) {
	obs := &pairObserver{t: t}
	x := autograd.Observe(autograd.New(tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)), obs)
	w := autograd.Param(tensor.FromSlice([]float32{1, 0, -1, 2, 0, 1}, 1, 2, 3))
	// Conv1d runs Conv2d on height-1 images between view ops; the view of
	// the unmarked weight is not observed.
	y := autograd.Conv1d(x.Unsqueeze(0), w, nil, tensor.Conv1dOptions{})
	require.Empty(t, obs.stack)
	assert.Equal(t, []string{"Unsqueeze", "Unsqueeze", "Conv2d", "Squeeze"}, obs.ended)
	require.NoError(t, y.Sum(nil, false).Backward())
	require.Empty(t, obs.stack)
}

func TestUnobservedComputationReportsNothing(t *testing.T) {
	obs := &pairObserver{t: t}
	x := autograd.New(tensor.FromSlice([]float32{1, 2, 3}, 3))
	observed := autograd.Observe(x, obs)
	p := autograd.Param(tensor.FromSlice([]float32{1, 1, 1}, 3))
	// The same parameter in an unmarked computation: nothing reported, and
	// the result carries no mark.
	plain := x.Mul(p).Sum(nil, false)
	require.NoError(t, plain.Backward())
	assert.Empty(t, obs.ended)
	assert.Nil(t, plain.Observer())
	// The marked one is reported, and NoGrad keeps the mark.
	observed.Mul(p).Sum(nil, false)
	autograd.NoGrad(observed).Exp()
	assert.Equal(t, []string{"Mul", "Sum", "Exp"}, obs.ended)
}

func TestObserveRefusesARecordedVar(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float32{1, 2}, 2))
	assert.PanicsWithValue(t, "autograd.Observe: the Var was made by a recorded op (Exp); mark the inputs its graph was computed from, which are leaves", func() {
		autograd.Observe(p.Exp(), &pairObserver{t: t})
	})
	// A leaf that requires a gradient may be observed: its gradient lands
	// on the returned Var.
	q := autograd.Observe(p, &pairObserver{t: t})
	require.NoError(t, q.Mul(q).Sum(nil, false).Backward())
	assert.Equal(t, []float32{2, 4}, q.Grad().Float32s())
}

// line returns the file:line of its caller.
func line() string {
	_, file, l, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file, l)
}

func TestDetectAnomalyNamesTheOpAndItsCreationSite(t *testing.T) {
	x := autograd.DetectAnomaly(autograd.New(tensor.FromSlice([]float32{0, 1, 4}, 3)), autograd.AnomalyOptions{})
	w := autograd.Param(tensor.FromSlice([]float32{1, 1, 1}, 3))
	// d sqrt(u)/du = 1/(2 sqrt(u)) is Inf at u = 0: the backward of Sqrt
	// returns an Inf gradient for its input.
	h := x.Mul(w)
	root, site := h.Sqrt(), line()
	loss := root.Sum(nil, false)
	require.False(t, math.IsNaN(loss.Item()), "the forward value itself is finite")

	err := loss.Backward()
	require.Error(t, err)
	var ae *autograd.AnomalyError
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, "Sqrt", ae.Op)
	assert.True(t, ae.Backward)
	assert.Equal(t, 0, ae.Input)
	assert.Equal(t, []int{3}, ae.Shape)
	assert.Equal(t, 0, ae.NaNs)
	assert.Equal(t, 1, ae.Infs)
	assert.Equal(t, 0, ae.First)
	assert.Equal(t, [][]int{{3}}, ae.InputShapes)
	require.NotEmpty(t, ae.Site)
	assert.Equal(t, site, fmt.Sprintf("%s:%d", ae.Site[0].File, ae.Site[0].Line), "the creation site starts at the line that called Sqrt")
	assert.Equal(t, "github.com/emberml/ember/autograd_test.TestDetectAnomalyNamesTheOpAndItsCreationSite", ae.Site[0].Function)
	for _, f := range ae.Site {
		assert.False(t, strings.HasPrefix(f.Function, "testing.") || strings.HasPrefix(f.Function, "runtime."), "frame %s kept", f.Function)
	}
	msg := err.Error()
	assert.Contains(t, msg, "the backward of Sqrt returned a gradient for input 0 of shape [3] with 0 NaNs and 1 Inf (first at index 0)")
	assert.Contains(t, msg, site)
	// The weight got no gradient: the pass stopped at the anomaly.
	assert.Nil(t, w.Grad())
}

func TestDetectAnomalyCatchesANaNPlantedInTheData(t *testing.T) {
	x := autograd.DetectAnomaly(autograd.New(tensor.FromSlice([]float64{1, math.NaN(), 3, 4}, 2, 2)), autograd.AnomalyOptions{})
	w := autograd.Param(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
	prod, site := x.MatMul(w), line()
	err := prod.Sum(nil, false).Backward()
	var ae *autograd.AnomalyError
	require.True(t, errors.As(err, &ae), "%v", err)
	// Sum's gradient is finite; MatMul's weight gradient xᵀ·g is the first
	// to hold the NaN.
	assert.Equal(t, "MatMul", ae.Op)
	assert.Equal(t, 1, ae.Input)
	assert.Equal(t, 2, ae.NaNs)
	assert.Equal(t, 2, ae.First)
	assert.Equal(t, [][]int{{2, 2}, {2, 2}}, ae.InputShapes)
	assert.Equal(t, site, fmt.Sprintf("%s:%d", ae.Site[0].File, ae.Site[0].Line))
}

func TestDetectAnomalyForwardCheckPanicsAtTheOp(t *testing.T) {
	x := autograd.DetectAnomaly(autograd.New(tensor.FromSlice([]float32{1, 0, -1}, 3)), autograd.AnomalyOptions{CheckForward: true})
	ok := x.Exp() // finite
	require.NotNil(t, ok)
	var site string
	got := func() (r any) {
		defer func() { r = recover() }()
		site = line()
		x.Log() // log(0) = -Inf, log(-1) = NaN
		return nil
	}()
	ae, isAnomaly := got.(*autograd.AnomalyError)
	require.True(t, isAnomaly, "recovered %v", got)
	assert.False(t, ae.Backward)
	assert.Equal(t, "Log", ae.Op)
	assert.Equal(t, 1, ae.NaNs)
	assert.Equal(t, 1, ae.Infs)
	assert.Equal(t, 1, ae.First)
	// The site is the line after the one that called line().
	file, l := ae.Site[0].File, ae.Site[0].Line
	assert.Equal(t, site, fmt.Sprintf("%s:%d", file, l-1), "creation site of Log")
	assert.Contains(t, ae.Error(), "the value of Log of shape [3] with 1 NaN and 1 Inf (first at index 1)")
}

func TestAnomalyDetectionIsScopedToMarkedData(t *testing.T) {
	w := autograd.Param(tensor.FromSlice([]float32{0, 1}, 2))
	// Unmarked: the Inf gradient is not checked, as without anomaly mode.
	require.NoError(t, w.Sqrt().Sum(nil, false).Backward())
	assert.True(t, math.IsInf(float64(w.Grad().Float32s()[0]), 1))
	assert.False(t, w.Sqrt().DetectsAnomaly())
	// Marked (the leaf itself, whose gradient lands on the copy).
	m := autograd.DetectAnomaly(w, autograd.AnomalyOptions{})
	require.True(t, m.Sqrt().DetectsAnomaly())
	err := m.Sqrt().Sum(nil, false).Backward()
	var ae *autograd.AnomalyError
	require.True(t, errors.As(err, &ae), "%v", err)
	// The two marks combine.
	obs := &pairObserver{t: t}
	both := autograd.Observe(m, obs)
	assert.True(t, both.DetectsAnomaly())
	assert.True(t, autograd.DetectAnomaly(autograd.Observe(autograd.New(w.Value()), obs), autograd.AnomalyOptions{}).Observer() == autograd.OpObserver(obs))
}
