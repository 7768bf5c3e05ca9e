package onnx

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/emberml/ember/tensor"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file encodes the ONNX messages that Export writes (ModelProto and
// what it contains) with protowire, by the field numbers of the ONNX
// specification (onnx.proto3), the same numbers proto.go decodes.

// exGraph is the graph Export builds before encoding.
type exGraph struct {
	name    string
	nodes   []*exNode
	inits   []exInit
	inputs  []exValue
	outputs []exValue
	// domains are the opset imports besides the default domain's: domain →
	// version (custom ops' nodes).
	domains map[string]int
}

// exNode is one NodeProto.
type exNode struct {
	op, name        string
	domain          string // empty for the default domain
	inputs, outputs []string
	attrs           []exAttr
}

// exAttr is one AttributeProto of kind attrInt, attrFloat, attrString,
// attrInts, attrFloats or attrStrings.
type exAttr struct {
	name   string
	kind   int
	i      int64
	f      float32
	s      string
	ints   []int64
	floats []float32
	strs   []string
}

// exInit is an initializer: a named tensor.
type exInit struct {
	name string
	t    *tensor.Tensor
}

// exValue is a graph input or output (ValueInfoProto with a tensor type).
type exValue struct {
	name string
	elem int64
	dims []Dim
}

func attrI(name string, v int) exAttr { return exAttr{name: name, kind: attrInt, i: int64(v)} }
func attrF(name string, v float64) exAttr {
	return exAttr{name: name, kind: attrFloat, f: float32(v)}
}
func attrS(name, v string) exAttr { return exAttr{name: name, kind: attrString, s: v} }
func attrSs(name string, v ...string) exAttr {
	return exAttr{name: name, kind: attrStrings, strs: v}
}
func attrIs(name string, v []int) exAttr {
	a := exAttr{name: name, kind: attrInts, ints: make([]int64, len(v))}
	for i, x := range v {
		a.ints[i] = int64(x)
	}
	return a
}

func appendBytesField(b []byte, num protowire.Number, p []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarintField(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// irVersionFor returns the IR version ONNX released with an opset.
func irVersionFor(opset int) int64 {
	switch {
	case opset <= 14:
		return 7
	case opset <= 18:
		return 8
	case opset <= 20:
		return 9
	}
	return 10
}

// encodeModel encodes g as a ModelProto importing the default domain at
// opset.
// With ext, the initializers' data is appended to ext.buf and referenced by
// external-data entries.
func encodeModel(g *exGraph, opset int, producer, producerVersion string, ext *externalData) ([]byte, error) {
	graph, err := encodeGraph(g, ext)
	if err != nil {
		return nil, err
	}
	var b []byte
	b = appendVarintField(b, 1, irVersionFor(opset)) // ir_version
	b = appendStringField(b, 2, producer)            // producer_name
	b = appendStringField(b, 3, producerVersion)     // producer_version
	b = appendBytesField(b, 7, graph)                // graph
	var os []byte
	os = appendStringField(os, 1, "")           // domain
	os = appendVarintField(os, 2, int64(opset)) // version
	b = appendBytesField(b, 8, os)              // opset_import
	for _, d := range slices.Sorted(maps.Keys(g.domains)) {
		var imp []byte
		imp = appendStringField(imp, 1, d)
		imp = appendVarintField(imp, 2, int64(g.domains[d]))
		b = appendBytesField(b, 8, imp)
	}
	return b, nil
}

func encodeGraph(g *exGraph, ext *externalData) ([]byte, error) {
	var b []byte
	for _, n := range g.nodes {
		b = appendBytesField(b, 1, encodeNode(n)) // node
	}
	b = appendStringField(b, 2, g.name) // name
	for _, in := range g.inits {
		t, err := encodeTensor(in.name, in.t)
		if err == nil && ext != nil {
			t, err = ext.move(in.name, in.t)
		}
		if err != nil {
			return nil, err
		}
		b = appendBytesField(b, 5, t) // initializer
	}
	for _, v := range g.inputs {
		b = appendBytesField(b, 11, encodeValueInfo(v)) // input
	}
	for _, v := range g.outputs {
		b = appendBytesField(b, 12, encodeValueInfo(v)) // output
	}
	return b, nil
}

func encodeNode(n *exNode) []byte {
	var b []byte
	for _, s := range n.inputs {
		b = appendStringField(b, 1, s)
	}
	for _, s := range n.outputs {
		b = appendStringField(b, 2, s)
	}
	b = appendStringField(b, 3, n.name)
	b = appendStringField(b, 4, n.op)
	for _, a := range n.attrs {
		b = appendBytesField(b, 5, encodeAttr(a))
	}
	if n.domain != "" {
		b = appendStringField(b, 7, n.domain)
	}
	return b
}

func encodeAttr(a exAttr) []byte {
	b := appendStringField(nil, 1, a.name)
	switch a.kind {
	case attrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case attrInt:
		b = appendVarintField(b, 3, a.i)
	case attrString:
		b = appendStringField(b, 4, a.s)
	case attrFloats:
		for _, f := range a.floats {
			b = protowire.AppendTag(b, 7, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(f))
		}
	case attrInts:
		for _, v := range a.ints {
			b = appendVarintField(b, 8, v)
		}
	case attrStrings:
		for _, s := range a.strs {
			b = appendStringField(b, 9, s)
		}
	}
	return appendVarintField(b, 20, int64(a.kind)) // type
}

// encodeTensor encodes t as a TensorProto with raw little-endian data.
func encodeTensor(name string, t *tensor.Tensor) ([]byte, error) {
	raw, err := rawData(name, t)
	if err != nil {
		return nil, err
	}
	return appendBytesField(tensorHeader(name, t), 9, raw), nil // raw_data
}

// tensorHeader encodes a TensorProto's dims, data_type and name.
func tensorHeader(name string, t *tensor.Tensor) []byte {
	var b []byte
	for _, d := range t.Shape() {
		b = appendVarintField(b, 1, int64(d)) // dims
	}
	b = appendVarintField(b, 2, dtypeToONNX(t.DType())) // data_type
	return appendStringField(b, 8, name)                // name
}

// rawData returns t's elements as little-endian bytes.
func rawData(name string, t *tensor.Tensor) ([]byte, error) {
	switch t.DType() {
	case tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Int16, tensor.Uint16,
		tensor.Uint32, tensor.Uint64, tensor.Int8, tensor.Uint8, tensor.Bool:
		return t.LittleEndianBytes(), nil
	}
	return nil, fmt.Errorf("onnx.Export: initializer %q has dtype %s, which the exporter does not write", name, t.DType())
}

// externalData collects initializer data written beside the model.
type externalData struct {
	location string // file name relative to the model's folder
	buf      []byte
}

// move encodes t as a TensorProto whose data lies in the external file at
// the next offset (aligned to 64 bytes), with location, offset and length
// entries and data_location EXTERNAL, per ONNX's external-data format.
func (x *externalData) move(name string, t *tensor.Tensor) ([]byte, error) {
	raw, err := rawData(name, t)
	if err != nil {
		return nil, err
	}
	for len(x.buf)%64 != 0 {
		x.buf = append(x.buf, 0)
	}
	off := len(x.buf)
	x.buf = append(x.buf, raw...)
	b := tensorHeader(name, t)
	entry := func(k, v string) {
		e := appendStringField(appendStringField(nil, 1, k), 2, v)
		b = appendBytesField(b, 13, e) // external_data
	}
	entry("location", x.location)
	entry("offset", strconv.Itoa(off))
	entry("length", strconv.Itoa(len(raw)))
	return appendVarintField(b, 14, 1), nil // data_location: EXTERNAL
}

func encodeValueInfo(v exValue) []byte {
	var shape []byte
	for _, d := range v.dims {
		var db []byte
		if d.Param != "" {
			db = appendStringField(db, 2, d.Param) // dim_param
		} else {
			db = appendVarintField(db, 1, d.Value) // dim_value
		}
		shape = appendBytesField(shape, 1, db) // dim
	}
	var tt []byte
	tt = appendVarintField(tt, 1, v.elem) // elem_type
	tt = appendBytesField(tt, 2, shape)   // shape
	typ := appendBytesField(nil, 1, tt)   // tensor_type
	b := appendStringField(nil, 1, v.name)
	return appendBytesField(b, 2, typ)
}
