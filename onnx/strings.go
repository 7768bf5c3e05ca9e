package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Strings is an ONNX STRING tensor as RunValues takes and returns it. Data
// holds the elements in row-major order and has as many elements as Shape
// describes (a scalar has an empty Shape and one element). Ember's tensor
// package has no string dtype, so string tensors exist only here, between
// a model's inputs, its string operators and its outputs.
type Strings struct {
	Shape []int
	Data  []string
}

// check reports a Strings whose data does not fill its shape.
func (s Strings) check() error {
	n := 1
	for _, d := range s.Shape {
		if d < 0 {
			return fmt.Errorf("onnx: string tensor has a negative dimension in shape %v", s.Shape)
		}
		if d != 0 && n > maxElements/d {
			return fmt.Errorf("onnx: string tensor shape %v has more than %d elements", s.Shape, maxElements)
		}
		n *= d
	}
	if n != len(s.Data) {
		return fmt.Errorf("onnx: string tensor of shape %v holds %d strings, want %d", s.Shape, len(s.Data), n)
	}
	return nil
}

// String representation inside a run.
//
// A string tensor flows through the graph as a marker: an Int64 tensor of
// the string tensor's shape whose elements index a pool of strings. The
// pool of a marker is found in the model's strTable (string initializers)
// or in the run's seqStore (everything made during a run). Operators that
// only move elements (Reshape, Gather, Concat, ...) run their numeric
// implementation on the marker and the result indexes the same pool, so
// they keep one definition for numbers and strings; Shape and Size read the
// marker's shape as it is. Which values are strings is decided at load
// (typeStrings); string nodes are stateful, so never folded, and every
// other operator refuses string inputs there.

// strTable maps the markers of constant string tensors to their pools. It
// is filled while a model is parsed and only read afterwards.
type strTable map[*tensor.Tensor][]string

// newMarker returns the marker of s, whose pool is s.Data itself.
func newMarker(s Strings) *tensor.Tensor {
	idx := make([]int64, len(s.Data))
	for i := range idx {
		idx[i] = int64(i)
	}
	return tensor.FromSlice(idx, slices.Clone(s.Shape)...)
}

// addStrings registers marker as a string tensor indexing pool.
func (s *seqStore) addStrings(marker *tensor.Tensor, pool []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.strs == nil {
		s.strs = strTable{}
	}
	s.strs[marker] = pool
}

// stringPool returns the pool of a marker made during the run.
func (s *seqStore) stringPool(t *tensor.Tensor) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.strs[t]
	return p, ok
}

// strEnv is what a string operator sees of a run: the run's store and the
// model's constant strings.
type strEnv struct {
	store  *seqStore
	consts strTable
}

// pool returns the pool of t if t is a string marker.
func (e strEnv) pool(t *tensor.Tensor) ([]string, bool) {
	if t == nil {
		return nil, false
	}
	if e.store != nil {
		if p, ok := e.store.stringPool(t); ok {
			return p, true
		}
	}
	p, ok := e.consts[t]
	return p, ok
}

// value returns the string tensor marker t stands for.
func (e strEnv) value(t *tensor.Tensor) (Strings, bool) {
	pool, ok := e.pool(t)
	if !ok {
		return Strings{}, false
	}
	idx := t.Int64s()
	data := make([]string, len(idx))
	for i, k := range idx {
		data[i] = pool[k]
	}
	return Strings{Shape: t.Shape(), Data: data}, true
}

// put registers s in the run and returns its marker.
func (e strEnv) put(s Strings) *tensor.Tensor {
	m := newMarker(s)
	e.store.addStrings(m, s.Data)
	return m
}

// strImpl is a string operator: opImpl with the run's strings at hand.
type strImpl func(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// withStrings makes an opImpl of f that sees the constant strings consts.
// The node must be stateful, so that it runs with the run's store.
func withStrings(consts strTable, f strImpl) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		s, err := n.store()
		if err != nil {
			return nil, err
		}
		e := strEnv{store: s, consts: consts}
		for i, t := range in {
			if pool, ok := e.pool(t); ok {
				if err := n.checkStrings(i, pool, t); err != nil {
					return nil, err
				}
			}
		}
		return f(n, e, in)
	}
}

// carryStrings runs the numeric implementation orig of an operator that
// moves or compares elements on the markers of its string inputs. With
// more than one string input, the pools are merged with each distinct
// string once, so equal strings have equal indices (what Equal compares).
// When strOut, every output is a marker indexing the merged pool.
func carryStrings(orig opImpl, strOut bool) strImpl {
	return func(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		args := slices.Clone(in)
		var pools [][]string
		var at []int
		for i, t := range in {
			if p, ok := e.pool(t); ok {
				pools = append(pools, p)
				at = append(at, i)
			}
		}
		var pool []string
		switch len(at) {
		case 0:
		case 1:
			pool = pools[0]
		default:
			ids := map[string]int64{}
			for k, i := range at {
				idx := in[i].Int64s()
				for j, x := range idx {
					s := pools[k][x]
					id, ok := ids[s]
					if !ok {
						id = int64(len(pool))
						ids[s] = id
						pool = append(pool, s)
					}
					idx[j] = id
				}
				args[i] = tensor.FromSlice(idx, in[i].Shape()...)
			}
		}
		outs, err := orig(n, args)
		if err != nil || !strOut {
			return outs, err
		}
		for _, o := range outs {
			if o != nil {
				e.store.addStrings(o, pool)
			}
		}
		return outs, nil
	}
}

// stringCarriers lists the operators that carry string tensors through a
// graph by running on markers, with the input positions that may be
// strings (-1: any) and whether their outputs are strings.
var stringCarriers = map[string]struct {
	inputs []int
	strOut bool
}{
	"Identity":  {[]int{0}, true},
	"Reshape":   {[]int{0}, true},
	"Flatten":   {[]int{0}, true},
	"Squeeze":   {[]int{0}, true},
	"Unsqueeze": {[]int{0}, true},
	"Transpose": {[]int{0}, true},
	"Slice":     {[]int{0}, true},
	"Gather":    {[]int{0}, true},
	"Concat":    {[]int{-1}, true},
	"Equal":     {[]int{0, 1}, false},
}

// typeStrings finds the string values of a graph whose nodes are in run
// order, from its string inputs and initializers through the string
// operators, and gives each node that reads or makes strings its string
// implementation. A node that cannot take a string input fails the load
// with an error naming it. Strings inside subgraphs (depth > 0) are
// refused: control-flow operators do not carry them.
func (c *compiler) typeStrings(g *graphProto, order []*node, consts map[string]*tensor.Tensor, depth int) error {
	isStr := map[string]bool{}
	for _, in := range g.inputs {
		if in.kind == "tensor" && in.elemType == dtString {
			isStr[in.name] = true
		}
	}
	for name, t := range consts {
		if _, ok := c.m.strs[t]; ok {
			isStr[name] = true
		}
	}
	for _, n := range order {
		var strIn []int
		for i, name := range n.inputs {
			if name != "" && isStr[name] {
				strIn = append(strIn, i)
			}
		}
		out, err := c.stringNode(n, strIn)
		if err != nil {
			return err
		}
		if out {
			for i, o := range n.outputs {
				if o != "" && !(n.opType == "StringSplit" && i == 1) {
					isStr[o] = true
				}
			}
		}
	}
	if depth > 0 && len(isStr) > 0 {
		return fmt.Errorf("onnx: string tensors inside If, Loop or Scan bodies are not supported")
	}
	return nil
}

// stringNode sets the string implementation of n, whose inputs at
// positions strIn are strings, and reports whether its outputs are.
func (c *compiler) stringNode(n *node, strIn []int) (bool, error) {
	use := func(f strImpl) {
		n.impl, n.stateful = withStrings(c.m.strs, f), true
	}
	if n.domain == "ai.onnx.ml" && n.opType == "LabelEncoder" {
		use(opLabelEncoder)
		return n.labelEncoderStrings(), nil
	}
	if n.domain == "" {
		switch n.opType {
		case "Constant":
			s, ok, err := n.constStrings()
			if err != nil || !ok {
				return false, err
			}
			use(func(_ *node, e strEnv, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
				return one(e.put(s))
			})
			return true, nil
		case "Cast":
			to := n.attrInt("to", 0)
			if to != dtString && len(strIn) == 0 {
				return false, nil
			}
			use(opCastStrings)
			return to == dtString, nil
		case "CastLike":
			if len(strIn) == 0 {
				return false, nil
			}
			use(opCastStrings)
			return slices.Contains(strIn, 1), nil
		case "StringNormalizer":
			use(opStringNormalizer)
			return true, nil
		case "StringConcat":
			use(opStringConcat)
			return true, nil
		case "StringSplit":
			use(opStringSplit)
			return true, nil // its second output, the counts, is not (typeStrings)
		case "RegexFullMatch":
			use(opRegexFullMatch)
			return false, nil
		case "TfIdfVectorizer":
			if len(strIn) > 0 {
				use(opTfIdfStrings)
			}
			return false, nil
		case "Shape", "Size":
			return false, nil // the marker has the string tensor's shape
		}
		if cr, ok := stringCarriers[n.opType]; ok && len(strIn) > 0 {
			for _, i := range strIn {
				if cr.inputs[0] >= 0 && !slices.Contains(cr.inputs, i) {
					return false, fmt.Errorf("onnx: %v: input %d (%q) is a string tensor, which this input cannot be", n, i, n.inputs[i])
				}
			}
			if n.opType == "Equal" && len(strIn) != 2 {
				return false, fmt.Errorf("onnx: %v compares a string tensor with a number tensor", n)
			}
			use(carryStrings(n.impl, cr.strOut))
			return cr.strOut, nil
		}
	}
	if len(strIn) > 0 {
		return false, fmt.Errorf("onnx: %v does not take string tensors (input %q is one); string tensors go through Cast, CastLike, StringNormalizer, TfIdfVectorizer, Shape, Size and %s", n, n.inputs[strIn[0]], carrierNames())
	}
	return false, nil
}

// carrierNames lists the operators of stringCarriers for error messages.
func carrierNames() string {
	names := make([]string, 0, len(stringCarriers))
	for op := range stringCarriers {
		names = append(names, op)
	}
	slices.Sort(names)
	s := ""
	for i, op := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			s += " and "
		default:
			s += ", "
		}
		s += op
	}
	return s
}

// constStrings decodes the string value of a Constant node: a STRING
// tensor in value, value_string or value_strings. ok is false for a
// numeric constant.
func (n *node) constStrings() (s Strings, ok bool, err error) {
	if a := n.attrs["value"]; a != nil && a.t != nil && a.t.dataType == dtString {
		s, err = a.t.toStrings()
		return s, err == nil, err
	}
	if a := n.attrs["value_string"]; a != nil {
		return Strings{Shape: []int{}, Data: []string{string(a.s)}}, true, nil
	}
	if a := n.attrs["value_strings"]; a != nil {
		d := a.stringList()
		return Strings{Shape: []int{len(d)}, Data: d}, true, nil
	}
	return Strings{}, false, nil
}

// toStrings converts a STRING TensorProto (string_data, one bytes value
// per element; ONNX strings are UTF-8 but any bytes are kept as they are).
func (tp *tensorProto) toStrings() (Strings, error) {
	if tp.dataType != dtString {
		return Strings{}, fmt.Errorf("onnx: tensor %q has type %s, not STRING", tp.name, typeName(tp.dataType))
	}
	if tp.rawData != nil || tp.dataLocation == 1 {
		return Strings{}, fmt.Errorf("onnx: STRING tensor %q stores its data raw or externally; ONNX keeps strings in string_data", tp.name)
	}
	n, err := numelOf(tp.dims)
	if err != nil {
		return Strings{}, fmt.Errorf("tensor %q: %w", tp.name, err)
	}
	if len(tp.stringData) != n {
		return Strings{}, fmt.Errorf("onnx: tensor %q of shape %v holds %d strings, want %d", tp.name, tp.dims, len(tp.stringData), n)
	}
	s := Strings{Shape: make([]int, len(tp.dims)), Data: make([]string, n)}
	for i, d := range tp.dims {
		s.Shape[i] = int(d)
	}
	for i, b := range tp.stringData {
		s.Data[i] = string(b)
	}
	return s, nil
}

// initializer decodes an initializer: a tensor, or for a STRING tensor a
// marker registered in the model's strTable.
func (m *Model) initializer(tp *tensorProto, src dataSource) (*tensor.Tensor, error) {
	if tp.dataType != dtString {
		return tp.toTensor(src)
	}
	s, err := tp.toStrings()
	if err != nil {
		return nil, err
	}
	if err := src.checkBytes(fmt.Sprintf("STRING tensor %s", short(tp.name)), stringsBytes(s.Data)); err != nil {
		return nil, err
	}
	t := newMarker(s)
	if m.strs == nil {
		m.strs = strTable{}
	}
	m.strs[t] = s.Data
	return t, nil
}

// InitializerStrings returns the STRING initializer called name, and false
// when there is none (Initializer returns only numeric ones).
func (m *Model) InitializerStrings(name string) (Strings, bool) {
	t, ok := m.initializers[name]
	if !ok {
		return Strings{}, false
	}
	return strEnv{consts: m.strs}.value(t)
}

// stringValue returns the string tensor a run's output t stands for.
func (s *Session) stringValue(store *seqStore, t *tensor.Tensor) (Strings, bool) {
	return strEnv{store: store, consts: s.model.strs}.value(t)
}

// stringsBytes returns what a string tensor's data takes: its bytes and one
// string header per element.
func stringsBytes(data []string) int64 {
	total := int64(len(data)) * 16
	for _, s := range data {
		total += int64(len(s))
	}
	return total
}

// checkStrings refuses a string input of n whose strings would take more
// than the session's byte budget once an operator copies them (a short
// pool indexed many times, as a Gather of one long string makes).
func (n *node) checkStrings(i int, pool []string, marker *tensor.Tensor) error {
	idx := marker.Int64s()
	total := int64(len(idx)) * 16
	limit := n.byteLimit()
	for _, k := range idx {
		if k >= 0 && int(k) < len(pool) {
			total += int64(len(pool[k]))
		}
		if total > limit {
			break
		}
	}
	if total > limit {
		return fmt.Errorf("onnx: %v: string input %d holds %d strings of more than %d bytes in all, above the limit of %d bytes (SessionOptions.MaxBytes)", n, i, len(idx), total, limit)
	}
	return nil
}
