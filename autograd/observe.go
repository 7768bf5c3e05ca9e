package autograd

import "github.com/emberml/ember/tensor"

// Observing a computation: a profiler (package profiler) and anomaly
// detection (anomaly.go) watch the ops computed from a marked input. Like
// NoGrad, the mark travels with the data, never with the goroutine or the
// process: Observe or DetectAnomaly returns a marked copy of an input,
// every op with a marked input reports to the mark and marks its output,
// and the nodes it records keep the mark for backward. A computation from
// unmarked inputs, in this goroutine or another, runs as before: an op
// looks at one pointer per input, and backward at one per node.
//
// Timing an op needs a start before its value is computed, while the
// value is computed before record knows it: every op of this package
// therefore calls begin, with its name and inputs, before it computes, and
// records through the span begin returned (span.record). Go evaluates
// begin(...) first in begin(...).record(value(...), ...), so one line both
// starts the span and computes the value.

// OpObserver watches the ops computed from an observed Var (see Observe).
// BeginOp and EndOp come in matched pairs, nested as the ops are: an op
// whose forward runs other ops (Conv1d runs Conv2d), or the backward of a
// node whose gradient rule runs ops, is reported around them, and so are a
// Function's op (the ops of its forward, which runs on unmarked copies of
// the inputs, are not) and a value computed through UnrecordedOp. The
// forward of an op recorded through Custom or Unrecorded is not reported:
// its value is computed before this package sees it (the output still
// carries the mark on, and the backward of a Custom node is reported).
//
// An observer is called on the goroutine that computes the op; ops from
// several goroutines reach the same observer when their inputs share its
// mark, so an implementation that keeps state must guard it.
type OpObserver interface {
	// BeginOp is called before the op named op computes; backward is true
	// for the backward of a recorded node of that op.
	BeginOp(op string, backward bool)
	// EndOp is called when the op that began last has finished.
	EndOp(e OpEvent)
}

// OpEvent describes an op that has finished, for an OpObserver. Its slices
// are the observer's to read during EndOp only.
type OpEvent struct {
	// Op is the op's name, as Var.Op reports it.
	Op string
	// Backward is true for the backward of a recorded node: Inputs are the
	// node's inputs and Outputs the gradients its rule returned for them
	// (nil where an input gets none).
	Backward bool
	// Inputs are the op's Var inputs in order; an absent optional input (a
	// nil bias) is nil.
	Inputs []*Var
	// Outputs holds the op's result (one Var) in forward.
	Outputs []*Var
	// Grad is, in backward, the gradient of the node's output that the
	// rule was given; nil in forward.
	Grad *Var
	// Key identifies an op defined outside this package (a Function, or
	// the backward of a Custom op), whose name may be any, a built-in
	// op's included; nil for the ops of this package and UnrecordedOp.
	Key *OpKey
}

// watch is the mark of an observed computation, shared by every Var
// computed from the marked input.
type watch struct {
	observer OpObserver
	anomaly  *AnomalyOptions
	// inBackward is the mark given to the values a backward rule computes
	// with (the observer alone: the engine checks the gradients itself);
	// nil when there is no observer.
	inBackward *watch
}

// newWatch returns the mark with the given observer and anomaly options.
func newWatch(o OpObserver, a *AnomalyOptions) *watch {
	w := &watch{observer: o, anomaly: a}
	if o != nil {
		w.inBackward = &watch{observer: o}
		w.inBackward.inBackward = w.inBackward
	}
	return w
}

// Observe returns a leaf Var sharing v's value whose computations report
// to o: every op with an input computed from it calls o.BeginOp before it
// computes and o.EndOp after, and so does backward for each node those ops
// record. The mark is on the data: ops on unmarked Vars, in this goroutine
// or another, are not observed and cost what they did.
//
// Observe a model's input (a plain Var, possibly marked by NoGrad, whose
// mark the copy keeps, as it keeps an anomaly-detection mark); a leaf that
// requires a gradient may be observed too, and its gradient then
// accumulates on the returned Var. An op whose inputs carry different
// marks reports to the first one's observer. Observe panics on a Var made
// by a recorded op: observe the inputs its graph was computed from.
func Observe(v *Var, o OpObserver) *Var {
	if o == nil {
		panic("autograd.Observe: nil observer")
	}
	var a *AnomalyOptions
	if v.watch != nil {
		a = v.watch.anomaly
	}
	return v.marked("Observe", newWatch(o, a))
}

// marked returns the leaf copy of v carrying w.
func (v *Var) marked(fn string, w *watch) *Var {
	if v.node != nil {
		panic("autograd." + fn + ": the Var was made by a recorded op (" + v.node.op + "); mark the inputs its graph was computed from, which are leaves")
	}
	return &Var{value: v.value, requiresGrad: v.requiresGrad, noGrad: v.noGrad, watch: w}
}

// Observer returns the observer v's computation reports to, or nil.
func (v *Var) Observer() OpObserver {
	if v.watch == nil {
		return nil
	}
	return v.watch.observer
}

// watchOf returns the mark of the first marked input, or nil.
func watchOf(inputs []*Var) *watch {
	for _, in := range inputs {
		if in != nil && in.watch != nil {
			return in.watch
		}
	}
	return nil
}

// span is an op in progress: begin starts it before the op computes, and
// its record or recordAttrs makes the output and ends it. Without a marked
// input it only carries the op's name.
type span struct {
	op  string
	w   *watch
	key *OpKey // set for a Function's op
}

// begin starts the op named op on inputs: it tells the observer of the
// first marked input, if any, that the op begins.
func begin(op string, inputs ...*Var) span {
	for _, in := range inputs {
		if in != nil && in.watch != nil {
			if o := in.watch.observer; o != nil {
				o.BeginOp(op, false)
			}
			return span{op: op, w: in.watch}
		}
	}
	return span{op: op}
}

// record is record for the op the span began.
func (s span) record(out *tensor.Tensor, inputs []*Var, saved []*tensor.Tensor, backward func(g *Var, in []*Var, out *Var) []*Var) *Var {
	v := record(s.op, out, inputs, saved, backward)
	if s.w != nil {
		s.end(v, inputs)
	}
	return v
}

// recordAttrs is recordAttrs for the op the span began.
func (s span) recordAttrs(attrs map[string]any, out *tensor.Tensor, inputs []*Var, saved []*tensor.Tensor, backward func(g *Var, in []*Var, out *Var) []*Var) *Var {
	v := recordAttrs(s.op, attrs, out, inputs, saved, backward)
	if s.w != nil {
		s.end(v, inputs)
	}
	return v
}

// end finishes the span whose output is v: the optional forward anomaly
// check, then the observer's EndOp.
func (s span) end(v *Var, inputs []*Var) {
	if o := s.w.observer; o != nil {
		// The observer hears of the end first, so that an anomaly panic
		// leaves its spans matched.
		o.EndOp(OpEvent{Op: s.op, Inputs: inputs, Outputs: []*Var{v}, Key: s.key})
	}
	if a := s.w.anomaly; a != nil && a.CheckForward {
		checkForward(s.op, v, inputs)
	}
}

// finish ends the span of an op whose output is v and that records
// through a path of its own (several outputs, or an output assembled by
// other ops).
func (s span) finish(v *Var, inputs ...*Var) *Var {
	if s.w != nil {
		s.end(v, inputs)
	}
	return v
}

// UnrecordedOp is Unrecorded for a value that compute computes from inputs
// outside the tape (an inference-only fused kernel): it calls compute and
// wraps its result as Unrecorded does, and an observer of the inputs
// (Observe) sees the op named op begin before compute runs and end after,
// as it sees the ops of this package. List among inputs every Var the
// kernel reads (the weight too), so that their shapes reach the observer.
// It panics, before calling compute, when NeedsGrad(inputs...) holds.
func UnrecordedOp(op string, compute func() *tensor.Tensor, inputs ...*Var) *Var {
	if NeedsGrad(inputs...) {
		panic("autograd.UnrecordedOp(" + op + "): an input requires a gradient, which a value computed outside the tape would drop; record it with Custom")
	}
	s := begin(op, inputs...)
	return s.finish(Unrecorded(compute(), inputs...), inputs...)
}

// EmbeddingOf is Embedding with the integer ids given as a Var, which gets
// no gradient but passes its marks on as an input does: an observer of ids
// (Observe) sees the lookup and the ops computed from it, anomaly detection
// follows it, and ids marked by NoGrad make the lookup record nothing. A
// model whose input is ids (nn.Embedding.Forward) uses it, so that
// watching the ids watches the model.
func EmbeddingOf(ids, weight *Var) *Var {
	if ids.noGrad && !weight.noGrad {
		weight = NoGrad(weight)
	}
	v := embedding(begin("Embedding", weight, ids), ids.value, weight)
	if v.watch == nil && ids.watch != nil {
		v.watch = ids.watch
		if v.node != nil && ids.watch.anomaly != nil {
			v.node.site = captureSite()
		}
	}
	return v
}
