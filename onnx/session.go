package onnx

import (
	"context"
	"fmt"
	"slices"
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
	// Range, Pad, OneHot, ...), and of every operator output, so a hostile
	// model cannot request huge allocations. Zero means 1<<31.
	MaxElements int64
	// MaxBytes is the session's memory budget in bytes. Every operator
	// output whose shape comes from values in the model or its inputs is
	// checked against it before it is allocated, every operator output
	// after, and so are the intermediates a run holds at once and the
	// constants folded at load (an error names the node and the bytes
	// asked for). Zero means DefaultMaxBytes (half the machine's physical
	// memory).
	MaxBytes int64
	// IntraOpThreads, when positive, is how many goroutines one large
	// kernel (matrix products, convolutions' GEMMs, big elementwise ops and
	// reductions) may be split across. It is handed to tensor.SetNumThreads
	// by NewSession, so it is process-wide: the last session created with a
	// positive value sets it for every session. Zero leaves the setting as
	// it is (by default runtime.GOMAXPROCS).
	IntraOpThreads int
	// DisableOptimizations skips the load-time graph rewrites of
	// optimize.go (BatchNormalization folded into the preceding Conv,
	// Conv+Relu fused, Identity and inference Dropout removed), which change
	// results only by float rounding.
	DisableOptimizations bool
}

// UnsupportedError lists every operator of a model that Ember cannot run,
// each as "Type (opset N)" or "domain.Type (opset N)".
type UnsupportedError struct {
	Ops []string
}

// maxListed is how many unsupported operators an UnsupportedError's message
// names.
const maxListed = 32

// Error lists the unsupported operators (the first 32, and the count).
func (e *UnsupportedError) Error() string {
	ops := e.Ops
	if len(ops) <= maxListed {
		return "onnx: unsupported operators: " + strings.Join(ops, ", ")
	}
	return fmt.Sprintf("onnx: unsupported operators: %s, ... (%d in all)", strings.Join(ops[:maxListed], ", "), len(ops))
}

// Session is a model prepared to run: operators resolved, nodes sorted,
// constant subgraphs folded, shapes inferred (ValueShape reports them) and
// the point where each intermediate is released planned. Run may be called
// from many goroutines at once: a session is never modified after
// NewSession.
type Session struct {
	model *Model
	plan  *plan
	// shapes holds the shapes inferred at load from the declared inputs.
	shapes shapeEnv
}

// plan is a compiled graph (the main graph or a subgraph of If, Loop or
// Scan): nodes in execution order, folded constants, outputs, and for each
// value the index of the last node reading it, so intermediates are dropped
// early.
type plan struct {
	nodes   []*node
	consts  map[string]*tensor.Tensor
	inputs  []string // formal inputs (subgraphs)
	outputs []string
	lastUse map[string]int
	// release[i] lists the values dropped once node i has run (see
	// plan.go).
	release [][]string
}

// compiler builds plans for one model and collects unsupported operators
// across the main graph and every subgraph.
type compiler struct {
	m           *Model
	opts        SessionOptions
	limit       int64
	unsupported map[string]bool
	// folded is the bytes of the constants folded so far.
	folded int64
}

// NewSession prepares m to run. It fails with an *UnsupportedError listing
// every unsupported operator (subgraphs included), or with an error for a
// malformed graph (missing inputs, cycles, duplicate outputs).
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	s, err := m.newSession(opts)
	return s, bounded(err)
}

// newSession is NewSession with errors of any length.
func (m *Model) newSession(opts SessionOptions) (*Session, error) {
	c := &compiler{m: m, opts: opts, limit: opts.MaxElements, unsupported: map[string]bool{}}
	if c.limit <= 0 {
		c.limit = maxElements
	}
	consts := map[string]*tensor.Tensor{}
	for name, t := range m.initializers {
		if !m.overridable[name] {
			consts[name] = t
		}
	}
	p, _, err := c.compile(m.graph, 0, consts, nil)
	if err != nil {
		return nil, err
	}
	s := &Session{model: m, plan: p}
	if s.shapes, err = p.inferShapes(m.declaredShapes()); err != nil {
		return nil, err
	}
	opts.applyThreads()
	return s, nil
}

// compile builds the plan of g. consts holds its constant initializers;
// outer lists the values visible from enclosing graphs (nil for the main
// graph). It returns the outer values g reads (its captures).
func (c *compiler) compile(g *graphProto, depth int, consts map[string]*tensor.Tensor, outer map[string]bool) (*plan, []string, error) {
	available := map[string]bool{"": true}
	for name := range consts {
		available[name] = true
	}
	for _, in := range g.inputs {
		available[in.name] = true
	}
	nodes := c.buildNodes(g)
	// Values visible to this graph's subgraphs: everything here and above.
	visible := map[string]bool{}
	for name := range outer {
		visible[name] = true
	}
	for name := range available {
		visible[name] = true
	}
	for _, n := range nodes {
		for _, o := range n.outputs {
			visible[o] = true
		}
	}
	for _, n := range nodes {
		if err := c.compileSubgraphs(n, depth, visible); err != nil {
			return nil, nil, err
		}
	}
	if len(c.unsupported) > 0 && depth > 0 {
		return &plan{}, nil, nil // the main graph reports every unsupported op
	}
	if len(c.unsupported) > 0 {
		ops := make([]string, 0, len(c.unsupported))
		for op := range c.unsupported {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		return nil, nil, &UnsupportedError{Ops: ops}
	}
	order, captured, err := sortNodes(g, nodes, available, outer)
	if err != nil {
		return nil, nil, err
	}
	if err := c.typeStrings(g, order, consts, depth); err != nil {
		return nil, nil, err
	}
	p := &plan{consts: consts, lastUse: map[string]int{}}
	for _, in := range g.inputs {
		p.inputs = append(p.inputs, in.name)
	}
	for _, n := range order {
		// Control-flow nodes are never folded: a hostile loop could then
		// hang NewSession, which has no context.
		if !c.opts.DisableConstantFolding && n.graphs == nil && !n.stateful && p.allConst(n) {
			outs, err := callOp(n, p.gather(n, nil))
			if err != nil {
				return nil, nil, fmt.Errorf("onnx: constant folding: %w", err)
			}
			for i, name := range n.outputs {
				if name != "" {
					if err := c.keepFolded(n, outs[i]); err != nil {
						return nil, nil, err
					}
					p.consts[name] = outs[i]
				}
			}
			continue
		}
		p.nodes = append(p.nodes, n)
	}
	if !c.opts.DisableOptimizations {
		if err := p.optimize(g.outputs); err != nil {
			return nil, nil, err
		}
	}
	for i, n := range p.nodes {
		for _, name := range n.inputs {
			p.lastUse[name] = i
		}
	}
	for _, o := range g.outputs {
		p.outputs = append(p.outputs, o.name)
		p.lastUse[o.name] = len(p.nodes)
	}
	p.buildReleases()
	return p, captured, nil
}

// keepFolded counts a folded constant against the session's byte budget,
// which the constants folded at load share.
func (c *compiler) keepFolded(n *node, t *tensor.Tensor) error {
	if t == nil {
		return nil
	}
	c.folded += tensorBytes(t)
	if limit := byteLimit(c.opts.MaxBytes); c.folded > limit {
		return fmt.Errorf("onnx: constant folding: %v: the folded constants take %d bytes, more than the limit of %d bytes (SessionOptions.MaxBytes; or set DisableConstantFolding)", n, c.folded, limit)
	}
	return nil
}

// buildNodes resolves every node's implementation, recording unsupported
// operators.
func (c *compiler) buildNodes(g *graphProto) []*node {
	nodes := make([]*node, 0, len(g.nodes))
	small := smallDeclared(g)
	for _, np := range g.nodes {
		domain := np.domain
		if domain == "ai.onnx" {
			domain = ""
		}
		opset, ok := c.m.Opsets[domain]
		n := &node{
			name: np.name, opType: np.opType, domain: domain,
			inputs: slices.Clone(np.inputs), outputs: np.outputs, numIn: len(np.inputs),
			opset: opset, baseDir: c.m.baseDir, maxElements: c.limit, maxBytes: byteLimit(c.opts.MaxBytes),
			attrs: make(map[string]*attribute, len(np.attrs)),
		}
		for _, a := range np.attrs {
			n.attrs[a.name] = a
		}
		n.smallIn = smallInputs(np.inputs, small)
		if ok {
			if v := registry.lookup(domain, np.opType, opset); v != nil {
				n.impl, n.stateful = v.impl, v.stateful
			}
		}
		if n.impl == nil {
			desc := fmt.Sprintf("%s (opset %d)", qualified(domain, np.opType), opset)
			if !ok {
				desc = fmt.Sprintf("%s (domain %q not imported)", qualified(domain, np.opType), domain)
			}
			c.unsupported[desc] = true
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// compileSubgraphs compiles the graph attributes of n and appends the outer
// values they capture to n's inputs, so they are ordered and passed like
// ordinary inputs.
func (c *compiler) compileSubgraphs(n *node, depth int, visible map[string]bool) error {
	names := make([]string, 0, len(n.attrs))
	for name, a := range n.attrs {
		if a.g != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		g := n.attrs[name].g
		consts := map[string]*tensor.Tensor{}
		for _, tp := range g.initializers {
			t, err := tp.toTensor(dataSource{dir: c.m.baseDir, maxBytes: byteLimit(c.opts.MaxBytes)})
			if err != nil {
				return err
			}
			consts[tp.name] = t
		}
		p, captured, err := c.compile(g, depth+1, consts, visible)
		if err != nil {
			return err
		}
		if n.graphs == nil {
			n.graphs = map[string]*plan{}
		}
		n.graphs[name] = p
		for _, v := range captured {
			if !slices.Contains(n.inputs[n.numIn:], v) {
				n.inputs = append(n.inputs, v)
			}
		}
	}
	return nil
}

// sortNodes orders nodes so each runs after the producers of its inputs and
// checks that every input has a source: a producer, a name in available, or
// (for subgraphs) a value of an enclosing graph, which it reports as
// captured.
func sortNodes(g *graphProto, nodes []*node, available, outer map[string]bool) ([]*node, []string, error) {
	producer := map[string]int{}
	for i, n := range nodes {
		for _, o := range n.outputs {
			if o == "" {
				continue
			}
			if _, dup := producer[o]; dup || available[o] {
				return nil, nil, fmt.Errorf("onnx: value %q is produced twice (again by %v)", o, n)
			}
			producer[o] = i
		}
	}
	var captured []string
	capture := func(name string) bool {
		if !outer[name] {
			return false
		}
		if !slices.Contains(captured, name) {
			captured = append(captured, name)
		}
		return true
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
				if capture(in) {
					continue
				}
				return nil, nil, fmt.Errorf("onnx: %v reads %q, which no node, graph input or initializer provides", n, in)
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
		return nil, nil, fmt.Errorf("onnx: graph has a cycle (%d of %d nodes cannot be ordered)", len(nodes)-len(order), len(nodes))
	}
	for _, o := range g.outputs {
		if _, ok := producer[o.name]; !ok && !available[o.name] && !capture(o.name) {
			return nil, nil, fmt.Errorf("onnx: graph output %q is not produced by any node", o.name)
		}
	}
	return order, captured, nil
}

// allConst reports whether every input of n is a known constant.
func (p *plan) allConst(n *node) bool {
	for _, in := range n.inputs {
		if in == "" {
			continue
		}
		if _, ok := p.consts[in]; !ok {
			return false
		}
	}
	return true
}

// gather collects n's inputs from env and the constants.
func (p *plan) gather(n *node, env map[string]*tensor.Tensor) []*tensor.Tensor {
	in := make([]*tensor.Tensor, len(n.inputs))
	for i, name := range n.inputs {
		if name == "" {
			continue
		}
		if t, ok := env[name]; ok {
			in[i] = t
		} else {
			in[i] = p.consts[name]
		}
	}
	return in
}

// run executes the plan on env (graph inputs and captured values by name;
// run takes ownership of the map) and returns the outputs in order.
func (p *plan) run(ctx context.Context, env map[string]*tensor.Tensor) ([]*tensor.Tensor, error) {
	// live counts the bytes of the intermediates the run holds, each
	// output counted once unless it shares storage with one of its node's
	// inputs (a view); counted remembers what each name added.
	var live int64
	counted := map[string]int64{}
	for i, n := range p.nodes {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("onnx: run stopped before %v: %w", n, err)
		}
		in := p.gather(n, env)
		for j, name := range n.inputs {
			if name != "" && in[j] == nil {
				return nil, fmt.Errorf("onnx: %v: input %s has no value", n, short(name))
			}
		}
		outs, err := callOpCtx(ctx, n, in)
		if err != nil {
			return nil, err
		}
		for j, name := range n.outputs {
			if name == "" {
				continue
			}
			env[name] = outs[j]
			if b := newBytes(outs[j], in); b > 0 {
				live += b - counted[name]
				counted[name] = b
			}
		}
		if limit := n.byteLimit(); live > limit {
			return nil, fmt.Errorf("onnx: %v: the run holds %d bytes of intermediate values, more than the limit of %d bytes (SessionOptions.MaxBytes)", n, live, limit)
		}
		for _, name := range p.release[i] {
			delete(env, name)
			live -= counted[name]
			delete(counted, name)
		}
	}
	result := make([]*tensor.Tensor, len(p.outputs))
	for i, name := range p.outputs {
		t, ok := env[name]
		if !ok {
			t = p.consts[name]
		}
		if t == nil {
			return nil, fmt.Errorf("onnx: graph output %q has no value", name)
		}
		result[i] = t
	}
	return result, nil
}

// newBytes returns the bytes of out, or 0 when out is nil or a view of one
// of in.
func newBytes(out *tensor.Tensor, in []*tensor.Tensor) int64 {
	if out == nil {
		return 0
	}
	for _, t := range in {
		if t != nil && out.SharesStorage(t) {
			return 0
		}
	}
	return tensorBytes(out)
}

// callOpCtx is callOp that hands the run's context to the operator: it
// gets a private copy of its node carrying it, so the shared node is never
// written. Control-flow operators check it between iterations, long
// kernels between chunks (cancel.go), stateful ones find the run's state
// in it.
func callOpCtx(ctx context.Context, n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	c := *n
	c.ctx = ctx
	return callOp(&c, in)
}

// callOp runs n's implementation, turning a panic into an error.
func callOp(n *node, in []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			// The panic's message names the operation and shapes; a stack
			// trace would only add source paths and internals.
			err = fmt.Errorf("onnx: %v (opset %d) failed: %v", n, n.opset, r)
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
		if t != nil && tensorBytes(t) > n.byteLimit() {
			return nil, fmt.Errorf("onnx: %v produced a tensor of shape %v and %d bytes, more than the limit of %d bytes (SessionOptions.MaxBytes)", n, t.Shape(), tensorBytes(t), n.byteLimit())
		}
	}
	return outs, nil
}

// Inputs returns the graph inputs a caller must feed.
func (s *Session) Inputs() []ValueInfo { return s.model.Inputs }

// Outputs returns the graph outputs Run returns.
func (s *Session) Outputs() []ValueInfo { return s.model.Outputs }

// Run executes the graph on inputs (keyed by graph input name) and returns
// every graph output by name. Inputs are checked against the declared names,
// element types, ranks and static dimensions. Run checks ctx between nodes
// and returns ctx's error once it is done. Graphs that take or return
// sequences or optionals run through RunValues.
func (s *Session) Run(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	out, err := s.run(ctx, inputs)
	return out, bounded(err)
}

// run is Run with errors of any length.
func (s *Session) run(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if err := s.validate(inputs, nil); err != nil {
		return nil, err
	}
	if err := s.checkShapes(inputs); err != nil {
		return nil, err
	}
	store := &seqStore{}
	outs, err := s.execute(ctx, inputs, store)
	if err != nil {
		return nil, err
	}
	result := make(map[string]*tensor.Tensor, len(outs))
	for i, name := range s.plan.outputs {
		t := outs[i]
		if _, ok := store.elems(t); ok {
			return nil, fmt.Errorf("onnx: graph output %q is a sequence: run the model with RunValues", name)
		}
		if _, ok := store.optional(t); ok {
			return nil, fmt.Errorf("onnx: graph output %q is an optional: run the model with RunValues", name)
		}
		if _, ok := s.stringValue(store, t); ok {
			return nil, fmt.Errorf("onnx: graph output %q is a string tensor: run the model with RunValues", name)
		}
		result[name] = s.own(t)
	}
	return result, nil
}

// execute runs the plan on validated inputs, with store holding the run's
// sequences and optionals, and returns the graph outputs in order.
func (s *Session) execute(ctx context.Context, inputs map[string]*tensor.Tensor, store *seqStore) ([]*tensor.Tensor, error) {
	env := make(map[string]*tensor.Tensor, len(inputs)+len(s.plan.nodes))
	for name, t := range inputs {
		env[name] = t
	}
	for name := range s.model.overridable {
		if _, ok := env[name]; !ok {
			env[name] = s.model.initializers[name]
		}
	}
	return s.plan.run(withSeqStore(ctx, store), env)
}

// sharesConst reports whether t shares storage with a constant or an
// initializer of the session.
func (s *Session) sharesConst(t *tensor.Tensor) bool {
	for _, c := range s.plan.consts {
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

// validate checks the fed inputs against the graph's declarations; markers
// are the inputs RunValues fed as sequences or optionals, already checked.
func (s *Session) validate(inputs, markers map[string]*tensor.Tensor) error {
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
		if v.Kind == "sequence" || v.Kind == "optional" {
			return fmt.Errorf("onnx: input %q is a %s: pass an onnx.%s through RunValues", name, v.Kind, map[string]string{"sequence": "Sequence", "optional": "Optional"}[v.Kind])
		}
		if v.Kind == "tensor" && v.elemType == dtString {
			return fmt.Errorf("onnx: input %q is a string tensor: pass an onnx.Strings through RunValues", name)
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
			if isSmallType(v.elemType) {
				if err := checkSmallValues(t, v.elemType); err != nil {
					return fmt.Errorf("onnx: input %q: %w", name, err)
				}
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
		_, fed := inputs[v.Name]
		if _, ok := markers[v.Name]; !ok && !fed {
			if _, read := s.plan.lastUse[v.Name]; read {
				return fmt.Errorf("onnx: missing input %q", v.Name)
			}
		}
	}
	return nil
}
