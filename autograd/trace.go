package autograd

import (
	"maps"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Reading recorded graphs back. Every recorded node keeps its op name, its
// inputs and the non-tensor arguments the op was called with (axes, shapes,
// convolution options, scalars, index tensors), so that a graph traced by one
// forward pass can be translated to another representation (the onnx
// package's Export). The views returned here are copies of the node's
// bookkeeping: changing them does not change the graph.

// NodeInfo is a read-only view of a recorded operation.
type NodeInfo struct {
	// Op is the op name ("MatMul", "Conv2d", "Reshape", ...).
	Op string
	// Attrs holds the op's arguments other than its Var inputs, keyed by
	// parameter name: ints, []int, float64, bool, *tensor.Tensor (index
	// tensors, masks, running statistics) and option structs such as
	// tensor.Conv2dOptions. Nil when the op has none.
	Attrs map[string]any
	// Inputs are the op's Var inputs in order; an optional input that was
	// not given (a nil bias) is nil.
	Inputs []*Var
	// Key identifies an op defined outside this package: recorded by
	// Custom or a Function, or marked by Annotate or AnnotateOp. It is nil
	// exactly for the ops this package records and the composites it marks
	// itself, so a reader gives Op its built-in meaning only when Key is
	// nil: a user's op may carry any name, "Tanh" included.
	Key *OpKey
	// Forward is set for ops recorded by a Function: its forward in Var
	// operations. Calling it on Inputs computes the op again, recording the
	// primitives it is made of when an input requires a gradient (this is
	// how onnx.Export traces a Function).
	Forward func(in []*Var) *Var
}

// OpKey identifies an operation defined outside this package. Keys compare
// by identity: two keys made with the same name are different ops, so a
// graph reader that knows what one key means cannot mistake another op for
// it. Name is for messages and for lookups the user sets up by name (such
// as onnx.ExportOptions.CustomOps).
type OpKey struct{ name string }

// NewOpKey returns a new key for the op named name.
func NewOpKey(name string) *OpKey { return &OpKey{name: name} }

// Name returns the name the key was made with.
func (k *OpKey) Name() string { return k.name }

// String returns the key's name.
func (k *OpKey) String() string { return k.name }

// Node returns the recorded op that made v, or false for a leaf (or for a
// Var computed while no input required a gradient).
func (v *Var) Node() (NodeInfo, bool) {
	if v.node == nil {
		return NodeInfo{}, false
	}
	n := v.node
	return NodeInfo{Op: n.op, Attrs: maps.Clone(n.attrs), Inputs: slices.Clone(n.inputs), Key: n.key, Forward: n.forward}, true
}

// Composite returns the higher-level op whose output v is when v was built
// from primitives by a function that names itself (LeakyReLU, HardSwish,
// ...): Inputs are that function's Var inputs. Readers that know the
// composite op can use it in place of the primitives below it, which is
// required when the primitives used masks computed from the data outside
// the graph (Where with a comparison of plain tensors).
func (v *Var) Composite() (NodeInfo, bool) {
	if v.node == nil || v.node.composite == nil {
		return NodeInfo{}, false
	}
	c := v.node.composite
	return NodeInfo{Op: c.Op, Attrs: maps.Clone(c.Attrs), Inputs: slices.Clone(c.Inputs), Key: c.Key}, true
}

// recordAttrs is record that also stores the op's non-tensor arguments.
func recordAttrs(op string, attrs map[string]any, out *tensor.Tensor, inputs []*Var, saved []*tensor.Tensor, backward func(g *Var, in []*Var, out *Var) []*Var) *Var {
	v := record(op, out, inputs, saved, backward)
	if v.node != nil {
		v.node.attrs = attrs
	}
	return v
}

// annotate marks out, computed from inputs by primitives, as the result of
// the composite op; it returns out.
func annotate(out *Var, op string, attrs map[string]any, inputs ...*Var) *Var {
	if out.node != nil && out.node.composite == nil {
		out.node.composite = &NodeInfo{Op: op, Attrs: attrs, Inputs: inputs}
	}
	return out
}

// Annotate marks out, computed from inputs by primitives, as the result of
// the composite op named op with the given attributes: Composite then
// returns that op, under a new OpKey of that name. The primitives stay
// recorded and define what out is: a graph reader that has been given a
// translation for the name (onnx.ExportOptions.CustomOps) may use it, and
// one that has not reads the primitives (onnx.Export exports them). Use
// AnnotateOp to mark several results as the same op. It does nothing when
// out was recorded by no op (a leaf, or no input required a gradient) or
// is already annotated. It returns out.
func Annotate(out *Var, op string, attrs map[string]any, inputs ...*Var) *Var {
	return AnnotateOp(out, NewOpKey(op), attrs, inputs...)
}

// AnnotateOp is Annotate with an op identified by key: a package that
// defines composite ops (nn's recurrent layers) makes one key per op and
// its readers (onnx.Export) recognise the key itself, never its name.
func AnnotateOp(out *Var, key *OpKey, attrs map[string]any, inputs ...*Var) *Var {
	if out.node != nil && out.node.composite == nil {
		out.node.composite = &NodeInfo{Op: key.name, Attrs: attrs, Inputs: inputs, Key: key}
	}
	return out
}
