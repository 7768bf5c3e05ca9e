package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Helpers that encode ONNX messages by field number, for tests.

func pbBytes(b []byte, num protowire.Number, p []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

func pbString(b []byte, num protowire.Number, s string) []byte { return pbBytes(b, num, []byte(s)) }

func pbVarint(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// mkTensor encodes a TensorProto with raw data.
func mkTensor(name string, dt int64, dims []int64, raw []byte) []byte {
	var b []byte
	for _, d := range dims {
		b = pbVarint(b, 1, d)
	}
	b = pbVarint(b, 2, dt)
	b = pbString(b, 8, name)
	return pbBytes(b, 9, raw)
}

// mkFloatTensor encodes a FLOAT tensor from values.
func mkFloatTensor(name string, dims []int64, v ...float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return mkTensor(name, dtFloat, dims, raw)
}

// mkInt64Tensor encodes an INT64 tensor in int64_data.
func mkInt64Tensor(name string, dims []int64, v ...int64) []byte {
	var b []byte
	for _, d := range dims {
		b = pbVarint(b, 1, d)
	}
	b = pbVarint(b, 2, dtInt64)
	b = pbString(b, 8, name)
	var packed []byte
	for _, x := range v {
		packed = protowire.AppendVarint(packed, uint64(x))
	}
	return pbBytes(b, 7, packed)
}

func mkAttrInt(name string, v int64) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrInt)
	return pbVarint(b, 3, v)
}

func mkAttrString(name, v string) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrString)
	return pbString(b, 4, v)
}

func mkAttrFloats(name string, v ...float32) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrFloats)
	for _, x := range v {
		b = protowireFixed32(b, 7, x)
	}
	return b
}

func mkAttrStrings(name string, v ...string) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrStrings)
	for _, x := range v {
		b = pbString(b, 9, x)
	}
	return b
}

func mkAttrInts(name string, v ...int64) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrInts)
	for _, x := range v {
		b = pbVarint(b, 8, x)
	}
	return b
}

func mkAttrTensor(name string, t []byte) []byte {
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrTensor)
	return pbBytes(b, 5, t)
}

func mkNode(op string, in, out []string, attrs ...[]byte) []byte {
	var b []byte
	for _, s := range in {
		b = pbString(b, 1, s)
	}
	for _, s := range out {
		b = pbString(b, 2, s)
	}
	b = pbString(b, 4, op)
	for _, a := range attrs {
		b = pbBytes(b, 5, a)
	}
	return b
}

// mkDomainNode is mkNode in another operator domain.
func mkDomainNode(domain, op string, in, out []string) []byte {
	return pbString(mkNode(op, in, out), 7, domain)
}

// mkValueInfo encodes a tensor ValueInfoProto; a negative dim is symbolic.
func mkValueInfo(name string, elem int64, dims ...int64) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		if d < 0 {
			dim = pbString(nil, 2, "N")
		} else {
			dim = pbVarint(nil, 1, d)
		}
		shape = pbBytes(shape, 1, dim)
	}
	tt := pbVarint(nil, 1, elem)
	tt = pbBytes(tt, 2, shape)
	typ := pbBytes(nil, 1, tt)
	b := pbString(nil, 1, name)
	return pbBytes(b, 2, typ)
}

// graphParts lists a graph's encoded pieces.
type graphParts struct {
	nodes, inits, inputs, outputs [][]byte
}

func mkModel(opset int64, g graphParts) []byte {
	var gb []byte
	for _, n := range g.nodes {
		gb = pbBytes(gb, 1, n)
	}
	gb = pbString(gb, 2, "test")
	for _, t := range g.inits {
		gb = pbBytes(gb, 5, t)
	}
	for _, v := range g.inputs {
		gb = pbBytes(gb, 11, v)
	}
	for _, v := range g.outputs {
		gb = pbBytes(gb, 12, v)
	}
	b := pbVarint(nil, 1, 8)
	b = pbString(b, 2, "ember-test")
	b = pbBytes(b, 7, gb)
	ops := pbString(nil, 1, "")
	ops = pbVarint(ops, 2, opset)
	return pbBytes(b, 8, ops)
}

// mlpModel is y = Relu(x @ W + b) with x [N, 3] float, W [3, 2], b [2].
func mlpModel() []byte {
	return mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("MatMul", []string{"x", "W"}, []string{"xw"}),
			mkNode("Add", []string{"xw", "b"}, []string{"z"}),
			mkNode("Relu", []string{"z"}, []string{"y"}),
		},
		inits: [][]byte{
			mkFloatTensor("W", []int64{3, 2}, 1, -1, 2, 0.5, -3, 1),
			mkFloatTensor("b", []int64{2}, 0.5, -4),
		},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, -1, 3)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, -1, 2)},
	})
}

func mkAttrGraph(name string, g graphParts) []byte {
	var gb []byte
	for _, n := range g.nodes {
		gb = pbBytes(gb, 1, n)
	}
	gb = pbString(gb, 2, name)
	for _, t := range g.inits {
		gb = pbBytes(gb, 5, t)
	}
	for _, v := range g.inputs {
		gb = pbBytes(gb, 11, v)
	}
	for _, v := range g.outputs {
		gb = pbBytes(gb, 12, v)
	}
	b := pbString(nil, 1, name)
	b = pbVarint(b, 20, attrGraph)
	return pbBytes(b, 6, gb)
}

func protowireFixed32(b []byte, num protowire.Number, v float32) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(v))
}

// mkValueInfoAnyShape encodes a tensor ValueInfoProto with no shape.
func mkValueInfoAnyShape(name string, elem int64) []byte {
	tt := pbVarint(nil, 1, elem)
	typ := pbBytes(nil, 1, tt)
	b := pbString(nil, 1, name)
	return pbBytes(b, 2, typ)
}
