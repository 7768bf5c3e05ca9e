package autograd

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Function is a differentiable operation defined outside this package whose
// forward is written in Var operations and whose gradient rule is the
// user's own, as a PyTorch autograd.Function: the forward gives the value,
// the rule replaces the gradients of the primitives it is made of (a
// numerically stable rule, a straight-through estimator, a cheaper
// formula). Because the forward is made of Var operations, graph readers
// can trace it: onnx.Export writes a Function as the nodes of its forward
// unless onnx.ExportOptions.CustomOps maps its name.
//
// A Function may be applied from many goroutines at once.
type Function struct {
	key      *OpKey
	forward  func(in []*Var) *Var
	backward BackwardFunc
}

// NewFunction returns the operation named name (for messages, graph dumps
// and onnx.ExportOptions.CustomOps; it never has to differ from a built-in
// op's name) that computes forward and differentiates by backward.
//
// forward must compute its result from its inputs alone: a value it reads
// from elsewhere (a parameter it closes over) gets no gradient and is
// traced as a constant; pass such values as inputs. It is run on inputs
// that record nothing when the op is applied, and again on the recorded
// inputs when a graph reader traces the op.
//
// backward receives the output gradient, the inputs and the output, and
// returns one gradient per input (nil where an input gets none), as for
// Custom.
func NewFunction(name string, forward func(in []*Var) *Var, backward BackwardFunc) *Function {
	if forward == nil || backward == nil {
		panic(fmt.Sprintf("autograd.NewFunction(%q): forward and backward must both be given", name))
	}
	return &Function{key: NewOpKey(name), forward: forward, backward: backward}
}

// Name returns the name the Function was made with.
func (f *Function) Name() string { return f.key.name }

// Key returns the key identifying the Function's op in recorded graphs
// (NodeInfo.Key).
func (f *Function) Key() *OpKey { return f.key }

// Apply computes the op on inputs. When an input requires a gradient the
// result is recorded as one op whose gradient is the Function's rule;
// otherwise it is a plain value.
func (f *Function) Apply(inputs ...*Var) *Var {
	s := begin(f.key.name, inputs...) // an observer times the op (observe.go)
	s.key = f.key
	plain := make([]*Var, len(inputs))
	saved := make([]*tensor.Tensor, 0, len(inputs))
	for i, in := range inputs {
		if in == nil {
			continue
		}
		plain[i] = New(in.value)
		saved = append(saved, in.value)
	}
	out := f.forward(plain)
	if out == nil {
		panic(fmt.Sprintf("autograd.Function %q: forward returned nil", f.key.name))
	}
	v := record(f.key.name, out.value, inputs, saved, f.backward)
	if v.node != nil {
		v.node.external = true
		v.node.key = f.key
		v.node.forward = f.forward
	}
	return s.finish(v, inputs...)
}
