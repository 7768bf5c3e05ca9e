package onnx

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file decodes the ONNX protobuf messages with protowire, by the field
// numbers of the ONNX specification (onnx.proto3). Unknown fields are
// skipped; malformed or truncated bytes give an error.

// maxDepth bounds the nesting of subgraphs (attributes holding graphs) so a
// hostile model cannot exhaust the stack.
const maxDepth = 64

// errTruncated is returned for bytes that end inside a field.
var errTruncated = errors.New("onnx: truncated or malformed protobuf")

// modelProto is ModelProto.
type modelProto struct {
	irVersion     int64
	opsets        []opsetID
	producerName  string
	producerVer   string
	domain        string
	modelVersion  int64
	docString     string
	graph         *graphProto
	metadataProps map[string]string
}

// opsetID is OperatorSetIdProto.
type opsetID struct {
	domain  string
	version int64
}

// graphProto is GraphProto.
type graphProto struct {
	name         string
	nodes        []*nodeProto
	initializers []*tensorProto
	sparseInits  []*sparseTensorProto
	inputs       []*valueInfo
	outputs      []*valueInfo
	valueInfo    []*valueInfo
}

// nodeProto is NodeProto.
type nodeProto struct {
	inputs, outputs []string
	name            string
	opType          string
	domain          string
	attrs           []*attribute
}

// Attribute types (AttributeProto.AttributeType).
const (
	attrUndefined    = 0
	attrFloat        = 1
	attrInt          = 2
	attrString       = 3
	attrTensor       = 4
	attrGraph        = 5
	attrFloats       = 6
	attrInts         = 7
	attrStrings      = 8
	attrTensors      = 9
	attrGraphs       = 10
	attrSparseTensor = 11
	attrSparseTensrs = 12
	attrTypeProto    = 13
	attrTypeProtos   = 14
)

// attribute is AttributeProto.
type attribute struct {
	name    string
	refName string
	typ     int64
	f       float32
	i       int64
	s       []byte
	t       *tensorProto
	g       *graphProto
	floats  []float32
	ints    []int64
	strings [][]byte
	tensors []*tensorProto
	graphs  []*graphProto
	sparse  *sparseTensorProto
	sparses []*sparseTensorProto
	tp      *valueInfo
	tps     []*valueInfo
}

// sparseTensorProto is SparseTensorProto: values and their indices, either
// linear ([NNZ]) or coordinates ([NNZ, rank]), into a dense shape dims.
type sparseTensorProto struct {
	values, indices *tensorProto
	dims            []int64
}

// tensorProto is TensorProto (the data fields kept raw until conversion).
type tensorProto struct {
	dims         []int64
	dataType     int64
	name         string
	rawData      []byte
	floatData    []float32
	int32Data    []int32
	int64Data    []int64
	doubleData   []float64
	uint64Data   []uint64
	stringData   [][]byte
	externalData map[string]string
	dataLocation int64
	hasSegment   bool
}

// valueInfo is ValueInfoProto with its TypeProto flattened.
type valueInfo struct {
	name string
	// kind is "tensor", "sequence", "map", "optional", "sparse_tensor" or ""
	// when the type is absent.
	kind     string
	elemType int64
	hasShape bool
	dims     []Dim
	// elem is the type a sequence's elements or an optional's value have.
	elem *valueInfo
}

// decoder walks the fields of one message.
type decoder struct {
	b []byte
}

// next returns the next field's number, wire type and, for the bytes wire
// type, the payload; v holds varint/fixed values.
func (d *decoder) next() (num protowire.Number, typ protowire.Type, v uint64, payload []byte, err error) {
	num, typ, n := protowire.ConsumeTag(d.b)
	if n < 0 {
		return 0, 0, 0, nil, errTruncated
	}
	d.b = d.b[n:]
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(d.b)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(d.b)
		v = uint64(x)
	case protowire.Fixed64Type:
		v, n = protowire.ConsumeFixed64(d.b)
	case protowire.BytesType:
		payload, n = protowire.ConsumeBytes(d.b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, d.b)
	}
	if n < 0 {
		return 0, 0, 0, nil, errTruncated
	}
	d.b = d.b[n:]
	return num, typ, v, payload, nil
}

// wantType checks the wire type of field num of message msg.
func wantType(msg string, num protowire.Number, got, want protowire.Type) error {
	if got != want {
		return fmt.Errorf("onnx: %s field %d has wire type %d, want %d", msg, num, got, want)
	}
	return nil
}

// varints appends the varint values of a repeated field (packed or not).
func varints(dst []int64, typ protowire.Type, v uint64, payload []byte) ([]int64, error) {
	switch typ {
	case protowire.VarintType:
		return append(dst, int64(v)), nil
	case protowire.BytesType:
		for len(payload) > 0 {
			x, n := protowire.ConsumeVarint(payload)
			if n < 0 {
				return nil, errTruncated
			}
			dst = append(dst, int64(x))
			payload = payload[n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("onnx: repeated integer field has wire type %d", typ)
}

// fixed32s appends the float values of a repeated float field.
func fixed32s(dst []float32, typ protowire.Type, v uint64, payload []byte) ([]float32, error) {
	switch typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(v))), nil
	case protowire.BytesType:
		if len(payload)%4 != 0 {
			return nil, errTruncated
		}
		for i := 0; i < len(payload); i += 4 {
			x, _ := protowire.ConsumeFixed32(payload[i:])
			dst = append(dst, math.Float32frombits(x))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("onnx: repeated float field has wire type %d", typ)
}

// fixed64s appends the 64-bit values of a repeated double/fixed64 field.
func fixed64s(dst []uint64, typ protowire.Type, v uint64, payload []byte) ([]uint64, error) {
	switch typ {
	case protowire.Fixed64Type:
		return append(dst, v), nil
	case protowire.BytesType:
		if len(payload)%8 != 0 {
			return nil, errTruncated
		}
		for i := 0; i < len(payload); i += 8 {
			x, _ := protowire.ConsumeFixed64(payload[i:])
			dst = append(dst, x)
		}
		return dst, nil
	}
	return nil, fmt.Errorf("onnx: repeated double field has wire type %d", typ)
}

func decodeModel(b []byte) (*modelProto, error) {
	m := &modelProto{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1:
			m.irVersion = int64(v)
		case 2, 3, 4, 6:
			if err := wantType("ModelProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			switch num {
			case 2:
				m.producerName = string(p)
			case 3:
				m.producerVer = string(p)
			case 4:
				m.domain = string(p)
			case 6:
				m.docString = string(p)
			}
		case 5:
			m.modelVersion = int64(v)
		case 7:
			if err := wantType("ModelProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			g, err := decodeGraph(p, 0)
			if err != nil {
				return nil, err
			}
			m.graph = g
		case 8:
			if err := wantType("ModelProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			o, err := decodeOpset(p)
			if err != nil {
				return nil, err
			}
			m.opsets = append(m.opsets, o)
		case 14:
			if err := wantType("ModelProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			k, val, err := decodeStringPair(p)
			if err != nil {
				return nil, err
			}
			if m.metadataProps == nil {
				m.metadataProps = map[string]string{}
			}
			m.metadataProps[k] = val
		}
	}
	if m.graph == nil {
		return nil, errors.New("onnx: model has no graph")
	}
	return m, nil
}

func decodeOpset(b []byte) (opsetID, error) {
	var o opsetID
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return o, err
		}
		switch num {
		case 1:
			if err := wantType("OperatorSetIdProto", num, typ, protowire.BytesType); err != nil {
				return o, err
			}
			o.domain = string(p)
		case 2:
			o.version = int64(v)
		}
	}
	return o, nil
}

func decodeStringPair(b []byte) (key, value string, err error) {
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return "", "", err
		}
		if num != 1 && num != 2 {
			continue
		}
		if err := wantType("StringStringEntryProto", num, typ, protowire.BytesType); err != nil {
			return "", "", err
		}
		if num == 1 {
			key = string(p)
		} else {
			value = string(p)
		}
	}
	return key, value, nil
}

func decodeGraph(b []byte, depth int) (*graphProto, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("onnx: subgraphs nested deeper than %d", maxDepth)
	}
	g := &graphProto{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1, 2, 5, 11, 12, 13, 15:
		default:
			continue
		}
		if err := wantType("GraphProto", num, typ, protowire.BytesType); err != nil {
			return nil, err
		}
		if num == 15 {
			sp, err := decodeSparse(p)
			if err != nil {
				return nil, err
			}
			g.sparseInits = append(g.sparseInits, sp)
			continue
		}
		switch num {
		case 1:
			n, err := decodeNode(p, depth)
			if err != nil {
				return nil, err
			}
			g.nodes = append(g.nodes, n)
		case 2:
			g.name = string(p)
		case 5:
			t, err := decodeTensor(p)
			if err != nil {
				return nil, err
			}
			g.initializers = append(g.initializers, t)
		case 11, 12, 13:
			vi, err := decodeValueInfo(p)
			if err != nil {
				return nil, err
			}
			switch num {
			case 11:
				g.inputs = append(g.inputs, vi)
			case 12:
				g.outputs = append(g.outputs, vi)
			default:
				g.valueInfo = append(g.valueInfo, vi)
			}
		}
	}
	return g, nil
}

func decodeNode(b []byte, depth int) (*nodeProto, error) {
	n := &nodeProto{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1, 2, 3, 4, 5, 7:
		default:
			continue
		}
		if err := wantType("NodeProto", num, typ, protowire.BytesType); err != nil {
			return nil, err
		}
		switch num {
		case 1:
			n.inputs = append(n.inputs, string(p))
		case 2:
			n.outputs = append(n.outputs, string(p))
		case 3:
			n.name = string(p)
		case 4:
			n.opType = string(p)
		case 7:
			n.domain = string(p)
		case 5:
			a, err := decodeAttribute(p, depth)
			if err != nil {
				return nil, err
			}
			n.attrs = append(n.attrs, a)
		}
	}
	return n, nil
}

func decodeAttribute(b []byte, depth int) (*attribute, error) {
	a := &attribute{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1, 21, 4, 5, 6, 9, 10, 11, 14, 15, 22, 23:
			if typ != protowire.BytesType {
				return nil, wantType("AttributeProto", num, typ, protowire.BytesType)
			}
		}
		switch num {
		case 1:
			a.name = string(p)
		case 21:
			a.refName = string(p)
		case 20:
			a.typ = int64(v)
		case 2:
			if err := wantType("AttributeProto", num, typ, protowire.Fixed32Type); err != nil {
				return nil, err
			}
			a.f = math.Float32frombits(uint32(v))
		case 3:
			a.i = int64(v)
		case 4:
			a.s = p
		case 5:
			if a.t, err = decodeTensor(p); err != nil {
				return nil, err
			}
		case 6:
			if a.g, err = decodeGraph(p, depth+1); err != nil {
				return nil, err
			}
		case 7:
			if a.floats, err = fixed32s(a.floats, typ, v, p); err != nil {
				return nil, err
			}
		case 8:
			if a.ints, err = varints(a.ints, typ, v, p); err != nil {
				return nil, err
			}
		case 9:
			a.strings = append(a.strings, p)
		case 10:
			t, err := decodeTensor(p)
			if err != nil {
				return nil, err
			}
			a.tensors = append(a.tensors, t)
		case 11:
			g, err := decodeGraph(p, depth+1)
			if err != nil {
				return nil, err
			}
			a.graphs = append(a.graphs, g)
		case 22, 23:
			sp, err := decodeSparse(p)
			if err != nil {
				return nil, err
			}
			if num == 22 {
				a.sparse = sp
			} else {
				a.sparses = append(a.sparses, sp)
			}
		case 14, 15:
			vi := &valueInfo{}
			if err := decodeType(p, vi); err != nil {
				return nil, err
			}
			if num == 14 {
				a.tp = vi
			} else {
				a.tps = append(a.tps, vi)
			}
		}
	}
	if a.typ == attrUndefined {
		// IR version 1 models have no type field; infer it from what is set.
		switch {
		case a.t != nil:
			a.typ = attrTensor
		case a.g != nil:
			a.typ = attrGraph
		case a.floats != nil:
			a.typ = attrFloats
		case a.ints != nil:
			a.typ = attrInts
		case a.strings != nil:
			a.typ = attrStrings
		case a.s != nil:
			a.typ = attrString
		}
	}
	return a, nil
}

func decodeTensor(b []byte) (*tensorProto, error) {
	t := &tensorProto{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1:
			if t.dims, err = varints(t.dims, typ, v, p); err != nil {
				return nil, err
			}
		case 2:
			t.dataType = int64(v)
		case 3:
			t.hasSegment = true
		case 4:
			if t.floatData, err = fixed32s(t.floatData, typ, v, p); err != nil {
				return nil, err
			}
		case 5:
			var xs []int64
			if xs, err = varints(nil, typ, v, p); err != nil {
				return nil, err
			}
			for _, x := range xs {
				t.int32Data = append(t.int32Data, int32(x))
			}
		case 6:
			if err := wantType("TensorProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			t.stringData = append(t.stringData, p)
		case 7:
			if t.int64Data, err = varints(t.int64Data, typ, v, p); err != nil {
				return nil, err
			}
		case 8:
			if err := wantType("TensorProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			t.name = string(p)
		case 9:
			if err := wantType("TensorProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			t.rawData = p
		case 10:
			var xs []uint64
			if xs, err = fixed64s(nil, typ, v, p); err != nil {
				return nil, err
			}
			for _, x := range xs {
				t.doubleData = append(t.doubleData, math.Float64frombits(x))
			}
		case 11:
			var xs []int64
			if xs, err = varints(nil, typ, v, p); err != nil {
				return nil, err
			}
			for _, x := range xs {
				t.uint64Data = append(t.uint64Data, uint64(x))
			}
		case 13:
			if err := wantType("TensorProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			k, val, err := decodeStringPair(p)
			if err != nil {
				return nil, err
			}
			if t.externalData == nil {
				t.externalData = map[string]string{}
			}
			t.externalData[k] = val
		case 14:
			t.dataLocation = int64(v)
		}
	}
	return t, nil
}

func decodeSparse(b []byte) (*sparseTensorProto, error) {
	sp := &sparseTensorProto{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1, 2:
			if err := wantType("SparseTensorProto", num, typ, protowire.BytesType); err != nil {
				return nil, err
			}
			t, err := decodeTensor(p)
			if err != nil {
				return nil, err
			}
			if num == 1 {
				sp.values = t
			} else {
				sp.indices = t
			}
		case 3:
			if sp.dims, err = varints(sp.dims, typ, v, p); err != nil {
				return nil, err
			}
		}
	}
	if sp.values == nil || sp.indices == nil {
		return nil, errors.New("onnx: sparse tensor without values or indices")
	}
	return sp, nil
}

func decodeValueInfo(b []byte) (*valueInfo, error) {
	vi := &valueInfo{}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return nil, err
		}
		if num != 1 && num != 2 {
			continue
		}
		if err := wantType("ValueInfoProto", num, typ, protowire.BytesType); err != nil {
			return nil, err
		}
		if num == 1 {
			vi.name = string(p)
		} else if err := decodeType(p, vi); err != nil {
			return nil, err
		}
	}
	return vi, nil
}

// maxTypeDepth bounds the nesting of sequence and optional types, so a
// hostile model cannot recurse the decoder into a stack overflow.
const maxTypeDepth = 8

// decodeType reads a TypeProto into vi: tensor element type and shape, and
// for a sequence or an optional the type of what it holds (vi.elem); the
// kind only for maps and sparse tensors.
func decodeType(b []byte, vi *valueInfo) error { return decodeTypeAt(b, vi, 0) }

func decodeTypeAt(b []byte, vi *valueInfo, depth int) error {
	if depth > maxTypeDepth {
		return fmt.Errorf("onnx: TypeProto nested deeper than %d levels", maxTypeDepth)
	}
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return err
		}
		kinds := map[protowire.Number]string{1: "tensor", 4: "sequence", 5: "map", 8: "sparse_tensor", 9: "optional"}
		k, ok := kinds[num]
		if !ok {
			continue
		}
		if err := wantType("TypeProto", num, typ, protowire.BytesType); err != nil {
			return err
		}
		vi.kind = k
		switch num {
		case 1:
			if err := decodeTensorType(p, vi); err != nil {
				return err
			}
		case 4, 9:
			// TypeProto.Sequence and TypeProto.Optional hold one field,
			// elem_type (1), itself a TypeProto.
			inner := decoder{p}
			for len(inner.b) > 0 {
				num, typ, _, q, err := inner.next()
				if err != nil {
					return err
				}
				if num != 1 {
					continue
				}
				if err := wantType("TypeProto."+k, num, typ, protowire.BytesType); err != nil {
					return err
				}
				vi.elem = &valueInfo{}
				if err := decodeTypeAt(q, vi.elem, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func decodeTensorType(b []byte, vi *valueInfo) error {
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, v, p, err := d.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			vi.elemType = int64(v)
		case 2:
			if err := wantType("TypeProto.Tensor", num, typ, protowire.BytesType); err != nil {
				return err
			}
			vi.hasShape = true
			if err := decodeShape(p, vi); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeShape(b []byte, vi *valueInfo) error {
	d := decoder{b}
	for len(d.b) > 0 {
		num, typ, _, p, err := d.next()
		if err != nil {
			return err
		}
		if num != 1 {
			continue
		}
		if err := wantType("TensorShapeProto", num, typ, protowire.BytesType); err != nil {
			return err
		}
		dim := Dim{Value: -1}
		dd := decoder{p}
		for len(dd.b) > 0 {
			n2, t2, v2, p2, err := dd.next()
			if err != nil {
				return err
			}
			switch n2 {
			case 1:
				dim.Value = int64(v2)
				if dim.Value < 0 {
					return fmt.Errorf("onnx: value %s declares dimension %d of its shape as %d; a dim_value must be 0 or more", short(vi.name), len(vi.dims), dim.Value)
				}
			case 2:
				if err := wantType("Dimension", n2, t2, protowire.BytesType); err != nil {
					return err
				}
				dim.Param = string(p2)
			}
		}
		vi.dims = append(vi.dims, dim)
	}
	return nil
}
