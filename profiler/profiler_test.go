package profiler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/profiler"
	"github.com/emberml/ember/tensor"
)

// mlp is a two-layer perceptron on a batch of 4: x [4, 3] → 5 → 2.
type mlp struct{ w1, w2 *autograd.Var }

func newMLP() *mlp {
	g := tensor.NewGenerator(3)
	return &mlp{w1: autograd.Param(g.Randn([]int{3, 5})), w2: autograd.Param(g.Randn([]int{5, 2}))}
}

func (m *mlp) step(t *testing.T, p *profiler.Profiler, x *tensor.Tensor) {
	loss := p.Watch(autograd.New(x)).MatMul(m.w1).Relu().MatMul(m.w2).Sum(nil, false)
	require.NoError(t, loss.Backward())
	p.Step()
}

func calls(rows []profiler.OpStats) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		out[r.Name] = r.Calls
	}
	return out
}

func TestKeyAveragesCountCallsOfForwardAndBackward(t *testing.T) {
	m := newMLP()
	p := profiler.New(profiler.Options{})
	x := tensor.NewGenerator(4).Randn([]int{4, 3})
	for range 3 {
		m.step(t, p, x)
	}
	c := calls(p.Trace().KeyAverages(profiler.SortByCalls))
	assert.Equal(t, 3, c["Relu"])
	assert.Equal(t, 3, c["Sum"])
	assert.Equal(t, 3, c["MatMul.backward"]/2, "two products per step")
	assert.Equal(t, 3, c["Relu.backward"])
	assert.Equal(t, 3, c["Sum.backward"])
	// Two products forward; backward runs one for the first layer (its
	// input needs no gradient) and two for the second: five per step.
	assert.Equal(t, 15, c["MatMul"])
	// Relu's rule is the recorded op ReluBackward.
	assert.Equal(t, 3, c["ReluBackward"])

	rows := p.Trace().KeyAverages(profiler.SortByCalls)
	for i := 1; i < len(rows); i++ {
		require.GreaterOrEqual(t, rows[i-1].Calls, rows[i].Calls, "sorted by calls")
	}
	var all time.Duration
	for _, r := range rows {
		require.GreaterOrEqual(t, r.Total, r.Self, "%s: self time is part of the total", r.Name)
		all += r.Total
	}
	require.Positive(t, all)
	bySelf := p.Trace().KeyAverages(profiler.SortBySelfTime)
	for i := 1; i < len(bySelf); i++ {
		require.GreaterOrEqual(t, bySelf[i-1].Self, bySelf[i].Self)
	}
	byTotal := p.Trace().KeyAverages(profiler.SortByTotalTime)
	for i := 1; i < len(byTotal); i++ {
		require.GreaterOrEqual(t, byTotal[i-1].Total, byTotal[i].Total)
	}
	byMem := p.Trace().KeyAverages(profiler.SortByMemory)
	for i := 1; i < len(byMem); i++ {
		require.GreaterOrEqual(t, byMem[i-1].Bytes, byMem[i].Bytes)
	}

	table := p.Trace().Table(profiler.SortBySelfTime, 0)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 1+len(rows), table)
	assert.Regexp(t, `^\s*Name\s+Calls\s+Self\s+Self %\s+Total\s+Avg\s+Bytes\s+FLOPs\s+GFLOP/s$`, lines[0])
	var matmul string
	for _, l := range lines {
		if strings.Fields(l)[0] == "MatMul" {
			matmul = l
		}
	}
	require.NotEmpty(t, matmul, table)
	assert.Equal(t, "15", strings.Fields(matmul)[1])
	assert.Len(t, strings.Split(strings.TrimSpace(p.Trace().Table(profiler.SortByCalls, 2)), "\n"), 3, "limit keeps two rows")
}

func TestEventsCarryShapesBytesAndFLOPs(t *testing.T) {
	p := profiler.New(profiler.Options{})
	x := p.Watch(autograd.New(tensor.Ones([]int{4, 3})))
	w := autograd.Param(tensor.Ones([]int{3, 5}))
	y := x.MatMul(w).Reshape(20)
	img := p.Watch(autograd.New(tensor.Ones([]int{1, 2, 5, 5})))
	k := autograd.Param(tensor.Ones([]int{3, 2, 3, 3}))
	autograd.Conv2d(img, k, nil, tensor.Conv2dOptions{})
	_ = y
	up := p.Watch(autograd.New(tensor.Ones([]int{1, 2, 3, 3})))
	autograd.ConvTranspose2d(up, autograd.Param(tensor.Ones([]int{2, 3, 2, 2})), nil, tensor.ConvTranspose2dOptions{})
	gi := p.Watch(autograd.New(tensor.Ones([]int{5, 2, 3 * 4})))
	autograd.GRUSequence(gi, autograd.New(tensor.Zeros([]int{2, 4})), autograd.Param(tensor.Ones([]int{3 * 4, 4})), nil, false)
	ev := p.Trace().Events
	require.Len(t, ev, 5)
	// Each of the 18 input elements meets 3·2·2 weights.
	assert.Equal(t, "ConvTranspose2d", ev[3].Name)
	assert.Equal(t, int64(2*18*12), ev[3].FLOPs)
	// Five steps of a [2, 4]·[4, 12] product.
	assert.Equal(t, "GRUSequence", ev[4].Name)
	assert.Equal(t, int64(5*2*2*4*12), ev[4].FLOPs)
	ev = ev[:3]
	assert.Equal(t, "MatMul", ev[0].Name)
	assert.Equal(t, [][]int{{4, 3}, {3, 5}}, ev[0].InputShapes)
	assert.Equal(t, int64(4*5*4), ev[0].Bytes, "a [4, 5] float32 result")
	assert.Equal(t, int64(2*4*5*3), ev[0].FLOPs)
	assert.Equal(t, "Reshape", ev[1].Name)
	assert.Equal(t, int64(0), ev[1].Bytes, "a view allocates nothing")
	assert.Equal(t, int64(0), ev[1].FLOPs)
	assert.Equal(t, "Conv2d", ev[2].Name)
	assert.Equal(t, [][]int{{1, 2, 5, 5}, {3, 2, 3, 3}, nil}, ev[2].InputShapes, "the absent bias is nil")
	// [1, 3, 3, 3] outputs, each 2·3·3 multiply-adds.
	assert.Equal(t, int64(2*27*18), ev[2].FLOPs)
	for _, e := range ev {
		assert.Equal(t, profiler.KindForward, e.Kind)
		assert.Equal(t, 1, e.Lane)
		assert.Equal(t, e.Duration, e.Self, "%s ran no nested op", e.Name)
	}
}

func TestBackwardFLOPsAreCountedOnTheNestedProducts(t *testing.T) {
	p := profiler.New(profiler.Options{})
	img := p.Watch(autograd.New(tensor.Ones([]int{2, 2, 5, 5})).SetRequiresGrad(true))
	k := autograd.Param(tensor.Ones([]int{3, 2, 3, 3}))
	require.NoError(t, autograd.Conv2d(img, k, nil, tensor.Conv2dOptions{}).Sum(nil, false).Backward())
	rows := map[string]profiler.OpStats{}
	for _, r := range p.Trace().KeyAverages(profiler.SortByFLOPs) {
		rows[r.Name] = r
	}
	fwd := int64(2 * (2 * 3 * 3 * 3) * (2 * 3 * 3))
	assert.Equal(t, fwd, rows["Conv2d"].FLOPs)
	// The input and weight gradients each cost what the forward did.
	assert.Equal(t, fwd, rows["ConvBackwardInput"].FLOPs)
	assert.Equal(t, fwd, rows["ConvBackwardWeight"].FLOPs)
	cb := rows["Conv2d.backward"]
	assert.Equal(t, profiler.KindBackward, cb.Kind)
	assert.Greater(t, cb.Total, cb.Self, "the backward's time holds its nested products")
	// The input and weight gradients are made by the two nested ops, and
	// counted there only.
	assert.Equal(t, int64(2*2*5*5*4), rows["ConvBackwardInput"].Bytes)
	assert.Equal(t, int64(3*2*3*3*4), rows["ConvBackwardWeight"].Bytes)
	assert.Equal(t, int64(0), cb.Bytes)
}

func TestScheduleRecordsTheActiveStepsOnly(t *testing.T) {
	var ready []*profiler.Trace
	p := profiler.New(profiler.Options{
		Schedule:     profiler.Schedule{SkipFirst: 1, Wait: 1, Warmup: 1, Active: 2, Repeat: 2},
		OnTraceReady: func(tr *profiler.Trace) { ready = append(ready, tr) },
	})
	m := newMLP()
	x := tensor.Ones([]int{4, 3})
	// Steps: 0 skipped, 1 wait, 2 warm-up, 3-4 active, 5 wait, 6 warm-up,
	// 7-8 active, then nothing.
	for range 12 {
		m.step(t, p, x)
	}
	require.Len(t, ready, 2)
	for i, tr := range ready {
		var steps []int
		seen := map[int]bool{}
		for _, e := range tr.Events {
			if !seen[e.Step] {
				seen[e.Step] = true
				steps = append(steps, e.Step)
			}
		}
		sort.Ints(steps)
		first := 3 + 4*i
		assert.Equal(t, []int{first, first + 1}, steps, "window %d", i)
		c := calls(tr.KeyAverages(profiler.SortByCalls))
		assert.Equal(t, 2, c["Relu"])
		assert.Equal(t, 10, c["MatMul"])
		var names []string
		for _, e := range tr.Events {
			if e.Kind == profiler.KindStep {
				names = append(names, e.Name)
			}
		}
		assert.Equal(t, []string{fmt.Sprintf("ProfilerStep#%d", first), fmt.Sprintf("ProfilerStep#%d", first+1)}, names)
	}
	assert.Empty(t, p.Trace().Events, "every window was handed over")
	assert.Panics(t, func() { profiler.New(profiler.Options{Schedule: profiler.Schedule{Wait: 2}}) })
}

func TestUnwatchedComputationIsNotRecorded(t *testing.T) {
	p := profiler.New(profiler.Options{})
	m := newMLP()
	x := autograd.New(tensor.Ones([]int{4, 3}))
	require.NoError(t, x.MatMul(m.w1).Relu().MatMul(m.w2).Sum(nil, false).Backward())
	assert.Empty(t, p.Trace().Events)
	// Inference on a watched no-grad input is recorded, without backward.
	autograd.NoGrad(p.Watch(x)).MatMul(m.w1).Relu()
	c := calls(p.Trace().KeyAverages(profiler.SortByCalls))
	assert.Equal(t, map[string]int{"MatMul": 1, "Relu": 1}, c)
}

func TestRangesAndLanes(t *testing.T) {
	p := profiler.New(profiler.Options{})
	r := p.Range("data")
	time.Sleep(2 * time.Millisecond)
	r.End()
	r.End() // no second event
	other := p.NewLane("eval")
	other.Watch(autograd.New(tensor.Ones([]int{2}))).Exp()
	tr := p.Trace()
	require.Len(t, tr.Events, 2)
	assert.Equal(t, "data", tr.Events[0].Name)
	assert.Equal(t, profiler.KindRange, tr.Events[0].Kind)
	assert.Equal(t, 2, tr.Events[0].Lane)
	assert.GreaterOrEqual(t, tr.Events[0].Duration, 2*time.Millisecond, "the range holds the sleep")
	assert.Equal(t, "Exp", tr.Events[1].Name)
	assert.Equal(t, 3, tr.Events[1].Lane)
	assert.Equal(t, map[int]string{0: "steps", 1: "ops", 2: "ranges", 3: "eval"}, tr.Lanes)
}

// validateChromeTrace checks data against the Trace Event format (the JSON
// object form): a traceEvents array whose events have a name, a phase, an
// integer pid and tid and a numeric microsecond timestamp; complete events
// ("X") a non-negative duration; begin and end events ("B"/"E") matched per
// thread; and events of one thread properly nested (none overlaps another
// partly), as the viewers draw them. It returns the events.
func validateChromeTrace(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &doc), "the trace is a JSON object")
	raw, ok := doc["traceEvents"]
	require.True(t, ok, "traceEvents is present")
	var events []map[string]any
	require.NoError(t, json.Unmarshal(raw, &events), "traceEvents is an array of objects")
	if u, ok := doc["displayTimeUnit"]; ok {
		var unit string
		require.NoError(t, json.Unmarshal(u, &unit))
		require.Contains(t, []string{"ms", "ns"}, unit)
	}
	type span struct{ start, end float64 }
	spans := map[[2]int][]span{}
	open := map[[2]int][]float64{}
	isInt := func(v any) bool {
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	for i, e := range events {
		name, ok := e["name"].(string)
		require.True(t, ok && name != "", "event %d has a name: %v", i, e)
		ph, ok := e["ph"].(string)
		require.True(t, ok && len(ph) == 1, "event %d has a one-letter phase: %v", i, e)
		require.True(t, isInt(e["pid"]), "event %d has an integer pid: %v", i, e)
		require.True(t, isInt(e["tid"]), "event %d has an integer tid: %v", i, e)
		key := [2]int{int(e["pid"].(float64)), int(e["tid"].(float64))}
		if ph == "M" {
			require.Contains(t, []string{"process_name", "thread_name", "process_sort_index", "thread_sort_index"}, name)
			continue
		}
		ts, ok := e["ts"].(float64)
		require.True(t, ok && ts >= 0, "event %d has a timestamp: %v", i, e)
		switch ph {
		case "X":
			dur, ok := e["dur"].(float64)
			require.True(t, ok && dur >= 0, "complete event %d has a duration: %v", i, e)
			spans[key] = append(spans[key], span{ts, ts + dur})
		case "B":
			open[key] = append(open[key], ts)
		case "E":
			st := open[key]
			require.NotEmpty(t, st, "end event %d without a begin", i)
			require.GreaterOrEqual(t, ts, st[len(st)-1])
			spans[key] = append(spans[key], span{st[len(st)-1], ts})
			open[key] = st[:len(st)-1]
		case "i", "I", "C":
		default:
			t.Fatalf("event %d: phase %q is not one this writer should use", i, ph)
		}
	}
	for key, st := range open {
		require.Empty(t, st, "thread %v has unmatched begin events", key)
	}
	for key, ss := range spans {
		sort.Slice(ss, func(i, j int) bool {
			if ss[i].start != ss[j].start {
				return ss[i].start < ss[j].start
			}
			return ss[i].end > ss[j].end
		})
		var stack []span
		for _, s := range ss {
			for len(stack) > 0 && stack[len(stack)-1].end <= s.start {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				require.LessOrEqual(t, s.end, stack[len(stack)-1].end, "thread %v: event [%v, %v] overlaps [%v, %v] partly", key, s.start, s.end, stack[len(stack)-1].start, stack[len(stack)-1].end)
			}
			stack = append(stack, s)
		}
	}
	return events
}

func TestChromeTracePassesTheTraceEventFormat(t *testing.T) {
	p := profiler.New(profiler.Options{})
	m := newMLP()
	x := tensor.Ones([]int{4, 3})
	r := p.Range("train")
	for range 2 {
		m.step(t, p, x)
	}
	time.Sleep(time.Millisecond)
	r.End()
	var buf bytes.Buffer
	require.NoError(t, p.Trace().WriteChromeTrace(&buf))
	events := validateChromeTrace(t, buf.Bytes())

	var ops, steps, meta int
	for _, e := range events {
		switch e["ph"] {
		case "M":
			meta++
		case "X":
			switch e["cat"] {
			case "forward", "backward":
				ops++
				args := e["args"].(map[string]any)
				require.Contains(t, args, "input_shapes")
				require.Contains(t, args, "bytes")
				assert.Equal(t, 1.0, e["tid"])
			case "step":
				steps++
				assert.Equal(t, 0.0, e["tid"])
			}
			if e["name"] == "train" {
				// Microseconds: the range holds a 1 ms sleep.
				assert.GreaterOrEqual(t, e["dur"].(float64), 1000.0)
			}
		}
	}
	assert.Equal(t, 2, steps)
	assert.Equal(t, len(p.Trace().Events)-3, ops)
	assert.Equal(t, 4, meta, "the process and its three lanes are named")
}

func TestValidatorRejectsBrokenTraces(t *testing.T) {
	// The validator is itself tested on traces it must refuse, each run in
	// a throwaway testing.T.
	bad := map[string]string{
		"no traceEvents":   `{"events": []}`,
		"missing pid":      `{"traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": 1, "tid": 1}]}`,
		"negative dur":     `{"traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": -1, "pid": 1, "tid": 1}]}`,
		"unmatched begin":  `{"traceEvents": [{"name": "a", "ph": "B", "ts": 1, "pid": 1, "tid": 1}]}`,
		"partial overlap":  `{"traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": 5, "pid": 1, "tid": 1}, {"name": "b", "ph": "X", "ts": 3, "dur": 5, "pid": 1, "tid": 1}]}`,
		"string timestamp": `{"traceEvents": [{"name": "a", "ph": "X", "ts": "1", "dur": 1, "pid": 1, "tid": 1}]}`,
	}
	for name, doc := range bad {
		failed := runsAndFails(func(t *testing.T) { validateChromeTrace(t, []byte(doc)) })
		assert.True(t, failed, "validator accepted: %s", name)
	}
	ok := `{"traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": 5, "pid": 1, "tid": 1}, {"name": "b", "ph": "X", "ts": 2, "dur": 3, "pid": 1, "tid": 1}, {"name": "c", "ph": "X", "ts": 3, "dur": 5, "pid": 1, "tid": 2}]}`
	assert.False(t, runsAndFails(func(t *testing.T) { validateChromeTrace(t, []byte(ok)) }))
}

// runsAndFails runs f with a fresh testing.T on its own goroutine (so that
// FailNow ends only it) and reports whether it failed.
func runsAndFails(f func(t *testing.T)) bool {
	inner := &testing.T{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(inner)
	}()
	<-done
	return inner.Failed()
}

func TestInferenceKernelsOfNNAreProfiled(t *testing.T) {
	g := tensor.NewGenerator(2)
	conv := nn.NewConv2d(g, 3, 8, [2]int{3, 3}, tensor.Conv2dOptions{}, true)
	p := profiler.New(profiler.Options{})
	// A no-grad evaluation takes nn's packed inference kernel, which is
	// computed outside the tape (autograd.UnrecordedOp).
	x := autograd.NoGrad(p.Watch(autograd.New(g.Randn([]int{2, 3, 6, 6}))))
	y := conv.Forward(x).Relu()
	require.False(t, y.RequiresGrad())
	ev := p.Trace().Events
	require.Len(t, ev, 2)
	assert.Equal(t, "Conv2d", ev[0].Name)
	assert.Equal(t, [][]int{{2, 3, 6, 6}, {8, 3, 3, 3}, {8}}, ev[0].InputShapes)
	assert.Equal(t, int64(2*(2*8*4*4)*(3*3*3)), ev[0].FLOPs)
	assert.Equal(t, int64(2*8*4*4*4), ev[0].Bytes)
	assert.Equal(t, "Relu", ev[1].Name)
}

func TestFunctionsAreProfiledAsOneOpWithoutBuiltInFLOPs(t *testing.T) {
	// A Function named as a built-in op: timed as one op, but its FLOPs are
	// not guessed from the name.
	square := autograd.NewFunction("MatMul", func(in []*autograd.Var) *autograd.Var { return in[0].Mul(in[0]) },
		func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Mul(in[0]).MulScalar(2)}
		})
	p := profiler.New(profiler.Options{})
	x := p.Watch(autograd.New(tensor.Ones([]int{2, 2})).SetRequiresGrad(true))
	require.NoError(t, square.Apply(x).Sum(nil, false).Backward())
	c := map[string]profiler.OpStats{}
	for _, r := range p.Trace().KeyAverages(profiler.SortByCalls) {
		c[r.Name] = r
	}
	assert.Equal(t, 1, c["MatMul"].Calls)
	assert.Equal(t, int64(0), c["MatMul"].FLOPs)
	// The rule's Mul and MulScalar run inside the backward; the forward's
	// Mul runs on unmarked copies of the inputs and is not seen.
	assert.Equal(t, 1, c["Mul"].Calls)
	assert.Equal(t, 1, c["MulScalar"].Calls)
	assert.Equal(t, 1, c["MatMul.backward"].Calls)
	assert.Equal(t, []float32{2, 2, 2, 2}, x.Grad().Float32s())
}

func TestLanesKeepConcurrentComputationsApart(t *testing.T) {
	p := profiler.New(profiler.Options{})
	lanes := []*profiler.Lane{p.NewLane("worker 0"), p.NewLane("worker 1")}
	done := make(chan error, len(lanes))
	for _, l := range lanes {
		go func() {
			m := newMLP()
			for range 5 {
				loss := l.Watch(autograd.New(tensor.Ones([]int{4, 3}))).MatMul(m.w1).Relu().MatMul(m.w2).Sum(nil, false)
				if err := loss.Backward(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range lanes {
		require.NoError(t, <-done)
	}
	tr := p.Trace()
	perLane := map[int]int{}
	for _, e := range tr.Events {
		if e.Name == "Relu" {
			perLane[e.Lane]++
		}
	}
	assert.Equal(t, map[int]int{3: 5, 4: 5}, perLane)
	var buf bytes.Buffer
	require.NoError(t, tr.WriteChromeTrace(&buf))
	validateChromeTrace(t, buf.Bytes()) // each lane's events nest
}

func TestWatchedIdsWatchALanguageModel(t *testing.T) {
	g := tensor.NewGenerator(5)
	emb := nn.NewEmbedding(g, 10, 4, nn.EmbeddingOptions{})
	head := nn.NewLinear(g, 4, 3, true)
	p := profiler.New(profiler.Options{})
	ids := p.Watch(autograd.New(tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6}, 2, 3)))
	loss := head.Forward(emb.Forward(ids)).Sum(nil, false)
	require.NoError(t, loss.Backward())
	c := calls(p.Trace().KeyAverages(profiler.SortByCalls))
	assert.Equal(t, 1, c["Embedding"])
	assert.Equal(t, 1, c["Embedding.backward"])
	assert.Equal(t, 1, c["EmbeddingBackward"], "the weight gradient, in the backward")
	assert.Positive(t, c["MatMul"])
	require.NotNil(t, emb.Weight.Grad())

	// Anomaly detection follows the ids too; NoGrad ids still record nothing.
	checked := autograd.DetectAnomaly(autograd.New(tensor.FromSlice([]int64{0, 1}, 2)), autograd.AnomalyOptions{})
	assert.True(t, emb.Forward(checked).DetectsAnomaly())
	assert.False(t, emb.Forward(autograd.NoGrad(ids)).RequiresGrad())
}
