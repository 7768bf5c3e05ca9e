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
}

// Node returns the recorded op that made v, or false for a leaf (or for a
// Var computed while no input required a gradient).
func (v *Var) Node() (NodeInfo, bool) {
	if v.node == nil {
		return NodeInfo{}, false
	}
	return NodeInfo{Op: v.node.op, Attrs: maps.Clone(v.node.attrs), Inputs: slices.Clone(v.node.inputs)}, true
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
	return NodeInfo{Op: c.Op, Attrs: maps.Clone(c.Attrs), Inputs: slices.Clone(c.Inputs)}, true
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
// the composite op named op with the given attributes, as the composite
// activations (LeakyReLU, HardSwish, ...) mark themselves: Composite then
// returns that op, and graph readers such as onnx.Export can translate the
// whole computation at once. Layers built from several ops (the recurrent
// layers of package nn) use it. It does nothing when out was recorded by no
// op (a leaf, or no input required a gradient) or is already annotated. It
// returns out.
func Annotate(out *Var, op string, attrs map[string]any, inputs ...*Var) *Var {
	return annotate(out, op, attrs, inputs...)
}
