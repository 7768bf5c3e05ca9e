// Package tracegraph turns a forward pass recorded by autograd into a plain
// graph of ops, with the module each op ran in when a model is traced, for
// the writers of graph drawings (graphviz) and TensorBoard graphs.
package tracegraph

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Kind tells what a node stands for.
type Kind int

const (
	// Op is a recorded operation.
	Op Kind = iota
	// Input is an input of the traced function.
	Input
	// Param is a leaf requiring a gradient (a parameter).
	Param
	// Constant is any other leaf: a tensor the trace reads.
	Constant
)

// Scope is one module call: the module's dotted path in the model ("" for
// the model itself) and its type.
type Scope struct {
	Path, Type string
	// Parent is the enclosing call's index in Graph.Scopes, -1 for none.
	Parent int
}

// Node is one value of the graph: an op's output or a leaf.
type Node struct {
	Kind Kind
	// Op is the op's name for Op nodes; the leaf's name (parameter name,
	// input_0, ...) otherwise.
	Op string
	// Inputs are the indexes in Graph.Nodes of the op's inputs.
	Inputs []int
	Shape  []int
	DType  tensor.DType
	// Scope is the index in Graph.Scopes of the innermost module call that
	// computed the op, -1 when none is known.
	Scope int
}

// Graph is a traced graph: nodes in topological order (inputs first).
type Graph struct {
	Nodes   []Node
	Scopes  []Scope
	Outputs []int
}

// Options configures FromVars.
type Options struct {
	// Names names leaves (parameters, inputs).
	Names map[*autograd.Var]string
	// Inputs marks leaves as inputs of the traced function.
	Inputs map[*autograd.Var]bool
	// Composites shows an op built from primitives by a function that names
	// itself (LeakyReLU, GELU, ...) as that one op, as a model is read;
	// without it every primitive backward walks is shown.
	Composites bool
}

// FromVars returns the graph recorded behind outputs.
func FromVars(outputs []*autograd.Var, opts Options) *Graph {
	b := &builder{g: &Graph{}, index: map[*autograd.Var]int{}, opts: opts}
	for _, o := range outputs {
		b.g.Outputs = append(b.g.Outputs, b.visit(o))
	}
	return b.g
}

// builder walks recorded nodes.
type builder struct {
	g     *Graph
	index map[*autograd.Var]int
	vars  []*autograd.Var // by node index
	opts  Options
}

// opOf returns the op that made v as the graph shows it.
func (b *builder) opOf(v *autograd.Var) (autograd.NodeInfo, bool) {
	if b.opts.Composites {
		if c, ok := v.Composite(); ok {
			return c, true
		}
	}
	return v.Node()
}

// visit adds v and what it depends on, returning v's index. It walks
// iteratively: a deep graph (an unrolled recurrent net) must not exhaust
// the stack.
func (b *builder) visit(root *autograd.Var) int {
	if i, ok := b.index[root]; ok {
		return i
	}
	type frame struct {
		v      *autograd.Var
		inputs []*autograd.Var
		next   int
	}
	stack := []frame{{v: root}}
	if n, ok := b.opOf(root); ok {
		stack[0].inputs = n.Inputs
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.inputs) {
			in := top.inputs[top.next]
			top.next++
			if in == nil {
				continue
			}
			if _, seen := b.index[in]; seen {
				continue
			}
			f := frame{v: in}
			if n, ok := b.opOf(in); ok {
				f.inputs = n.Inputs
			}
			stack = append(stack, f)
			continue
		}
		v := top.v
		stack = stack[:len(stack)-1]
		if _, seen := b.index[v]; seen {
			continue
		}
		node := Node{Shape: v.Shape(), DType: v.Value().DType(), Scope: -1}
		if n, ok := b.opOf(v); ok {
			node.Kind, node.Op = Op, n.Op
			if n.Key != nil {
				node.Op = n.Key.Name()
			}
			for _, in := range n.Inputs {
				if in != nil {
					node.Inputs = append(node.Inputs, b.index[in])
				}
			}
		} else {
			node.Op = b.opts.Names[v]
			switch {
			case b.opts.Inputs[v]:
				node.Kind = Input
			case v.RequiresGrad():
				node.Kind = Param
			default:
				node.Kind = Constant
			}
			if node.Op == "" {
				node.Op = map[Kind]string{Param: "leaf", Constant: "constant"}[node.Kind]
			}
		}
		b.index[v] = len(b.g.Nodes)
		b.g.Nodes = append(b.g.Nodes, node)
		b.vars = append(b.vars, v)
	}
	return b.index[root]
}

// call is one recorded module call.
type call struct {
	scope   int
	depth   int
	in, out *autograd.Var
}

// TraceModule runs model's Forward on inputs (in evaluation mode, the mode
// restored after) with every parameter recording, and returns the graph
// with each op's module call: modules applied through nn.Call (as
// Sequential applies its layers) are told apart; the ops of a module that
// calls a child's Forward directly belong to that module. One input goes
// through nn.Call; two go to the model's Forward2(a, b) method.
func TraceModule(model nn.Module, inputs []*tensor.Tensor) (*Graph, error) {
	if len(inputs) == 0 || len(inputs) > 2 {
		return nil, fmt.Errorf("trace: want one or two example inputs, got %d", len(inputs))
	}
	names := map[*autograd.Var]string{}
	for _, p := range model.NamedParameters() {
		if _, dup := names[p.Param]; !dup {
			names[p.Param] = p.Name
		}
		if !p.Param.RequiresGrad() && p.Param.IsLeaf() {
			p.Param.SetRequiresGrad(true)
			defer p.Param.SetRequiresGrad(false)
		}
	}
	isInput := map[*autograd.Var]bool{}
	inVars := make([]*autograd.Var, len(inputs))
	for i, t := range inputs {
		inVars[i] = autograd.Param(t)
		names[inVars[i]] = fmt.Sprintf("input_%d", i)
		isInput[inVars[i]] = true
	}

	var scopes []Scope
	var calls []call
	var handles []*autograd.HookHandle
	defer func() {
		for _, h := range handles {
			h.Remove()
		}
	}()
	var walk func(path string, m nn.Module, parent, depth int)
	walk = func(path string, m nn.Module, parent, depth int) {
		idx := len(scopes)
		scopes = append(scopes, Scope{Path: path, Type: ModuleType(m), Parent: parent})
		if hm, ok := m.(interface {
			RegisterForwardHook(nn.ForwardHook) *autograd.HookHandle
		}); ok {
			handles = append(handles, hm.RegisterForwardHook(func(_ nn.Module, x, out *autograd.Var) *autograd.Var {
				calls = append(calls, call{scope: idx, depth: depth, in: x, out: out})
				return nil
			}))
		}
		if c, ok := m.(interface{ Children() []nn.NamedModule }); ok {
			for _, ch := range c.Children() {
				child := ch.Name
				if path != "" {
					child = path + "." + ch.Name
				}
				walk(child, ch.Module, idx, depth+1)
			}
		}
	}
	walk("", model, -1, 0)

	training := model.IsTraining()
	model.Train(false)
	defer model.Train(training)
	var out *autograd.Var
	if len(inVars) == 2 {
		two, ok := model.(interface {
			Forward2(a, b *autograd.Var) *autograd.Var
		})
		if !ok {
			return nil, fmt.Errorf("trace: %s has no Forward2(a, b) method to take two inputs", ModuleType(model))
		}
		out = two.Forward2(inVars[0], inVars[1])
		calls = append(calls, call{scope: 0, depth: 0, out: out})
	} else {
		out = nn.Call(model, inVars[0])
		if len(calls) == 0 || calls[len(calls)-1].scope != 0 {
			calls = append(calls, call{scope: 0, depth: 0, in: inVars[0], out: out})
		}
	}
	b := &builder{g: &Graph{Scopes: scopes}, index: map[*autograd.Var]int{}, opts: Options{Names: names, Inputs: isInput, Composites: true}}
	b.g.Outputs = []int{b.visit(out)}
	assignScopes(b, calls)
	return b.g, nil
}

// assignScopes gives every op the deepest module call whose output depends
// on it without going through that call's input.
func assignScopes(b *builder, calls []call) {
	depth := make([]int, len(b.g.Nodes))
	for _, c := range calls {
		root, ok := b.index[c.out]
		if !ok {
			continue
		}
		stop := -1
		if i, ok := b.index[c.in]; ok {
			stop = i
		}
		seen := map[int]bool{}
		stack := []int{root}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[i] || i == stop {
				continue
			}
			seen[i] = true
			n := &b.g.Nodes[i]
			if n.Kind == Input {
				continue
			}
			if n.Scope < 0 || c.depth >= depth[i] {
				n.Scope, depth[i] = c.scope, c.depth
			}
			stack = append(stack, n.Inputs...)
		}
	}
}

// ModuleType returns the name of m's type without package or pointer.
func ModuleType(m nn.Module) string {
	t := reflect.TypeOf(m)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	return t.Name()
}

// ScopePath returns the names of scope s and its parents, outermost first,
// each "path (Type)" or, for the model, its type.
func (g *Graph) ScopePath(s int) []string {
	var out []string
	for ; s >= 0; s = g.Scopes[s].Parent {
		out = append(out, g.Scopes[s].Label())
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Label names the scope: its last path element and type, or the type.
func (s Scope) Label() string {
	if s.Path == "" {
		return s.Type
	}
	return s.Path[strings.LastIndex(s.Path, ".")+1:] + " (" + s.Type + ")"
}
