package onnx

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/emberml/ember/tensor"
)

// Operator registry.
//
// An operator is a function from the node (attributes, opset) and its input
// tensors to its output tensors. Absent optional inputs are nil; trailing
// absent inputs may be missing from in altogether (use arg). Implementations
// must not modify their inputs (they may be shared constants or another
// run's values) and may panic on shape misuse: Run recovers panics into
// errors.
//
// Each family file (ops_<family>.go) defines a function returning an
// opTable; registry lists them all. To add an operator, add an entry to the
// family's table:
//
//	"Relu": {{since: 1, impl: unary((*tensor.Tensor).Relu)}},
//
// Several entries with disjoint opset ranges give per-version semantics; an
// entry with until 0 is open-ended.
type opImpl func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// opVersion is one implementation of an operator, valid for opsets
// since..until (until 0: no upper bound).
type opVersion struct {
	since, until int64
	impl         opImpl
	// stateful operators use the run's state through node.ctx (sequences,
	// see ops_sequence.go) and are never constant-folded.
	stateful bool
}

// opTable maps operator types to their implementations. Operators of the
// default ONNX domain are keyed by type ("Relu"), others by domain and type
// ("ai.onnx.preview.training.Adam"); opsets are those of the operator's
// domain.
type opTable map[string][]opVersion

// registry holds every supported operator. It is built once and never
// modified.
var registry = liftHalves(buildRegistry(elementwiseOps(), mathOps(), shapeOps(), nnOps(), reduceOps(), lossOps(), indexOps(), resizeOps(), rnnOps(),
	sortOps(), normOps(), signalOps(), einsumOps(), visionOps(), controlOps(),
	trainingOps(), sequenceOps(), optionalOps(), quantOps(), lpOps(), textOps(), randomOps(), stringOps(),
	attentionOps(), transformerOps(), recentMoreOps(), stringMoreOps(), mlOps(), stateSpaceOps(), imageOps(), flexAttentionOps()))

// buildRegistry merges the family tables; an operator in two families is a
// programming error.
func buildRegistry(families ...opTable) opTable {
	r := opTable{}
	for _, f := range families {
		for op, vs := range f {
			if _, dup := r[op]; dup {
				panic("onnx: operator " + op + " registered twice")
			}
			r[op] = vs
		}
	}
	return r
}

// lookup returns the implementation of op at the given opset, or nil.
func (r opTable) lookup(domain, op string, opset int64) *opVersion {
	for i, v := range r[qualified(domain, op)] {
		if opset >= v.since && (v.until == 0 || opset <= v.until) {
			return &r[qualified(domain, op)][i]
		}
	}
	return nil
}

// SupportedOps returns the supported operator types, sorted; operators
// outside the default domain are written "domain.Type".
func SupportedOps() []string {
	ops := make([]string, 0, len(registry))
	for op := range registry {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// node is a graph node ready to run.
type node struct {
	name, opType, domain string
	inputs, outputs      []string
	attrs                map[string]*attribute
	opset                int64
	// numIn is the number of inputs the node declares; inputs after it are
	// outer values its subgraphs capture.
	numIn       int
	baseDir     string
	maxElements int64
	// maxBytes is the session's byte budget (0: DefaultMaxBytes).
	maxBytes int64
	// chunkWork is the multiply-adds of one chunk of a long kernel
	// between two checks of ctx (0: the constant chunkWork; tests set it
	// small).
	chunkWork int64
	impl      opImpl
	stateful  bool
	// graphs holds the compiled graph attributes (If, Loop, Scan).
	graphs map[string]*plan
	// ctx is the run's context, set only on the private copy a control-flow
	// operator receives during a run.
	ctx context.Context
	// smallIn maps the index of an input the graph declares of a small
	// type (FLOAT8E4M3FN, INT4...; see smalltypes.go) to that type, which
	// its widened tensor cannot tell; nil when there is none.
	smallIn map[int]int64
}

// String names the node for error messages, with names from the model cut
// short.
func (n *node) String() string {
	if n.name != "" {
		return fmt.Sprintf("%s node %s", clipName(n.opType), short(n.name))
	}
	outs := make([]string, 0, min(len(n.outputs), 4))
	for i, o := range n.outputs {
		if i == 4 {
			outs = append(outs, fmt.Sprintf("... (%d in all)", len(n.outputs)))
			break
		}
		outs = append(outs, clipName(o))
	}
	return fmt.Sprintf("%s node (outputs [%s])", clipName(n.opType), strings.Join(outs, " "))
}

// byteLimit returns the session's byte budget.
func (n *node) byteLimit() int64 { return byteLimit(n.maxBytes) }

// source returns where the node's tensor attributes are decoded from.
func (n *node) source() dataSource {
	return dataSource{dir: n.baseDir, maxBytes: n.byteLimit(), ctx: n.ctx}
}

// arg returns input i, or nil when it is absent.
func arg(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(in) {
		return in[i]
	}
	return nil
}

// need returns input i or an error naming the node when it is absent.
func (n *node) need(in []*tensor.Tensor, i int) (*tensor.Tensor, error) {
	if t := arg(in, i); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("onnx: %v: input %d is required", n, i)
}

// needFirst returns inputs 0..k-1, all required.
func (n *node) needFirst(in []*tensor.Tensor, k int) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, k)
	for i := range out {
		t, err := n.need(in, i)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// needFloat returns input i, which must be present and of a float dtype.
func (n *node) needFloat(in []*tensor.Tensor, i int) (*tensor.Tensor, error) {
	x, err := n.need(in, i)
	if err != nil {
		return nil, err
	}
	return x, n.wantFloat(x, i)
}

// wantFloat checks that input i, x, has a float dtype.
func (n *node) wantFloat(x *tensor.Tensor, i int) error {
	if !x.DType().IsFloat() {
		return fmt.Errorf("onnx: %v: input %d has dtype %s, not a float type", n, i, x.DType())
	}
	return nil
}

// dtypeAttr reads a tensor-type attribute (an ONNX element type number), or
// returns def when it is unset.
func (n *node) dtypeAttr(name string, def tensor.DType) (tensor.DType, error) {
	if !n.has(name) {
		return def, nil
	}
	dt, err := dtypeFromONNX(n.attrInt(name, 0))
	if err != nil {
		return 0, fmt.Errorf("%v: %w", n, err)
	}
	return dt, nil
}

// has reports whether attribute name is set.
func (n *node) has(name string) bool { _, ok := n.attrs[name]; return ok }

// attrInt returns integer attribute name or def.
func (n *node) attrInt(name string, def int64) int64 {
	if a, ok := n.attrs[name]; ok {
		return a.i
	}
	return def
}

// attrFloat returns float attribute name or def.
func (n *node) attrFloat(name string, def float64) float64 {
	if a, ok := n.attrs[name]; ok {
		return float64(a.f)
	}
	return def
}

// attrString returns string attribute name or def.
func (n *node) attrString(name, def string) string {
	if a, ok := n.attrs[name]; ok {
		return string(a.s)
	}
	return def
}

// attrInts returns integer-list attribute name, or nil when unset.
func (n *node) attrInts(name string) []int64 {
	if a, ok := n.attrs[name]; ok {
		return a.ints
	}
	return nil
}

// attrFloats returns float-list attribute name, or nil when unset.
func (n *node) attrFloats(name string) []float32 {
	if a, ok := n.attrs[name]; ok {
		return a.floats
	}
	return nil
}

// attrTensor decodes tensor attribute name (nil, nil when unset).
func (n *node) attrTensor(name string) (*tensor.Tensor, error) {
	a, ok := n.attrs[name]
	if !ok || a.t == nil {
		return nil, nil
	}
	return a.t.toTensor(n.source())
}

// ints returns the values of an integer tensor input (shape, axes...) as
// ints.
func ints(t *tensor.Tensor) []int {
	v := t.Int64s()
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// toInts converts int64 attribute values to ints.
func toInts(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// normAxis maps a possibly negative axis into [0, rank), or returns an error.
func (n *node) normAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= max(rank, 1) {
		return 0, fmt.Errorf("onnx: %v: axis %d out of range for rank %d", n, axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// one wraps a single output.
func one(t *tensor.Tensor) ([]*tensor.Tensor, error) { return []*tensor.Tensor{t}, nil }

// maxRank bounds the rank of tensors a model can make from values.
const maxRank = 64

// checkShape refuses an output of shape and dtype dt with negative
// dimensions, more than maxRank axes, more than the session's element
// limit or more bytes than its byte budget, before it is allocated.
func (n *node) checkShape(shape []int, dt tensor.DType) error {
	if len(shape) > maxRank {
		return fmt.Errorf("onnx: %v: shape of rank %d exceeds %d", n, len(shape), maxRank)
	}
	total := int64(1)
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("onnx: %v: negative dimension in shape %v", n, shape)
		}
		if d != 0 && total > n.maxElements/int64(d) {
			return fmt.Errorf("onnx: %v: shape %v has more than %d elements", n, shape, n.maxElements)
		}
		total *= int64(d)
	}
	if need := total * int64(dt.Size()); need > n.byteLimit() {
		return fmt.Errorf("onnx: %v: an output of shape %v and type %s needs %d bytes, more than the limit of %d bytes (SessionOptions.MaxBytes)", n, shape, dt, need, n.byteLimit())
	}
	return nil
}

// stringList returns a strings attribute's values (nil for a nil attribute).
func (a *attribute) stringList() []string {
	if a == nil {
		return nil
	}
	out := make([]string, len(a.strings))
	for i, s := range a.strings {
		out[i] = string(s)
	}
	return out
}

// checkBroadcast refuses operands whose broadcast result would exceed the
// element limit or the byte budget (e.g. [65536, 1] + [1, 65536]) before
// anything is allocated; incompatible shapes are left for the op to report.
// The result is taken to have the widest dtype of the operands.
func (n *node) checkBroadcast(ts ...*tensor.Tensor) error {
	shapes := make([][]int, 0, len(ts))
	dt := tensor.Bool
	for _, t := range ts {
		if t != nil {
			shapes = append(shapes, t.Shape())
			if t.DType().Size() > dt.Size() {
				dt = t.DType()
			}
		}
	}
	return n.checkShapes(dt, shapes...)
}

// checkShapes checks the broadcast of shapes, of dtype dt, against the
// element limit and the byte budget.
func (n *node) checkShapes(dt tensor.DType, shapes ...[]int) error {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for _, s := range shapes {
		for i, d := range s {
			j := r - len(s) + i
			out[j] = max(out[j], d)
		}
	}
	return n.checkShape(out, dt)
}
