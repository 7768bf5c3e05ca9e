// Package profiler measures where a training or inference step spends its
// time, op by op, as PyTorch's torch.profiler does: each op's forward and
// backward wall time (with the time of the ops it runs inside it taken out
// as self time), its input shapes, the bytes of the tensors it allocates
// and the floating-point operations of products and convolutions. A
// schedule (skip, wait, warm-up, active steps) picks the steps recorded;
// a Trace is written as Chrome Trace Event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open, or summed per op into a
// table sorted by self time, total time, calls, memory or FLOPs. With
// Options.PprofLabels each op's region carries the pprof label op=<name>,
// so a CPU profile taken meanwhile (go test -cpuprofile, runtime/pprof)
// splits by op: go tool pprof -tagfocus=op=MatMul, or -tags.
//
// A profiler watches the computations started from the inputs it marks,
// never a goroutine or the process: Watch returns a marked copy of an
// input, and every op computed from it, forward and backward, is recorded
// (package autograd's Observe). Other computations, in this goroutine or
// another, are not slowed:
//
//	p := profiler.New(profiler.Options{Schedule: profiler.Schedule{Wait: 1, Warmup: 1, Active: 3}})
//	for step := range steps {
//		loss := lossFn(model.Forward(p.Watch(autograd.New(batch))), target)
//		loss.Backward()
//		opt.Step()
//		p.Step()
//	}
//	fmt.Print(p.Trace().Table(profiler.SortBySelfTime, 20))
//
// The forward of an op recorded through autograd.Custom or
// autograd.Unrecorded is not timed, since its value is computed before
// autograd sees it (nn's inference kernels go through
// autograd.UnrecordedOp, which is timed; so is an autograd.Function, as
// one op), and neither is work outside Var operations: mark it with
// Range. The mark travels through Var operations: a model that takes its
// input's tensor out and computes on from there is not seen past that
// point (nn.Embedding passes the marks of its ids on, through
// autograd.EmbeddingOf). Times are wall-clock times on the calling goroutine: an op
// on a GPU is timed until its kernels are queued, not run.
//
// The runnable example ExampleProfiler shows a whole session.
package profiler

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emberml/ember/autograd"
)

// Options configure a Profiler. The zero value records every step.
type Options struct {
	// Schedule picks the steps that are recorded; the zero Schedule
	// records all of them and keeps every event, so give a long run a
	// schedule and OnTraceReady.
	Schedule Schedule
	// OnTraceReady, when set, receives the trace of each active window of
	// the schedule when Step ends it (on Step's goroutine). Trace returns
	// only what was recorded since the last window was handed over.
	OnTraceReady func(*Trace)
	// PprofLabels sets the goroutine's pprof label op=<name> (an op's
	// name, or "<name>.backward" for the backward of its node) for the
	// time each op runs, while the profiler is not waiting, so that CPU
	// profiles split by op. Between ops the goroutine's labels are set to
	// those of LabelContext. Labels follow goroutines: the part of a
	// kernel the CPU backend runs on its worker goroutines is not labelled
	// (tensor.SetNumThreads(1) keeps a kernel on the op's goroutine).
	PprofLabels bool
	// LabelContext holds the pprof labels the goroutine has outside ops
	// (those a pprof.Do around the training loop set): with PprofLabels
	// an op's labels are these plus op=<name>, and they are restored
	// after it. Nil means none.
	LabelContext context.Context
}

// Schedule picks the steps a Profiler records, counted by Step: the first
// SkipFirst steps are skipped, then cycles of Wait steps not recorded,
// Warmup steps timed but discarded (so that first-call costs do not reach
// the trace) and Active steps recorded, repeated Repeat times (0: until
// the profiler is dropped). As torch.profiler.schedule. The zero Schedule
// records every step.
type Schedule struct {
	SkipFirst, Wait, Warmup, Active, Repeat int
}

// phase is what a profiler does during a step.
type phase int32

const (
	phaseWait   phase = iota // nothing recorded
	phaseWarmup              // timed, discarded
	phaseActive              // recorded
)

// at returns the phase of step (counted from 0) and the index of its
// cycle.
func (s Schedule) at(step int) (phase, int) {
	if s == (Schedule{}) {
		return phaseActive, 0
	}
	if step < s.SkipFirst {
		return phaseWait, -1
	}
	step -= s.SkipFirst
	cycle := s.Wait + s.Warmup + s.Active
	c := step / cycle
	if s.Repeat > 0 && c >= s.Repeat {
		return phaseWait, -1
	}
	switch pos := step % cycle; {
	case pos < s.Wait:
		return phaseWait, c
	case pos < s.Wait+s.Warmup:
		return phaseWarmup, c
	default:
		return phaseActive, c
	}
}

// validate panics on a schedule that records nothing or counts backwards.
func (s Schedule) validate() {
	if s.SkipFirst < 0 || s.Wait < 0 || s.Warmup < 0 || s.Active < 0 || s.Repeat < 0 {
		panic(fmt.Sprintf("profiler: negative count in schedule %+v", s))
	}
	if s != (Schedule{}) && s.Active == 0 {
		panic(fmt.Sprintf("profiler: schedule %+v records nothing; set Active", s))
	}
}

// Profiler records the ops computed from the inputs it watches. Its
// methods may be called from several goroutines; each Lane must be used by
// one goroutine at a time.
type Profiler struct {
	opt   Options
	epoch time.Time
	phase atomic.Int32

	mu        sync.Mutex
	step      int
	stepStart time.Time
	events    []Event
	lanes     []*Lane
	main      *Lane // Watch's lane
	ranges    *Lane // Range's lane
}

// New returns a profiler; it is in the first step of its schedule.
func New(opt Options) *Profiler {
	opt.Schedule.validate()
	if opt.LabelContext == nil {
		opt.LabelContext = context.Background()
	}
	now := time.Now()
	p := &Profiler{opt: opt, epoch: now, stepStart: now}
	ph, _ := opt.Schedule.at(0)
	p.phase.Store(int32(ph))
	p.main = p.NewLane("ops")
	p.ranges = p.NewLane("ranges")
	return p
}

// Watch returns a leaf Var sharing x's value whose computations this
// profiler records on its main lane (autograd.Observe): the forward ops
// computed from it and the backward of the nodes they record. Mark each
// step's input. Use NewLane for computations that run on other
// goroutines at the same time.
func (p *Profiler) Watch(x *autograd.Var) *autograd.Var { return p.main.Watch(x) }

// Step ends the current step and starts the next: it moves along the
// schedule and, when an active window ends, hands its trace to
// Options.OnTraceReady.
func (p *Profiler) Step() {
	now := time.Now()
	p.mu.Lock()
	cur, curCycle := p.opt.Schedule.at(p.step)
	if cur == phaseActive {
		p.events = append(p.events, Event{Name: fmt.Sprintf("ProfilerStep#%d", p.step), Kind: KindStep, Step: p.step,
			Start: p.stepStart.Sub(p.epoch), Duration: now.Sub(p.stepStart), Self: now.Sub(p.stepStart)})
	}
	p.step++
	next, nextCycle := p.opt.Schedule.at(p.step)
	var ready *Trace
	if cur == phaseActive && (next != phaseActive || nextCycle != curCycle) && p.opt.Schedule != (Schedule{}) {
		ready = p.traceLocked()
		p.events = p.events[:0] // ready holds a copy
	}
	for _, l := range p.lanes {
		l.reset()
	}
	p.phase.Store(int32(next))
	p.stepStart = time.Now()
	p.mu.Unlock()
	if ready != nil && p.opt.OnTraceReady != nil {
		p.opt.OnTraceReady(ready)
	}
}

// Trace returns what was recorded since the profiler was made, or since
// the last active window was handed to Options.OnTraceReady: a copy, which
// later steps do not change.
func (p *Profiler) Trace() *Trace {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.traceLocked()
}

func (p *Profiler) traceLocked() *Trace {
	t := &Trace{Events: append([]Event(nil), p.events...), Lanes: map[int]string{0: "steps"}}
	for _, l := range p.lanes {
		t.Lanes[l.id] = l.name
	}
	return t
}

// recording reports whether ops are timed now (warm-up or active).
func (p *Profiler) recording() bool { return phase(p.phase.Load()) != phaseWait }

// keeping reports whether timed ops are kept now (active).
func (p *Profiler) keeping() bool { return phase(p.phase.Load()) == phaseActive }

// add appends a finished event when the profiler is in an active step.
func (p *Profiler) add(e Event) {
	p.mu.Lock()
	if p.keeping() {
		e.Step = p.step
		p.events = append(p.events, e)
	}
	p.mu.Unlock()
}

// Range starts a region of the caller's own (data loading, an optimizer
// step) that the trace shows on a lane of ranges, as
// torch.profiler.record_function; End ends it. Ranges that overlap should
// nest, as the trace viewers draw them so:
//
//	defer p.Range("optimizer").End()
func (p *Profiler) Range(name string) *Range {
	r := &Range{p: p, name: name}
	if p.recording() {
		r.start = time.Now()
		r.timed = true
	}
	return r
}

// Range is a region of the caller's (Profiler.Range).
type Range struct {
	p     *Profiler
	name  string
	start time.Time
	timed bool
	ended bool
}

// End ends the region; calling it again does nothing.
func (r *Range) End() {
	if r.ended || !r.timed {
		r.ended = true
		return
	}
	r.ended = true
	d := time.Since(r.start)
	r.p.add(Event{Name: r.name, Kind: KindRange, Lane: r.p.ranges.id, Start: r.start.Sub(r.p.epoch), Duration: d, Self: d})
}

// Lane is one sequence of ops: a track of its own in the trace. The
// profiler's main lane (number 1) serves Watch, number 2 holds the ranges
// and number 0 the steps; a computation that runs on another
// goroutine at the same time as it gets a lane of its own (NewLane).
type Lane struct {
	p    *Profiler
	id   int
	name string

	mu     sync.Mutex
	stack  []frame
	labels map[string]context.Context
}

// frame is an op in progress on a lane.
type frame struct {
	name     string
	kind     Kind
	start    time.Time
	children time.Duration
	// childBytes sums the bytes the ops it ran made.
	childBytes int64
	timed      bool
	labels     context.Context // the goroutine's labels while the op runs
}

// NewLane returns a new lane named name (the track's name in the trace).
func (p *Profiler) NewLane(name string) *Lane {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := &Lane{p: p, id: len(p.lanes) + 1, name: name}
	p.lanes = append(p.lanes, l)
	return l
}

// Watch returns a leaf Var sharing x's value whose computations are
// recorded on this lane (see Profiler.Watch).
func (l *Lane) Watch(x *autograd.Var) *autograd.Var { return autograd.Observe(x, (*observer)(l)) }

// reset drops the ops still open on the lane (an op that panicked never
// ends); Step calls it between steps.
func (l *Lane) reset() {
	l.mu.Lock()
	l.stack = l.stack[:0]
	l.mu.Unlock()
}

// observer is a Lane seen by autograd: its methods are not part of the
// Lane's API.
type observer Lane

// eventName is the name of an op's event: "<op>.backward" for the
// backward of its node.
func eventName(op string, backward bool) string {
	if backward {
		return op + ".backward"
	}
	return op
}

// BeginOp implements autograd.OpObserver.
func (o *observer) BeginOp(op string, backward bool) {
	l := (*Lane)(o)
	timed := l.p.recording()
	if !timed && !l.p.opt.PprofLabels {
		return // waiting: nothing to do
	}
	l.mu.Lock()
	f := frame{name: op, kind: kindOf(backward), timed: timed}
	if l.p.opt.PprofLabels {
		f.labels = l.labelsFor(eventName(op, backward))
		pprof.SetGoroutineLabels(f.labels)
	}
	if timed {
		// Last, so the lane's own bookkeeping stays out of the op.
		f.start = time.Now()
	}
	l.stack = append(l.stack, f)
	l.mu.Unlock()
}

func kindOf(backward bool) Kind {
	if backward {
		return KindBackward
	}
	return KindForward
}

// labelsFor returns the label context of the op named name.
func (l *Lane) labelsFor(name string) context.Context {
	if ctx, ok := l.labels[name]; ok {
		return ctx
	}
	if l.labels == nil {
		l.labels = map[string]context.Context{}
	}
	ctx := pprof.WithLabels(l.p.opt.LabelContext, pprof.Labels("op", name))
	l.labels[name] = ctx
	return ctx
}

// EndOp implements autograd.OpObserver.
func (o *observer) EndOp(e autograd.OpEvent) {
	l := (*Lane)(o)
	if !l.p.recording() && !l.p.opt.PprofLabels {
		return // waiting: BeginOp kept nothing
	}
	end := time.Now()
	made := allocated(e)
	f, ok := l.pop(e.Op, kindOf(e.Backward), end, made)
	if !ok || !f.timed || !l.p.keeping() {
		return
	}
	d := end.Sub(f.start)
	ev := Event{Name: eventName(e.Op, e.Backward), Kind: f.kind, Lane: l.id, Start: f.start.Sub(l.p.epoch), Duration: d, Self: max(d-f.children, 0)}
	ev.InputShapes = make([][]int, len(e.Inputs))
	for j, in := range e.Inputs {
		if in != nil {
			ev.InputShapes[j] = in.Shape()
		}
	}
	// What the ops it ran made (a backward's gradients are made by the
	// ops of its rule) is theirs: the column adds up.
	ev.Bytes = max(made-f.childBytes, 0)
	if !e.Backward && e.Key == nil && len(e.Outputs) == 1 {
		ev.FLOPs = flops(e.Op, ev.InputShapes, e.Outputs[0].Shape())
	}
	// Added without the lane's lock held: Step takes the profiler's lock,
	// then each lane's.
	l.p.add(ev)
}

// pop removes the op that ends at end from the lane: the innermost open op
// of its name and kind (frames above it were left open by ops that
// panicked). It restores the pprof labels of the op around it and adds the
// op's time and the bytes it made (made) to that op's children. ok is
// false when the op is not open
// (it began while the profiler waited, or before the lane was reset).
func (l *Lane) pop(name string, kind Kind, end time.Time, made int64) (f frame, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.stack) - 1
	for i >= 0 && (l.stack[i].name != name || l.stack[i].kind != kind) {
		i--
	}
	if i < 0 {
		return frame{}, false
	}
	f = l.stack[i]
	l.stack = l.stack[:i]
	if l.p.opt.PprofLabels {
		if i > 0 && l.stack[i-1].labels != nil {
			pprof.SetGoroutineLabels(l.stack[i-1].labels)
		} else {
			pprof.SetGoroutineLabels(l.p.opt.LabelContext)
		}
	}
	if f.timed && i > 0 {
		l.stack[i-1].children += end.Sub(f.start)
		l.stack[i-1].childBytes += made
	}
	return f, true
}
