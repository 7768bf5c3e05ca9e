package onnx

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/emberml/ember/tensor"
)

// SessionOptions configures NewSession. The zero value is the default.
type SessionOptions struct {
	// DisableConstantFolding keeps nodes whose inputs are all constant in
	// the run-time graph instead of evaluating them once at load.
	DisableConstantFolding bool
	// MaxElements caps the element count of tensors whose shape comes from
	// values in the model or its inputs (ConstantOfShape, Expand, Tile,
	// Range, Pad, OneHot), so a hostile model cannot request huge
	// allocations. Zero means 1<<31.
	MaxElements int64
}

// UnsupportedError lists every operator of a model that Ember cannot run,
// each as "Type (opset N)" or "domain.Type (opset N)".
type UnsupportedError struct {
	Ops []string
}

func (e *UnsupportedError) Error() string {
	return "onnx: unsupported operators: " + strings.Join(e.Ops, ", ")
}

// Session is a model prepared to run: operators resolved, nodes sorted,
// constant subgraphs folded. Run may be called from many goroutines at once.
type Session struct {
	model   *Model
	nodes   []*node
	consts  map[string]*tensor.Tensor
	outputs []string
	// lastUse maps a value name to the index of the last node reading it,
	// so Run can drop intermediates early.
	lastUse map[string]int
}

// NewSession prepares m to run. It fails with an *UnsupportedError listing
// every unsupported operator, or with an error for a malformed graph
// (missing inputs, cycles, duplicate outputs).
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	nodes, err := m.resolve(opts)
	if err != nil {
		return nil, err
	}
	if nodes, err = m.sortNodes(nodes); err != nil {
		return nil, err
	}
	s := &Session{model: m, consts: map[string]*tensor.Tensor{}, lastUse: map[string]int{}}
	for name, t := range m.initializers {
		if !m.overridable[name] {
			s.consts[name] = t
		}
	}
	for _, n := range nodes {
		if !opts.DisableConstantFolding && s.allConst(n) {
			outs, err := callOp(n, s.gather(n, nil))
			if err != nil {
				return nil, fmt.Errorf("onnx: constant folding: %w", err)
			}
			for i, name := range n.outputs {
				if name != "" {
					s.consts[name] = outs[i]
				}
			}
			continue
		}
		s.nodes = append(s.nodes, n)
	}
	for i, n := range s.nodes {
		for _, name := range n.inputs {
			s.lastUse[name] = i
		}
	}
	for _, o := range m.Outputs {
		s.outputs = append(s.outputs, o.Name)
		s.lastUse[o.Name] = len(s.nodes)
	}
	return s, nil
}

// resolve builds the nodes and finds every operator's implementation.
func (m *Model) resolve(opts SessionOptions) ([]*node, error) {
	limit := opts.MaxElements
	if limit <= 0 {
		limit = maxElements
	}
	var unsupported []string
	seen := map[string]bool{}
	nodes := make([]*node, 0, len(m.graph.nodes))
	for _, np := range m.graph.nodes {
		domain := np.domain
		if domain == "ai.onnx" {
			domain = ""
		}
		opset, ok := m.Opsets[domain]
		n := &node{
			name: np.name, opType: np.opType, domain: domain,
			inputs: np.inputs, outputs: np.outputs, opset: opset, baseDir: m.baseDir, maxElements: limit,
			attrs: make(map[string]*attribute, len(np.attrs)),
		}
		for _, a := range np.attrs {
			n.attrs[a.name] = a
		}
		if ok {
			n.impl = registry.lookup(domain, np.opType, opset)
		}
		if n.impl == nil {
			desc := fmt.Sprintf("%s (opset %d)", qualified(domain, np.opType), opset)
			if !ok {
				desc = fmt.Sprintf("%s (domain %q not imported)", qualified(domain, np.opType), domain)
			}
			if !seen[desc] {
				seen[desc] = true
				unsupported = append(unsupported, desc)
			}
		}
		nodes = append(nodes, n)
	}
	if unsupported != nil {
		sort.Strings(unsupported)
		return nil, &UnsupportedError{Ops: unsupported}
	}
	return nodes, nil
}

// sortNodes orders nodes so each runs after the producers of its inputs,
// and checks that every input has a source.
func (m *Model) sortNodes(nodes []*node) ([]*node, error) {
	available := map[string]bool{"": true}
	for name := range m.initializers {
		available[name] = true
	}
	for _, in := range m.graph.inputs {
		available[in.name] = true
	}
	producer := map[string]int{}
	for i, n := range nodes {
		for _, o := range n.outputs {
			if o == "" {
				continue
			}
			if _, dup := producer[o]; dup || available[o] {
				return nil, fmt.Errorf("onnx: value %q is produced twice (again by %v)", o, n)
			}
			producer[o] = i
		}
	}
	indeg := make([]int, len(nodes))
	users := make([][]int, len(nodes))
	for i, n := range nodes {
		for _, in := range n.inputs {
			if available[in] {
				continue
			}
			p, ok := producer[in]
			if !ok {
				return nil, fmt.Errorf("onnx: %v reads %q, which no node, graph input or initializer provides", n, in)
			}
			indeg[i]++
			users[p] = append(users[p], i)
		}
	}
	var order []*node
	var ready []int
	for i := range nodes {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, nodes[i])
		for _, u := range users[i] {
			indeg[u]--
			if indeg[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(order) != len(nodes) {
		return nil, fmt.Errorf("onnx: graph has a cycle (%d of %d nodes cannot be ordered)", len(nodes)-len(order), len(nodes))
	}
	for _, o := range m.graph.outputs {
		if _, ok := producer[o.name]; !ok && !available[o.name] {
			return nil, fmt.Errorf("onnx: graph output %q is not produced by any node", o.name)
		}
	}
	return order, nil
}

// allConst reports whether every input of n is a known constant.
func (s *Session) allConst(n *node) bool {
	for _, in := range n.inputs {
		if in == "" {
			continue
		}
		if _, ok := s.consts[in]; !ok {
			return false
		}
	}
	return true
}

// gather collects n's inputs from env and the constants.
func (s *Session) gather(n *node, env map[string]*tensor.Tensor) []*tensor.Tensor {
	in := make([]*tensor.Tensor, len(n.inputs))
	for i, name := range n.inputs {
		if name == "" {
			continue
		}
		if t, ok := env[name]; ok {
			in[i] = t
		} else {
			in[i] = s.consts[name]
		}
	}
	return in
}

// callOp runs n's implementation, turning a panic into an error.
func callOp(n *node, in []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("onnx: %v (opset %d) failed: %v\n%s", n, n.opset, r, firstFrames(debug.Stack()))
		}
	}()
	outs, err = n.impl(n, in)
	if err != nil {
		return nil, err
	}
	want := 0
	for i, o := range n.outputs {
		if o != "" {
			want = i + 1
		}
	}
	if len(outs) < want {
		return nil, fmt.Errorf("onnx: %v produced %d outputs, the graph uses %d", n, len(outs), want)
	}
	for _, t := range outs {
		if t != nil && int64(t.Numel()) > n.maxElements {
			return nil, fmt.Errorf("onnx: %v produced a tensor of shape %v, more than %d elements", n, t.Shape(), n.maxElements)
		}
	}
	return outs, nil
}

// firstFrames trims a stack trace to a few lines for error messages.
func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	if len(lines) > 16 {
		lines = lines[:16]
	}
	return strings.Join(lines, "\n")
}

// Inputs returns the graph inputs a caller must (or, for initializers that
// are also inputs, may) feed.
func (s *Session) Inputs() []ValueInfo { return s.model.Inputs }

// Outputs returns the graph outputs Run returns.
func (s *Session) Outputs() []ValueInfo { return s.model.Outputs }

// Run executes the graph on inputs (keyed by graph input name) and returns
// every graph output by name. Inputs are checked against the declared names,
// element types, ranks and static dimensions. Run checks ctx between nodes
// and returns ctx's error once it is done.
func (s *Session) Run(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if err := s.validate(inputs); err != nil {
		return nil, err
	}
	env := make(map[string]*tensor.Tensor, len(inputs)+len(s.nodes))
	for name, t := range inputs {
		env[name] = t
	}
	for name := range s.model.overridable {
		if _, ok := env[name]; !ok {
			env[name] = s.model.initializers[name]
		}
	}
	for i, n := range s.nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in := s.gather(n, env)
		for j, name := range n.inputs {
			if name != "" && in[j] == nil {
				return nil, fmt.Errorf("onnx: %v: input %q has no value", n, name)
			}
		}
		outs, err := callOp(n, in)
		if err != nil {
			return nil, err
		}
		for j, name := range n.outputs {
			if name != "" {
				env[name] = outs[j]
			}
		}
		for _, name := range n.inputs {
			if s.lastUse[name] == i {
				delete(env, name)
			}
		}
	}
	result := make(map[string]*tensor.Tensor, len(s.outputs))
	for _, name := range s.outputs {
		t, ok := env[name]
		if !ok {
			t = s.consts[name]
		}
		if t == nil {
			return nil, fmt.Errorf("onnx: graph output %q has no value", name)
		}
		if s.sharesConst(t) {
			t = t.Clone() // never hand out the session's own storage
		}
		result[name] = t
	}
	return result, nil
}

// sharesConst reports whether t shares storage with a constant or an
// initializer of the session.
func (s *Session) sharesConst(t *tensor.Tensor) bool {
	for _, c := range s.consts {
		if t.SharesStorage(c) {
			return true
		}
	}
	for _, c := range s.model.initializers {
		if t.SharesStorage(c) {
			return true
		}
	}
	return false
}

// validate checks the fed inputs against the graph's declarations.
func (s *Session) validate(inputs map[string]*tensor.Tensor) error {
	declared := map[string]ValueInfo{}
	for _, v := range s.model.Inputs {
		declared[v.Name] = v
	}
	for name, t := range inputs {
		v, ok := declared[name]
		if !ok {
			if s.model.overridable[name] {
				if t == nil {
					return fmt.Errorf("onnx: input %q is nil", name)
				}
				continue
			}
			names := make([]string, 0, len(declared))
			for n := range declared {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("onnx: %q is not an input of the model (inputs: %s)", name, strings.Join(names, ", "))
		}
		if t == nil {
			return fmt.Errorf("onnx: input %q is nil", name)
		}
		if v.Kind != "" && v.Kind != "tensor" {
			return fmt.Errorf("onnx: input %q is a %s, which Ember does not support", name, v.Kind)
		}
		if v.Kind == "tensor" && v.elemType != dtUndefined {
			dt, err := v.DType()
			if err != nil {
				return fmt.Errorf("onnx: input %q: %w", name, err)
			}
			if t.DType() != dt {
				return fmt.Errorf("onnx: input %q has dtype %s, the model wants %s (%s)", name, t.DType(), dt, v.ElemType)
			}
		}
		if v.HasShape {
			shape := t.Shape()
			if len(shape) != len(v.Shape) {
				return fmt.Errorf("onnx: input %q has shape %v (rank %d), the model wants rank %d %v", name, shape, len(shape), len(v.Shape), v.Shape)
			}
			for i, d := range v.Shape {
				if d.Value >= 0 && d.Param == "" && int64(shape[i]) != d.Value {
					return fmt.Errorf("onnx: input %q has shape %v, the model wants %v (axis %d must be %d)", name, shape, v.Shape, i, d.Value)
				}
			}
		}
	}
	for _, v := range s.model.Inputs {
		if _, ok := inputs[v.Name]; !ok {
			if s.lastUseOf(v.Name) {
				return fmt.Errorf("onnx: missing input %q", v.Name)
			}
		}
	}
	return nil
}

// lastUseOf reports whether the value is read at run time at all (inputs
// that nothing reads need not be fed).
func (s *Session) lastUseOf(name string) bool {
	_, ok := s.lastUse[name]
	return ok
}
