package profiler

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// currentLabels returns the "# labels:" line of the calling goroutine in
// the goroutine profile ("" when it has none).
func currentLabels(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(rec, "profiler.currentLabels") {
			continue
		}
		for _, line := range strings.Split(rec, "\n") {
			if strings.HasPrefix(line, "# labels: ") {
				return strings.TrimPrefix(line, "# labels: ")
			}
		}
		return ""
	}
	t.Fatal("the calling goroutine is not in the goroutine profile")
	return ""
}

func TestPprofLabelsMarkEachOpRegion(t *testing.T) {
	base := pprof.WithLabels(context.Background(), pprof.Labels("run", "test"))
	p := New(Options{PprofLabels: true, LabelContext: base})
	o := (*observer)(p.main)
	out := []*autograd.Var{autograd.New(tensor.Ones([]int{2, 2}))}

	o.BeginOp("MatMul", false)
	assert.Equal(t, `{"op":"MatMul", "run":"test"}`, currentLabels(t))
	o.BeginOp("Relu", true)
	assert.Equal(t, `{"op":"Relu.backward", "run":"test"}`, currentLabels(t))
	o.EndOp(autograd.OpEvent{Op: "Relu", Backward: true})
	assert.Equal(t, `{"op":"MatMul", "run":"test"}`, currentLabels(t), "the enclosing op's label is restored")
	o.EndOp(autograd.OpEvent{Op: "MatMul", Outputs: out})
	assert.Equal(t, `{"run":"test"}`, currentLabels(t), "between ops the labels are LabelContext's")
	require.Len(t, p.Trace().Events, 2)

	// Without PprofLabels the goroutine's labels are left alone.
	pprof.SetGoroutineLabels(context.Background())
	q := New(Options{})
	(*observer)(q.main).BeginOp("MatMul", false)
	assert.Equal(t, "", currentLabels(t))
	(*observer)(q.main).EndOp(autograd.OpEvent{Op: "MatMul", Outputs: out})
}

func TestAnOpLeftOpenByAPanicDoesNotCaptureLaterOps(t *testing.T) {
	p := New(Options{})
	o := (*observer)(p.main)
	out := []*autograd.Var{autograd.New(tensor.Ones([]int{1}))}
	o.BeginOp("Conv2d", false)
	o.BeginOp("MatMul", false) // panics before it ends
	o.EndOp(autograd.OpEvent{Op: "Conv2d", Outputs: out})
	require.Empty(t, p.main.stack, "Conv2d's end closes the MatMul left open above it")
	o.BeginOp("Exp", false)
	o.EndOp(autograd.OpEvent{Op: "Exp", Outputs: out})
	ev := p.Trace().Events
	require.Len(t, ev, 2)
	assert.Equal(t, "Exp", ev[1].Name)
	assert.Equal(t, ev[1].Duration, ev[1].Self, "Exp is no one's child")

	// Step drops what is still open.
	o.BeginOp("Tanh", false)
	p.Step()
	require.Empty(t, p.main.stack)
}
