package onnx

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// DefaultExportOpset is the opset Export writes when ExportOptions.Opset is
// zero.
const DefaultExportOpset = 17

// ExportOptions configures Export.
type ExportOptions struct {
	// Opset is the default-domain opset to write, 13 to 21; zero means
	// DefaultExportOpset.
	Opset int
	// InputNames and OutputNames name the graph's inputs and outputs in
	// order; missing names default to input_0, input_1, ... and output_0, ...
	InputNames, OutputNames []string
	// DynamicAxes marks axes of inputs and outputs as symbolic: graph value
	// name → axis → symbol (written as dim_param), e.g.
	// {"input_0": {0: "batch"}, "output_0": {0: "batch"}}. Axes not listed
	// are written with the traced size.
	DynamicAxes map[string]map[int]string
	// SkipCheck skips loading the written model back with this package's
	// importer (Read and NewSession) before it is written out.
	SkipCheck bool
	// ExternalDataThreshold is the total size in bytes of the initializers
	// above which they must be written as external data (ExportFile; Export
	// and ExportFunc then fail); zero means DefaultExternalDataThreshold.
	ExternalDataThreshold int64
	// ExternalDataName is the file name, beside the model, that ExportFile
	// writes external data to; empty means the model's file name plus
	// ".data".
	ExternalDataName string
	// CustomOps maps the names of ops defined outside package autograd
	// (autograd.Custom, autograd.NewFunction, autograd.Annotate) to how
	// they are written in ONNX. An op without an entry is written as the
	// nodes of its traced forward (a Function) or as the primitives it wraps
	// (an Annotate); a Custom op without one fails the export unless its
	// inputs are constants. A name here never changes how the ops of this
	// library are written: a custom op called "Tanh" is not ONNX's Tanh.
	CustomOps map[string]CustomOpExport
	// Warn, when not nil, receives the exporter's warnings: traced values
	// used as constants where they might have depended on the inputs (a
	// reshape that cannot follow a dynamic axis, a Where mask).
	Warn func(msg string)
}

// Export writes model as an ONNX model to w. It runs model.Forward once on
// exampleInputs in evaluation mode (restoring the model's mode afterwards),
// with every input and parameter recorded, and translates the recorded
// graph into ONNX nodes:
//
//   - parameters and buffers become initializers under their dotted names
//     (matched by identity: NamedParameters' Vars, NamedBuffers' tensors);
//   - any part of the graph that depends on parameters and constants only
//     is folded to one initializer holding its traced value, except layout
//     ops applied to a parameter itself (a Linear's transposed weight becomes
//     Gemm with transB over the named weight, as PyTorch writes it), and
//     nodes and initializers the outputs do not depend on are left out;
//   - an op with no ONNX mapping fails the export with an error naming the
//     op and its position in the trace; nothing is silently dropped;
//   - ops defined outside package autograd are never read as built-in ops
//     by their names: an autograd.NewFunction is written as the nodes of
//     its forward (traced again on its inputs), an autograd.Annotate as the
//     ops it wraps, and an autograd.Custom op (whose value was computed
//     outside the graph) only through ExportOptions.CustomOps, which may
//     map any of them to nodes of the default or a custom domain.
//
// Tracing records what one run did. Go control flow that depends on the
// data is exported as taken on the example inputs; Where masks, Embedding
// ids and index tensors computed outside the graph from plain tensors are
// written as constants (unless they are one of the example inputs); shapes
// the Go code passed to Reshape/View/Expand are written as constants, except
// that leading axes a Reshape keeps from its input are written as 0 (copy
// the input's size) and a Flatten's merged axis as -1, as PyTorch's exporter
// does, so a dynamic batch axis survives them. A Reshape that cannot be
// written that way while some axis is dynamic is reported through
// ExportOptions.Warn.
//
// nn.Module's Forward takes one input, so Export takes exactly one example
// input; ExportFunc exports functions of several inputs. Before writing, the
// model is read back with Read and NewSession (unless opts.SkipCheck).
//
// During the trace Export switches the model to evaluation mode and turns
// gradient tracking on for frozen parameters, restoring both afterwards: do
// not use the model from other goroutines meanwhile. Models whose
// parameters and buffers exceed ExportOptions.ExternalDataThreshold (2 GiB,
// protobuf's limit, by default) must be written with ExportFile, which puts
// them in an external data file; Export then fails. Ops without a mapping
// (Tril, EmbeddingBag with max_norm, ...) fail the export. EmbeddingBag
// with 1-d ids and offsets (and per-sample weights in sum mode) is written
// as a one-hot segment reduction, exact for every mode, when the offsets
// and weights are example inputs or buffers; otherwise it is refused. MaxUnpool2d is exported when its indices are those
// returned by a MaxPool2dWithIndices of the same trace: that pooling
// becomes an ONNX MaxPool with its Indices output, which feeds ONNX
// MaxUnpool. CumProd is unrolled over its (static)
// axis and Roll written as Slices and a Concat; both fail on the dynamic
// batch axis. A value that the trace reads but that is neither an example
// input, a parameter or buffer, nor the output of a traced op (a tensor
// the Go code computed) fails the export when it has the traced size of a
// dynamic batch axis on axis 0, or when it is the ids or indices of a
// lookup (Embedding, EmbeddingBag, IndexSelect, Gather, MaxUnpool2d) and
// has that batch size or the shape of an example input; other such values
// are written as constants. Recurrent layers (nn.RNN, nn.LSTM, nn.GRU) become one ONNX
// RNN, LSTM or GRU node per layer, their weights reordered into ONNX's gate
// layout in initializers named after the first direction's parameter with
// the suffix .onnx_W (from weight_ih), .onnx_R (weight_hh) or .onnx_B
// (bias_ih and bias_hh); lengths given to ForwardState are written as a
// constant sequence_lens input, fixing the batch size.
func Export(model nn.Module, exampleInputs []*tensor.Tensor, w io.Writer, opts ExportOptions) error {
	if len(exampleInputs) != 1 {
		return fmt.Errorf("onnx.Export: nn.Module.Forward takes one input, got %d example inputs (use ExportFunc)", len(exampleInputs))
	}
	was := model.IsTraining()
	model.Train(false)
	defer model.Train(was)
	fn := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{model.Forward(in[0])} }
	return ExportFunc(fn, model.NamedParameters(), model.NamedBuffers(), exampleInputs, w, opts)
}

// ExportFunc is Export for a function of several inputs returning several
// outputs. params and buffers name the Vars and tensors fn reads that should
// become named initializers (others become anonymous constants). fn runs
// as is: put modules in evaluation mode first.
func ExportFunc(fn func(inputs []*autograd.Var) []*autograd.Var, params []nn.NamedParam, buffers []nn.NamedBuffer, exampleInputs []*tensor.Tensor, w io.Writer, opts ExportOptions) error {
	b, _, err := exportModel(fn, params, buffers, exampleInputs, opts, "")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// exportModel builds and encodes the model. With dataName set, the
// initializers go to the returned external data when they exceed the
// threshold, and checking the model is left to the caller.
func exportModel(fn func(inputs []*autograd.Var) []*autograd.Var, params []nn.NamedParam, buffers []nn.NamedBuffer, exampleInputs []*tensor.Tensor, opts ExportOptions, dataName string) (b, data []byte, err error) {
	opset := opts.Opset
	if opset == 0 {
		opset = DefaultExportOpset
	}
	if opset < 13 || opset > 21 {
		return nil, nil, fmt.Errorf("onnx.Export: opset %d unsupported (13 to 21)", opset)
	}
	if len(exampleInputs) == 0 {
		return nil, nil, fmt.Errorf("onnx.Export: no example inputs")
	}
	e := &exporter{
		opset:      opset,
		names:      map[*autograd.Var]string{},
		consts:     map[*autograd.Var]bool{},
		tensorName: map[*tensor.Tensor]string{},
		used:       map[string]bool{},
		warn:       opts.Warn,
		graph:      &exGraph{name: "ember", domains: map[string]int{}},
		custom:     opts.CustomOps,
		inlined:    map[*autograd.Var]*autograd.Var{},
	}
	// Every parameter must record for the trace to be complete.
	for _, p := range params {
		if !p.Param.RequiresGrad() && p.Param.IsLeaf() {
			p.Param.SetRequiresGrad(true)
			defer p.Param.SetRequiresGrad(false)
		}
	}
	e.params = map[*autograd.Var]string{}
	for _, p := range params {
		if _, dup := e.params[p.Param]; !dup {
			e.params[p.Param] = p.Name
			e.used[p.Name] = true
		}
	}
	e.buffers = map[*tensor.Tensor]string{}
	for _, b := range buffers {
		if _, dup := e.buffers[b.Buffer]; !dup {
			e.buffers[b.Buffer] = b.Name
			e.used[b.Name] = true
		}
	}
	inVars := make([]*autograd.Var, len(exampleInputs))
	for i, t := range exampleInputs {
		name := fmt.Sprintf("input_%d", i)
		if i < len(opts.InputNames) && opts.InputNames[i] != "" {
			name = opts.InputNames[i]
		}
		if e.used[name] {
			return nil, nil, fmt.Errorf("onnx.Export: input name %q is used twice or by a parameter", name)
		}
		e.used[name] = true
		inVars[i] = autograd.Param(t)
		e.names[inVars[i]] = name
		e.tensorName[t] = name
		e.graph.inputs = append(e.graph.inputs, exValue{name: name, elem: dtypeToONNX(t.DType()), dims: declDims(t.Shape(), opts.DynamicAxes[name])})
		if len(opts.DynamicAxes[name]) > 0 {
			e.dynamic = true
		}
	}
	outs, err := trace(fn, inVars)
	if err != nil {
		return nil, nil, err
	}
	if len(outs) == 0 {
		return nil, nil, fmt.Errorf("onnx.Export: the function returned no outputs")
	}
	outNames := make([]string, len(outs))
	for i := range outs {
		outNames[i] = fmt.Sprintf("output_%d", i)
		if i < len(opts.OutputNames) && opts.OutputNames[i] != "" {
			outNames[i] = opts.OutputNames[i]
		}
		if e.used[outNames[i]] {
			return nil, nil, fmt.Errorf("onnx.Export: output name %q is used twice or by an input or parameter", outNames[i])
		}
		e.used[outNames[i]] = true
	}
	for _, o := range outs {
		if o == nil {
			return nil, nil, fmt.Errorf("onnx.Export: the function returned a nil output")
		}
	}
	e.findPools(outs)
	for _, o := range outs {
		if err := e.visit(o); err != nil {
			return nil, nil, err
		}
	}
	e.nameOutputs(outs, outNames, opts.DynamicAxes)
	e.prune()
	var ext *externalData
	if e.initBytes() > externalThreshold(opts) {
		if dataName == "" {
			return nil, nil, fmt.Errorf("onnx.Export: the initializers take %d bytes, more than the external-data threshold %d; use ExportFile", e.initBytes(), externalThreshold(opts))
		}
		ext = &externalData{location: dataName}
	}
	b, err = encodeModel(e.graph, opset, "ember", "0.1", ext)
	if err != nil {
		return nil, nil, err
	}
	if ext != nil {
		return b, ext.buf, nil
	}
	if !opts.SkipCheck {
		m, err := Read(bytes.NewReader(b))
		if err != nil {
			return nil, nil, fmt.Errorf("onnx.Export: the exported model does not parse: %w", err)
		}
		if len(e.graph.domains) > 0 {
			// Custom domains run only where their kernels are registered.
			return b, nil, nil
		}
		if _, err := m.NewSession(SessionOptions{}); err != nil {
			return nil, nil, fmt.Errorf("onnx.Export: the exported model does not load: %w", err)
		}
	}
	return b, nil, nil
}

// trace runs fn, turning a panic into an error.
func trace(fn func([]*autograd.Var) []*autograd.Var, in []*autograd.Var) (outs []*autograd.Var, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("onnx.Export: the forward pass panicked: %v", r)
		}
	}()
	return fn(in), nil
}

// declDims returns the declared dimensions of a value of shape s.
func declDims(s []int, dyn map[int]string) []Dim {
	d := make([]Dim, len(s))
	for i, n := range s {
		d[i] = Dim{Value: int64(n)}
		if p, ok := dyn[i]; ok {
			d[i] = Dim{Value: -1, Param: p}
		} else if p, ok := dyn[i-len(s)]; ok {
			d[i] = Dim{Value: -1, Param: p}
		}
	}
	return d
}

// exporter translates one traced graph.
type exporter struct {
	opset      int
	graph      *exGraph
	names      map[*autograd.Var]string // graph value of each visited Var
	consts     map[*autograd.Var]bool   // Vars whose value does not depend on the inputs
	params     map[*autograd.Var]string
	buffers    map[*tensor.Tensor]string
	tensorName map[*tensor.Tensor]string // inputs and initializers written for tensors
	used       map[string]bool
	dynamic    bool
	warn       func(string)
	step       int // position in the trace of the op being translated
	nNodes     int
	nConsts    int
	rnnOuts    map[any][]string                 // recurrent composite call → its output values
	poolOf     map[*tensor.Tensor]*autograd.Var // MaxPool2dWithIndices indices → the pooled Var
	custom     map[string]CustomOpExport        // ExportOptions.CustomOps
	inlined    map[*autograd.Var]*autograd.Var  // Function output → its forward traced again
}

// fresh returns an unused value name built from base.
func (e *exporter) fresh(base string) string {
	for {
		e.nNodes++
		name := fmt.Sprintf("%s_%d", base, e.nNodes)
		if !e.used[name] {
			e.used[name] = true
			return name
		}
	}
}

// init adds an initializer.
func (e *exporter) init(name string, t *tensor.Tensor) string {
	e.graph.inits = append(e.graph.inits, exInit{name: name, t: t.Contiguous()})
	return name
}

// constant returns the name of t as a graph value: an input when t is an
// example input, else an initializer (named after the buffer it is, or
// anonymous), written once per tensor.
func (e *exporter) constant(t *tensor.Tensor) string {
	if n, ok := e.tensorName[t]; ok {
		return n
	}
	name, ok := e.buffers[t]
	if !ok {
		e.nConsts++
		name = e.fresh("const")
	}
	e.tensorName[t] = name
	return e.init(name, t)
}

// isInput reports whether t is one of the example inputs or comes from them.
func (e *exporter) isInputTensor(t *tensor.Tensor) bool {
	n, ok := e.tensorName[t]
	if !ok {
		return false
	}
	for _, in := range e.graph.inputs {
		if in.name == n {
			return true
		}
	}
	return false
}

// ints writes a 1-d INT64 constant.
func (e *exporter) ints(v ...int) string {
	d := make([]int64, len(v))
	for i, x := range v {
		d[i] = int64(x)
	}
	return e.init(e.fresh("const"), tensor.FromSlice(d, len(d)))
}

// scalar writes a 0-d constant of dtype dt.
func (e *exporter) scalar(v float64, dt tensor.DType) string {
	return e.init(e.fresh("const"), tensor.ScalarOf(v, dt))
}

// node appends a node with one output and returns the output's name.
func (e *exporter) node(op string, inputs []string, attrs ...exAttr) string {
	out := e.fresh(op)
	e.graph.nodes = append(e.graph.nodes, &exNode{op: op, name: "node_" + out, inputs: inputs, outputs: []string{out}, attrs: attrs})
	return out
}

func (e *exporter) warnf(format string, args ...any) {
	if e.warn != nil {
		e.warn(fmt.Sprintf(format, args...))
	}
}

// visit translates v and everything it depends on, once.
func (e *exporter) visit(v *autograd.Var) error {
	if _, ok := e.names[v]; ok {
		return nil
	}
	n, ok := e.source(v)
	if ok && !builtin(n) {
		return e.visitCustom(v, n)
	}
	if !ok {
		if name, ok := e.params[v]; ok {
			e.names[v] = e.init(name, v.Value())
			e.tensorName[v.Value()] = name
		} else {
			e.names[v] = e.constant(v.Value())
		}
		e.consts[v] = true
		return nil
	}
	if err := e.checkOutside(v, n); err != nil {
		return err
	}
	in, allConst, err := e.visitInputs(n)
	if err != nil {
		return err
	}
	if allConst && !e.keepsName(n) {
		// Constant folding: the traced value is the value.
		e.names[v] = e.constant(v.Value())
		e.consts[v] = true
		return nil
	}
	name, err := e.translate(v, n, in)
	if err != nil {
		return err
	}
	e.names[v] = name
	e.consts[v] = allConst
	return nil
}

// visitInputs visits the inputs of n, counts n as the next op of the trace
// and returns the inputs' graph values ("" for an absent optional input)
// and whether n depends on constants alone (no input, and no tensor among
// its arguments, comes from the example inputs).
func (e *exporter) visitInputs(n autograd.NodeInfo) (in []string, allConst bool, err error) {
	allConst = true
	in = make([]string, len(n.Inputs))
	for i, x := range n.Inputs {
		if x == nil {
			continue
		}
		if err := e.visit(x); err != nil {
			return nil, false, err
		}
		in[i] = e.names[x]
		allConst = allConst && e.consts[x]
	}
	for _, a := range n.Attrs {
		if t, ok := a.(*tensor.Tensor); ok && e.isInputTensor(t) {
			allConst = false
		}
	}
	e.step++
	return in, allConst, nil
}

// keepsName reports whether a layout op on a parameter is written as a node
// rather than folded, so the initializer keeps the parameter's name and
// layout (a Linear's transposed weight, a Conv1d's unsqueezed kernel).
// Consumers that are themselves folded leave the node dead, and it is
// pruned.
func (e *exporter) keepsName(n autograd.NodeInfo) bool {
	switch n.Op {
	case "Transpose", "Reshape", "View", "Unsqueeze", "Squeeze":
		_, named := e.params[n.Inputs[0]]
		return named
	}
	return false
}

// prune removes the nodes the graph outputs do not depend on and the
// initializers no remaining node reads.
func (e *exporter) prune() {
	producer := map[string]int{}
	for i, n := range e.graph.nodes {
		for _, o := range n.outputs {
			producer[o] = i
		}
	}
	live := make([]bool, len(e.graph.nodes))
	var stack []string
	for _, o := range e.graph.outputs {
		stack = append(stack, o.name)
	}
	read := map[string]bool{}
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if read[name] {
			continue
		}
		read[name] = true
		if i, ok := producer[name]; ok && !live[i] {
			live[i] = true
			stack = append(stack, e.graph.nodes[i].inputs...)
		}
	}
	var nodes []*exNode
	for i, n := range e.graph.nodes {
		if live[i] {
			nodes = append(nodes, n)
		}
	}
	e.graph.nodes = nodes
	var inits []exInit
	for _, in := range e.graph.inits {
		if read[in.name] {
			inits = append(inits, in)
		}
	}
	e.graph.inits = inits
}

// nameOutputs gives the graph outputs their names: the node that makes an
// output is renamed when it is not an input, an initializer or another
// output; otherwise an Identity node is added.
func (e *exporter) nameOutputs(outs []*autograd.Var, names []string, dyn map[string]map[int]string) {
	producer := map[string]*exNode{}
	for _, n := range e.graph.nodes {
		producer[n.outputs[0]] = n
	}
	renamed := map[string]string{}
	for i, o := range outs {
		src := e.names[o]
		if p, ok := producer[src]; ok && renamed[src] == "" {
			renamed[src] = names[i]
			p.outputs[0] = names[i]
		} else {
			e.graph.nodes = append(e.graph.nodes, &exNode{op: "Identity", name: "node_" + names[i], inputs: []string{src}, outputs: []string{names[i]}})
		}
		e.graph.outputs = append(e.graph.outputs, exValue{name: names[i], elem: dtypeToONNX(o.DType()), dims: declDims(o.Shape(), dyn[names[i]])})
	}
	for _, n := range e.graph.nodes {
		for j, s := range n.inputs {
			if r, ok := renamed[s]; ok {
				n.inputs[j] = r
			}
		}
	}
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(a, rank int) int {
	if a < 0 {
		a += rank
	}
	return a
}

func nInt(n autograd.NodeInfo, k string) int {
	v, _ := n.Attrs[k].(int)
	return v
}

func nFloat(n autograd.NodeInfo, k string) float64 {
	v, _ := n.Attrs[k].(float64)
	return v
}

func nInts(n autograd.NodeInfo, k string) []int {
	v, _ := n.Attrs[k].([]int)
	return v
}

// unsupported is the error for an op with no mapping.
func (e *exporter) unsupported(v *autograd.Var, n autograd.NodeInfo, why string) error {
	msg := fmt.Sprintf("onnx.Export: op %q (op %d of the trace, output shape %v) has no ONNX mapping", n.Op, e.step, v.Shape())
	if why != "" {
		msg += ": " + why
	}
	return fmt.Errorf("%s", msg)
}

var sameNameOps = map[string]string{
	"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "Div", "Pow": "Pow", "MatMul": "MatMul",
	"Maximum": "Max", "Minimum": "Min", "Neg": "Neg", "Abs": "Abs", "Exp": "Exp", "Log": "Log",
	"Sqrt": "Sqrt", "Reciprocal": "Reciprocal", "Sin": "Sin", "Cos": "Cos", "Tanh": "Tanh",
	"Sigmoid": "Sigmoid", "Relu": "Relu", "Erf": "Erf", "Sign": "Sign", "Floor": "Floor",
	"Ceil": "Ceil", "Round": "Round",
}

var scalarOps = map[string]string{"AddScalar": "Add", "SubScalar": "Sub", "MulScalar": "Mul", "DivScalar": "Div"}

// translate writes the nodes computing v from the named inputs in.
func (e *exporter) translate(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	x := n.Inputs[0]
	if n.Op == "MatMul" && x.Dim() == 2 {
		// x @ W.T for a 2-d W, as nn.Linear computes it: Gemm with transB
		// reads W itself (the Transpose node is then pruned).
		if t, ok := n.Inputs[1].Node(); ok && builtin(t) && t.Op == "Transpose" && t.Inputs[0].Dim() == 2 {
			return e.node("Gemm", []string{in[0], e.names[t.Inputs[0]]}, attrI("transB", 1)), nil
		}
	}
	if op, ok := sameNameOps[n.Op]; ok {
		return e.node(op, in), nil
	}
	if op, ok := scalarOps[n.Op]; ok {
		return e.node(op, []string{in[0], e.scalar(nFloat(n, "scalar"), x.DType())}), nil
	}
	dt := v.DType()
	switch n.Op {
	case "PowScalar":
		return e.node("Pow", []string{in[0], e.scalar(nFloat(n, "exponent"), dt)}), nil
	case "Square":
		return e.node("Mul", []string{in[0], in[0]}), nil
	case "Rsqrt":
		return e.node("Reciprocal", []string{e.node("Sqrt", in)}), nil
	case "Log1p":
		return e.node("Log", []string{e.node("Add", []string{in[0], e.scalar(1, dt)})}), nil
	case "Expm1":
		return e.node("Sub", []string{e.node("Exp", in), e.scalar(1, dt)}), nil
	case "LogSigmoid":
		return e.node("Neg", []string{e.node("Softplus", []string{e.node("Neg", in)})}), nil
	case "Clamp":
		return e.clip(in[0], nFloat(n, "min"), nFloat(n, "max"), dt), nil
	case "Where":
		cond := n.Attrs["cond"].(*tensor.Tensor)
		if !e.isInputTensor(cond) {
			e.warnf("onnx.Export: op %d (Where, output shape %v) uses a mask computed outside the graph; it is written as a constant", e.step, v.Shape())
		}
		return e.node("Where", []string{e.constant(cond), in[0], in[1]}), nil
	case "Softmax", "LogSoftmax":
		return e.node(n.Op, in, attrI("axis", nInt(n, "axis"))), nil
	case "Sum":
		return e.reduce("ReduceSum", v, n, in[0], true), nil
	case "Max", "Min":
		return e.reduce("Reduce"+n.Op, v, n, in[0], e.opset >= 18), nil
	case "Prod":
		return e.reduce("ReduceProd", v, n, in[0], e.opset >= 18), nil
	case "LogSumExp":
		return e.reduce("ReduceLogSumExp", v, n, in[0], e.opset >= 18), nil
	case "Reshape", "View":
		return e.reshape(v, x, in[0], nInts(n, "shape"), -1), nil
	case "Flatten":
		return e.reshape(v, x, in[0], nil, normAxis(nInt(n, "start"), max(x.Dim(), 1))), nil
	case "Permute":
		axes := nInts(n, "axes")
		perm := make([]int, len(axes))
		for i, a := range axes {
			perm[i] = normAxis(a, x.Dim())
		}
		return e.node("Transpose", in, attrIs("perm", perm)), nil
	case "Transpose":
		perm := make([]int, x.Dim())
		for i := range perm {
			perm[i] = i
		}
		a, b := normAxis(nInt(n, "a"), x.Dim()), normAxis(nInt(n, "b"), x.Dim())
		perm[a], perm[b] = perm[b], perm[a]
		return e.node("Transpose", in, attrIs("perm", perm)), nil
	case "Squeeze":
		axes := nInts(n, "axes")
		var norm []int
		if len(axes) == 0 {
			for i, d := range x.Shape() {
				if d == 1 {
					norm = append(norm, i)
				}
			}
		} else {
			for _, a := range axes {
				if a = normAxis(a, x.Dim()); x.Shape()[a] == 1 {
					norm = append(norm, a)
				}
			}
		}
		if len(norm) == 0 {
			return e.node("Identity", in), nil
		}
		return e.node("Squeeze", []string{in[0], e.ints(norm...)}), nil
	case "Unsqueeze":
		return e.node("Unsqueeze", []string{in[0], e.ints(normAxis(nInt(n, "axis"), x.Dim()+1))}), nil
	case "Expand":
		return e.expand(v, x, in[0]), nil
	case "Narrow":
		a := normAxis(nInt(n, "axis"), x.Dim())
		s := normAxis(nInt(n, "start"), x.Shape()[a])
		return e.node("Slice", []string{in[0], e.ints(s), e.ints(s + nInt(n, "length")), e.ints(a)}), nil
	case "Slice":
		a := normAxis(nInt(n, "axis"), x.Dim())
		step := max(nInt(n, "step"), 1)
		s := normAxis(nInt(n, "start"), x.Shape()[a])
		cnt := v.Shape()[a]
		end := s
		if cnt > 0 {
			end = s + (cnt-1)*step + 1
		}
		return e.node("Slice", []string{in[0], e.ints(s), e.ints(end), e.ints(a), e.ints(step)}), nil
	case "Select":
		a := normAxis(nInt(n, "axis"), x.Dim())
		idx := normAxis(nInt(n, "index"), x.Shape()[a])
		c := e.init(e.fresh("const"), tensor.FromSlice([]int64{int64(idx)}).Reshape())
		return e.node("Gather", []string{in[0], c}, attrI("axis", a)), nil
	case "Concat":
		return e.node("Concat", in, attrI("axis", normAxis(nInt(n, "axis"), v.Dim()))), nil
	case "Contiguous":
		return e.node("Identity", in), nil
	case "To":
		return e.node("Cast", in, attrI("to", int(dtypeToONNX(n.Attrs["dtype"].(tensor.DType))))), nil
	case "Conv2d", "ConvTranspose2d":
		return e.conv(v, n, in)
	case "MaxPool2d", "AvgPool2d":
		return e.pool(v, n, in)
	case "AdaptiveAvgPool2d":
		h, w := x.Shape()[x.Dim()-2], x.Shape()[x.Dim()-1]
		oh, ow := nInt(n, "outH"), nInt(n, "outW")
		if oh == 1 && ow == 1 {
			return e.node("GlobalAveragePool", in), nil
		}
		if oh > 0 && ow > 0 && h%oh == 0 && w%ow == 0 {
			k := []int{h / oh, w / ow}
			return e.node("AveragePool", in, attrIs("kernel_shape", k), attrIs("strides", k)), nil
		}
		return "", e.unsupported(v, n, fmt.Sprintf("adaptive pooling of %dx%d to %dx%d needs input sizes divisible by the output sizes", h, w, oh, ow))
	case "BatchNorm":
		return e.batchNorm(v, n, in)
	case "LayerNorm":
		return e.layerNorm(v, n, in), nil
	case "GroupNorm":
		return e.groupNorm(v, n, in), nil
	case "Dropout":
		return "", e.unsupported(v, n, "dropout in training mode; call model.Train(false) (Export does) or pass training=false")
	case "Embedding":
		return e.node("Gather", []string{in[0], e.constant(n.Attrs["ids"].(*tensor.Tensor))}, attrI("axis", 0)), nil
	case "IndexSelect":
		return e.node("Gather", []string{in[0], e.constant(n.Attrs["index"].(*tensor.Tensor))}, attrI("axis", normAxis(nInt(n, "axis"), x.Dim()))), nil
	case "Gather":
		return e.node("GatherElements", []string{in[0], e.constant(n.Attrs["index"].(*tensor.Tensor))}, attrI("axis", normAxis(nInt(n, "axis"), x.Dim()))), nil
	case "Pad":
		return e.pad(v, n, in)
	}
	return e.composite(v, n, in)
}

// composite translates the activations that record themselves as composites.
func (e *exporter) composite(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	dt := v.DType()
	switch n.Op {
	case "HardTanh":
		return e.clip(in[0], nFloat(n, "min"), nFloat(n, "max"), dt), nil
	case "LeakyReLU":
		return e.node("LeakyRelu", in, attrF("alpha", nFloat(n, "negativeSlope"))), nil
	case "PReLU":
		x, w := n.Inputs[0], n.Inputs[1]
		slope := in[1]
		if w.Shape()[0] > 1 {
			shape := make([]int, x.Dim()-1)
			for i := range shape {
				shape[i] = 1
			}
			shape[0] = w.Shape()[0]
			slope = e.node("Reshape", []string{slope, e.ints(shape...)})
		}
		return e.node("PRelu", []string{in[0], slope}), nil
	case "ELU":
		return e.node("Elu", in, attrF("alpha", nFloat(n, "alpha"))), nil
	case "SELU":
		return e.node("Selu", in, attrF("alpha", nFloat(n, "alpha")), attrF("gamma", nFloat(n, "scale"))), nil
	case "CELU":
		return e.node("Celu", in, attrF("alpha", nFloat(n, "alpha"))), nil
	case "HardSigmoid":
		return e.node("HardSigmoid", in, attrF("alpha", 1.0/6), attrF("beta", 0.5)), nil
	case "HardSwish":
		if e.opset >= 14 {
			return e.node("HardSwish", in), nil
		}
		return e.node("Mul", []string{in[0], e.node("HardSigmoid", in, attrF("alpha", 1.0/6), attrF("beta", 0.5))}), nil
	case "Softplus":
		beta := nFloat(n, "beta")
		if beta == 1 {
			return e.node("Softplus", in), nil
		}
		sp := e.node("Softplus", []string{e.node("Mul", []string{in[0], e.scalar(beta, dt)})})
		return e.node("Div", []string{sp, e.scalar(beta, dt)}), nil
	case "Threshold":
		gt := e.node("Greater", []string{in[0], e.scalar(nFloat(n, "threshold"), dt)})
		return e.node("Where", []string{gt, in[0], e.scalar(nFloat(n, "value"), dt)}), nil
	case "Softshrink":
		l := nFloat(n, "lambda")
		return e.node("Shrink", in, attrF("lambd", l), attrF("bias", l)), nil
	case "Hardshrink":
		return e.node("Shrink", in, attrF("lambd", nFloat(n, "lambda")), attrF("bias", 0)), nil
	case "RNN", "LSTM", "GRU":
		return e.recurrent(v, n, in)
	case "Unbind", "UnbindStack":
		return e.unbind(v, n, in)
	}
	return e.more(v, n, in)
}

// clip writes Clip(x, lo, hi), leaving infinite bounds out.
func (e *exporter) clip(x string, lo, hi float64, dt tensor.DType) string {
	ins := []string{x, "", ""}
	if !math.IsInf(lo, -1) {
		ins[1] = e.scalar(lo, dt)
	}
	if !math.IsInf(hi, 1) {
		ins[2] = e.scalar(hi, dt)
	}
	for len(ins) > 1 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	return e.node("Clip", ins)
}

// reduce writes a reduction; axesInput says whether the opset takes axes as
// an input (else an attribute).
func (e *exporter) reduce(op string, v *autograd.Var, n autograd.NodeInfo, x string, axesInput bool) string {
	keep := 0
	if k, _ := n.Attrs["keepDim"].(bool); k {
		keep = 1
	}
	axes := nInts(n, "axes")
	rank := n.Inputs[0].Dim()
	norm := make([]int, len(axes))
	for i, a := range axes {
		norm[i] = normAxis(a, rank)
	}
	attrs := []exAttr{attrI("keepdims", keep)}
	if len(norm) == 0 {
		return e.node(op, []string{x}, attrs...)
	}
	if axesInput {
		return e.node(op, []string{x, e.ints(norm...)}, attrs...)
	}
	return e.node(op, []string{x}, append(attrs, attrIs("axes", norm))...)
}

// reshape writes a Reshape of x (Var xv) to v's shape. Leading axes kept
// from the input are written as 0; the axis at merged (a Flatten's start,
// -1 for none) or where the caller's shape said -1 is written as -1.
func (e *exporter) reshape(v, xv *autograd.Var, x string, requested []int, merged int) string {
	in, out := xv.Shape(), v.Shape()
	target := make([]int, len(out))
	p := 0
	for p < len(out) && p < len(in) && in[p] == out[p] && in[p] != 0 && p != merged {
		target[p] = 0
		p++
	}
	inferred := false
	for i := p; i < len(out); i++ {
		target[i] = out[i]
		if !inferred && (i == merged || (len(requested) == len(out) && requested[i] == -1)) {
			target[i] = -1
			inferred = true
		}
	}
	if e.dynamic && p == 0 && !inferred {
		e.warnf("onnx.Export: op %d (reshape of %v to %v) writes the traced shape as a constant; a dynamic axis will not follow it", e.step, in, out)
	}
	return e.node("Reshape", []string{x, e.ints(target...)})
}

// expand writes an Expand whose shape keeps input axes as 1 so that they
// follow the input at run time.
func (e *exporter) expand(v, xv *autograd.Var, x string) string {
	in, out := xv.Shape(), v.Shape()
	target := slices.Clone(out)
	off := len(out) - len(in)
	for i := range in {
		if in[i] == out[i+off] {
			target[i+off] = 1
		}
	}
	return e.node("Expand", []string{x, e.ints(target...)})
}

func ones2(a [2]int) []int { return []int{max(a[0], 1), max(a[1], 1)} }

func (e *exporter) conv(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	w := n.Inputs[1]
	ins := in
	if n.Inputs[2] == nil {
		ins = in[:2]
	}
	k := w.Shape()[2:]
	switch o := n.Attrs["options"].(type) {
	case tensor.Conv2dOptions:
		return e.node("Conv", ins, attrIs("kernel_shape", k), attrIs("strides", ones2(o.Stride)),
			attrIs("pads", []int{o.Padding[0], o.Padding[1], o.Padding[0], o.Padding[1]}),
			attrIs("dilations", ones2(o.Dilation)), attrI("group", max(o.Groups, 1))), nil
	case tensor.ConvTranspose2dOptions:
		return e.node("ConvTranspose", ins, attrIs("kernel_shape", k), attrIs("strides", ones2(o.Stride)),
			attrIs("pads", []int{o.Padding[0], o.Padding[1], o.Padding[0], o.Padding[1]}),
			attrIs("output_padding", []int{o.OutputPadding[0], o.OutputPadding[1]}),
			attrIs("dilations", ones2(o.Dilation)), attrI("group", max(o.Groups, 1))), nil
	}
	return "", e.unsupported(v, n, "missing convolution options")
}

func (e *exporter) pool(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	o := n.Attrs["options"].(tensor.Pool2dOptions)
	stride := o.Stride
	for i := range stride {
		if stride[i] == 0 {
			stride[i] = o.Kernel[i]
		}
	}
	ceil := 0
	if o.CeilMode {
		ceil = 1
	}
	attrs := []exAttr{attrIs("kernel_shape", o.Kernel[:]), attrIs("strides", stride[:]),
		attrIs("pads", []int{o.Padding[0], o.Padding[1], o.Padding[0], o.Padding[1]}), attrI("ceil_mode", ceil)}
	dil := ones2(o.Dilation)
	if n.Op == "MaxPool2d" {
		return e.node("MaxPool", in, append(attrs, attrIs("dilations", dil))...), nil
	}
	if dil[0] != 1 || dil[1] != 1 {
		if e.opset < 19 {
			return "", e.unsupported(v, n, "dilated average pooling needs opset 19")
		}
		attrs = append(attrs, attrIs("dilations", dil))
	}
	cip := 0
	if o.CountIncludePad {
		cip = 1
	}
	return e.node("AveragePool", in, append(attrs, attrI("count_include_pad", cip))...), nil
}

// affineParams returns the names of weight and bias, writing ones and zeros
// of shape s for missing ones.
func (e *exporter) affineParams(n autograd.NodeInfo, in []string, s []int, dt tensor.DType) (string, string) {
	w, b := in[1], in[2]
	if n.Inputs[1] == nil {
		w = e.init(e.fresh("const"), tensor.Ones(s, dt))
	}
	if n.Inputs[2] == nil {
		b = e.init(e.fresh("const"), tensor.Zeros(s, dt))
	}
	return w, b
}

func (e *exporter) batchNorm(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	rm, _ := n.Attrs["runningMean"].(*tensor.Tensor)
	rv, _ := n.Attrs["runningVar"].(*tensor.Tensor)
	if train, _ := n.Attrs["training"].(bool); train || rm == nil || rv == nil {
		return "", e.unsupported(v, n, "batch norm with batch statistics (training mode or no running statistics); call model.Train(false)")
	}
	c := n.Inputs[0].Shape()[1]
	w, b := e.affineParams(n, in, []int{c}, v.DType())
	return e.node("BatchNormalization", []string{in[0], w, b, e.constant(rm), e.constant(rv)}, attrF("epsilon", nFloat(n, "eps"))), nil
}

func (e *exporter) layerNorm(v *autograd.Var, n autograd.NodeInfo, in []string) string {
	ns := nInts(n, "normalizedShape")
	eps := nFloat(n, "eps")
	dt := v.DType()
	w, b := e.affineParams(n, in, ns, dt)
	if e.opset >= 17 {
		return e.node("LayerNormalization", []string{in[0], w, b}, attrI("axis", -len(ns)), attrF("epsilon", eps))
	}
	axes := make([]int, len(ns))
	for i := range axes {
		axes[i] = i - len(ns)
	}
	mean := func(x string) string {
		return e.node("ReduceMean", []string{x}, attrIs("axes", axes), attrI("keepdims", 1))
	}
	d := e.node("Sub", []string{in[0], mean(in[0])})
	variance := mean(e.node("Mul", []string{d, d}))
	std := e.node("Sqrt", []string{e.node("Add", []string{variance, e.scalar(eps, dt)})})
	y := e.node("Div", []string{d, std})
	return e.node("Add", []string{e.node("Mul", []string{y, w}), b})
}

// groupNorm writes GroupNorm as PyTorch's exporter does: instance
// normalization of x reshaped to [N, groups, -1], reshaped back, then the
// per-channel affine transform.
func (e *exporter) groupNorm(v *autograd.Var, n autograd.NodeInfo, in []string) string {
	x := n.Inputs[0]
	g := nInt(n, "groups")
	dt := v.DType()
	r := e.node("Reshape", []string{in[0], e.ints(0, g, -1)})
	ones := e.init(e.fresh("const"), tensor.Ones([]int{g}, dt))
	zeros := e.init(e.fresh("const"), tensor.Zeros([]int{g}, dt))
	nrm := e.node("InstanceNormalization", []string{r, ones, zeros}, attrF("epsilon", nFloat(n, "eps")))
	y := e.node("Reshape", []string{nrm, e.node("Shape", []string{in[0]})})
	shape := make([]int, x.Dim()-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = x.Shape()[1]
	if n.Inputs[1] != nil {
		y = e.node("Mul", []string{y, e.node("Reshape", []string{in[1], e.ints(shape...)})})
	}
	if n.Inputs[2] != nil {
		y = e.node("Add", []string{y, e.node("Reshape", []string{in[2], e.ints(shape...)})})
	}
	return y
}

func (e *exporter) pad(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	x := n.Inputs[0]
	pads := nInts(n, "pads")
	rank := x.Dim()
	onnxPads := make([]int, 2*rank)
	for i := 0; 2*i+1 < len(pads) || 2*i < len(pads); i++ {
		ax := rank - 1 - i
		onnxPads[ax] = pads[2*i]
		if 2*i+1 < len(pads) {
			onnxPads[rank+ax] = pads[2*i+1]
		}
	}
	mode := "constant"
	switch n.Attrs["mode"].(tensor.PadMode) {
	case tensor.PadConstant:
	case tensor.PadReflect:
		mode = "reflect"
	case tensor.PadReplicate:
		mode = "edge"
	default:
		return "", e.unsupported(v, n, "pad mode")
	}
	ins := []string{in[0], e.ints(onnxPads...)}
	if mode == "constant" {
		ins = append(ins, e.scalar(nFloat(n, "value"), v.DType()))
	}
	return e.node("Pad", ins, attrS("mode", mode)), nil
}
