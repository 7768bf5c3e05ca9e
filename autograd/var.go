// Package autograd computes gradients. Wrap tensors as Vars (New for data,
// Param for values that need a gradient), compute with them as with
// tensors, call Backward on the result and read each parameter's Grad; Grad
// computes gradients of gradients, GradCheck compares a gradient with
// finite differences, and NewFunction defines an operation with a gradient
// rule of your own (Custom records one whose value you computed yourself).
// The runnable examples ExampleVar_Backward, ExampleGrad,
// ExampleGradCheck, ExampleNoGrad and ExampleNewFunction show each.
//
// It is a define-by-run tape: every operation on Vars computes its value at
// once and, when some input requires a gradient, records a node holding its
// inputs and the rule that pushes the output's gradient back to them.
// Backward walks those nodes in reverse topological order. A tensor an op
// saved for backward carries a version check, so an in-place write that
// would corrupt a gradient fails loudly.
//
// There is no global mode and no global state: recording happens only when
// an input requires a gradient, so inference on plain Vars costs nothing
// extra, and separate goroutines may build and differentiate their own
// graphs at once.
//
// No-grad evaluation (PyTorch's torch.no_grad) is a mark on the data, not a
// mode: NoGrad marks an input, every op with a marked input records nothing
// (even when a parameter it uses requires a gradient) and marks its output.
// model.Forward(autograd.NoGrad(x)) therefore evaluates a trainable model
// without a tape, as cheaply as a frozen one, while another goroutine
// trains it. NeedsGrad is the one rule for "does this op record".
package autograd

import (
	"fmt"
	"sync"

	"github.com/emberml/ember/tensor"
)

// Var is a tensor in a computation graph.
type Var struct {
	value        *tensor.Tensor
	requiresGrad bool
	// gradSink marks a placeholder gradient that stands for gradients an op
	// collects itself (Unbind): backward adds it to a gradient only once.
	gradSink bool
	// noGrad marks a value of a no-grad evaluation (NoGrad): an op with
	// such an input records nothing and marks its output. See nograd.go.
	// (The three flags share one word: a Var fits the 80-byte size class.)
	noGrad bool
	node   *node // the op that made this Var; nil for leaves

	mu         sync.Mutex
	grad       *Var
	retainGrad bool
	hooks      []*hookEntry // gradient hooks (hooks.go)

	// watch marks a computation that is observed (Observe) or checked for
	// anomalies (DetectAnomaly): ops with a marked input report to it and
	// pass it to their output. See observe.go.
	watch *watch
}

// node is one recorded operation.
type node struct {
	op     string
	inputs []*Var
	// backward maps the output gradient to one gradient per input (nil where
	// an input gets none). in and out are the op's inputs and output, or
	// detached copies of them when the backward pass is not itself recorded.
	backward func(g *Var, in []*Var, out *Var) []*Var
	saved    []savedVersion
	freed    bool
	// attrs holds the op's non-tensor arguments for readers of the graph
	// (ONNX export); see trace.go.
	attrs map[string]any
	// composite, when set, names the higher-level op (an activation built
	// from primitives) whose output this node is; see trace.go.
	composite *NodeInfo
	// external marks a node recorded through Custom: its rule may return
	// tensors the caller keeps, so backward never takes ownership of them.
	external bool
	// key identifies an op defined outside this package (Custom, Function);
	// nil for the ops this package records itself. See trace.go.
	key *OpKey
	// forward is a Function's forward in Var operations, which graph
	// readers re-run on the node's inputs to trace it; nil otherwise.
	forward func(in []*Var) *Var
	// site is the call stack that recorded the node under anomaly
	// detection (anomaly.go); nil otherwise.
	site *callSite
}

// savedVersion remembers the storage version a saved tensor had when the op
// ran, so backward can refuse a tensor changed in place since.
type savedVersion struct {
	t       *tensor.Tensor
	version uint64
}

// New wraps t as a leaf Var that does not require a gradient.
func New(t *tensor.Tensor) *Var { return &Var{value: t} }

// Param wraps t as a leaf Var that requires a gradient (a trainable value).
func Param(t *tensor.Tensor) *Var { return &Var{value: t, requiresGrad: true} }

// Value returns the tensor the Var holds.
func (v *Var) Value() *tensor.Tensor { return v.value }

// Shape returns the value's shape.
func (v *Var) Shape() []int { return v.value.Shape() }

// DType returns the value's dtype.
func (v *Var) DType() tensor.DType { return v.value.DType() }

// Dim returns the number of dimensions.
func (v *Var) Dim() int { return v.value.Dim() }

// Item returns the single element of a one-element Var.
func (v *Var) Item() float64 { return v.value.Item() }

// RequiresGrad reports whether gradients flow to v.
func (v *Var) RequiresGrad() bool { return v.requiresGrad }

// SetRequiresGrad turns gradient tracking on or off for a leaf Var and
// returns v. Calling it on a non-leaf panics, as in PyTorch.
func (v *Var) SetRequiresGrad(on bool) *Var {
	if v.node != nil {
		panic("autograd.SetRequiresGrad: only leaf Vars can change requires-grad; use Detach")
	}
	if on && v.noGrad {
		panic("autograd.SetRequiresGrad: the Var is marked no-grad (autograd.NoGrad), so no op on it records a gradient; use Detach for an unmarked copy")
	}
	v.requiresGrad = on
	return v
}

// IsLeaf reports whether v was not made by a recorded operation.
func (v *Var) IsLeaf() bool { return v.node == nil }

// Op returns the name of the op that made v ("" for leaves).
func (v *Var) Op() string {
	if v.node == nil {
		return ""
	}
	return v.node.op
}

// Grad returns the accumulated gradient of a leaf (or of a Var that called
// RetainGrad), or nil if none was computed yet.
func (v *Var) Grad() *tensor.Tensor {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.grad == nil {
		return nil
	}
	return v.grad.value
}

// GradVar returns the gradient as a Var; after a CreateGraph backward it is
// part of a graph and can itself be differentiated.
func (v *Var) GradVar() *Var {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.grad
}

// SetGrad replaces the accumulated gradient (nil clears it).
func (v *Var) SetGrad(g *tensor.Tensor) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if g == nil {
		v.grad = nil
		return
	}
	v.grad = New(g)
}

// ZeroGrad clears the accumulated gradient.
func (v *Var) ZeroGrad() { v.SetGrad(nil) }

// RetainGrad asks backward to keep the gradient of a non-leaf Var.
func (v *Var) RetainGrad() *Var {
	v.retainGrad = true
	return v
}

// Detach returns a leaf Var sharing v's value that does not require a
// gradient.
func (v *Var) Detach() *Var { return New(v.value) }

// String describes the Var briefly.
func (v *Var) String() string {
	op := "leaf"
	if v.node != nil {
		op = v.node.op
	}
	return fmt.Sprintf("Var(%s %v %s, requires_grad=%t)", op, v.value.Shape(), v.value.DType(), v.requiresGrad)
}

// Format prints the value as the tensor does and adds the gradient flag.
func (v *Var) Format(f fmt.State, verb rune) {
	if fm, ok := any(v.value).(fmt.Formatter); ok {
		fm.Format(f, verb)
	} else {
		fmt.Fprint(f, v.value.Shape())
	}
	if v.requiresGrad {
		fmt.Fprint(f, " (requires grad)")
	}
}

// record makes the output Var of an op. If no input requires a gradient, or
// an input is marked no-grad (see tracking), the output is a plain leaf
// carrying the inputs' no-grad mark and nothing is recorded. The output
// carries the first marked input's observation mark (observe.go), and a
// node recorded under anomaly detection keeps its creation site. saved lists the
// tensors the backward rule reads, for the in-place version check.
func record(op string, out *tensor.Tensor, inputs []*Var, saved []*tensor.Tensor, backward func(g *Var, in []*Var, out *Var) []*Var) *Var {
	need, noGrad := tracking(inputs)
	w := watchOf(inputs)
	if !need {
		return &Var{value: out, noGrad: noGrad, watch: w}
	}
	n := &node{op: op, inputs: inputs, backward: backward}
	for _, s := range saved {
		n.saved = append(n.saved, savedVersion{t: s, version: s.Version()})
	}
	if w != nil && w.anomaly != nil {
		n.site = captureSite()
	}
	return &Var{value: out, requiresGrad: true, node: n, watch: w}
}

// BackwardFunc is a gradient rule: given the output gradient g, the op's
// inputs and its output (detached copies unless the backward pass is being
// recorded), it returns one gradient per input, nil where there is none.
type BackwardFunc func(g *Var, in []*Var, out *Var) []*Var

// Custom records an operation defined outside this package: out is its
// already computed value, saved the tensors backward will read (checked
// against in-place writes), and backward its gradient rule. Write backward in
// Var operations to keep higher-order gradients working.
//
// A graph reader cannot see inside out's computation: onnx.Export writes a
// Custom op only through a mapping registered for its name
// (onnx.ExportOptions.CustomOps) and otherwise refuses it. Define the op
// with NewFunction instead when its forward can be written in Var
// operations: export then traces that forward.
func Custom(op string, out *tensor.Tensor, inputs []*Var, saved []*tensor.Tensor, backward BackwardFunc) *Var {
	v := record(op, out, inputs, saved, backward)
	if v.node != nil {
		v.node.external = true
		v.node.key = NewOpKey(op)
	}
	return v
}
