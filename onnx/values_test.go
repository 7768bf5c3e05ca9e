package onnx

import (
	"bytes"
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// mkWrappedValueInfo encodes a ValueInfoProto of a sequence (field 4 of
// TypeProto) or an optional (field 9) of float tensors of any shape.
func mkWrappedValueInfo(name string, field int64) []byte {
	tensorType := pbBytes(nil, 1, pbVarint(nil, 1, dtFloat))
	wrapper := pbBytes(nil, 1, tensorType) // elem_type
	typ := pbBytes(nil, protowire.Number(field), wrapper)
	return pbBytes(pbString(nil, 1, name), 2, typ)
}

// seqModel: out = SequenceInsert(seq, x) at the front; n = SequenceLength
// (out); has = OptionalHasElement(opt); got = OptionalGetElement(Optional(x)).
func seqModel() []byte {
	return mkModel(18, graphParts{
		nodes: [][]byte{
			mkNode("SequenceInsert", []string{"seq", "x", "zero"}, []string{"out"}),
			mkNode("SequenceLength", []string{"out"}, []string{"n"}),
			mkNode("OptionalHasElement", []string{"opt"}, []string{"has"}),
			mkNode("Optional", []string{"x"}, []string{"wrapped"}),
		},
		inits: [][]byte{mkInt64Tensor("zero", nil, 0)},
		inputs: [][]byte{
			mkWrappedValueInfo("seq", 4), mkValueInfo("x", dtFloat, 2), mkWrappedValueInfo("opt", 9),
		},
		outputs: [][]byte{
			mkWrappedValueInfo("out", 4), mkValueInfoAnyShape("n", dtInt64),
			mkValueInfoAnyShape("has", dtBool), mkWrappedValueInfo("wrapped", 9),
		},
	})
}

func TestRunValuesSequencesAndOptionals(t *testing.T) {
	s := newSession(t, seqModel())
	require.Equal(t, "sequence", s.Inputs()[0].Kind)
	require.NotNil(t, s.Inputs()[0].Elem)
	assert.Equal(t, "FLOAT", s.Inputs()[0].Elem.ElemType)
	a := tensor.FromSlice([]float32{1, 2, 3})
	x := tensor.FromSlice([]float32{7, 8})
	for _, tc := range []struct {
		name string
		opt  Optional
		has  bool
	}{
		{"empty optional", Optional{}, false},
		{"optional tensor", Optional{Value: a}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.RunValues(context.Background(), map[string]any{
				"seq": Sequence{a}, "x": x, "opt": tc.opt,
			})
			require.NoError(t, err)
			seq, ok := out["out"].(Sequence)
			require.True(t, ok, "out is a %T", out["out"])
			require.Len(t, seq, 2)
			assert.Equal(t, []float32{7, 8}, seq[0].Float32s())
			assert.Equal(t, []float32{1, 2, 3}, seq[1].Float32s())
			assert.Equal(t, []int64{2}, out["n"].(*tensor.Tensor).Int64s())
			assert.Equal(t, []bool{tc.has}, out["has"].(*tensor.Tensor).Bools())
			w, ok := out["wrapped"].(Optional)
			require.True(t, ok)
			assert.Equal(t, []float32{7, 8}, w.Value.(*tensor.Tensor).Float32s())
		})
	}
}

func TestRunValuesRejectsBadInputs(t *testing.T) {
	s := newSession(t, seqModel())
	a := tensor.FromSlice([]float32{1})
	x := tensor.FromSlice([]float32{7, 8})
	for _, tc := range []struct {
		name   string
		inputs map[string]any
		msg    string
	}{
		{"tensor for sequence", map[string]any{"seq": a, "x": x, "opt": Optional{}}, `input "seq" is a sequence: pass an onnx.Sequence through RunValues`},
		{"sequence for optional", map[string]any{"seq": Sequence{}, "x": x, "opt": Sequence{}}, `input "opt" is a sequence, the model wants an optional`},
		{"optional of the wrong kind", map[string]any{"seq": Sequence{}, "x": x, "opt": Optional{Value: Sequence{a}}}, `input "opt" holds a sequence, the model wants an optional tensor`},
		{"element dtype", map[string]any{"seq": Sequence{tensor.FromSlice([]int64{1})}, "x": x, "opt": Optional{}}, "sequence element 0 has dtype int64, the model wants float32"},
		{"nil element", map[string]any{"seq": Sequence{nil}, "x": x, "opt": Optional{}}, "sequence element 0 is nil"},
		{"unknown type", map[string]any{"seq": []float32{1}, "x": x, "opt": Optional{}}, "RunValues takes *tensor.Tensor, onnx.Strings, onnx.Sequence or onnx.Optional"},
		{"optional of string", map[string]any{"seq": Sequence{}, "x": x, "opt": Optional{Value: "no"}}, "an Optional holds nil, a *tensor.Tensor or a Sequence, not string"},
		{"missing", map[string]any{"x": x, "opt": Optional{}}, `missing input "seq"`},
		{"not an input", map[string]any{"seq": Sequence{}, "x": x, "opt": Optional{}, "zz": Sequence{}}, `"zz" is not an input`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RunValues(context.Background(), tc.inputs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestRunRefusesSequenceOutputs(t *testing.T) {
	s := newSession(t, mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("SequenceConstruct", []string{"x", "x"}, []string{"s"})},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkWrappedValueInfo("s", 4)},
	}))
	x := tensor.FromSlice([]float32{1, 2})
	_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	require.ErrorContains(t, err, `graph output "s" is a sequence: run the model with RunValues`)
	out, err := s.RunValues(context.Background(), map[string]any{"x": x})
	require.NoError(t, err)
	require.Len(t, out["s"], 2)
}

func TestOptionalGetElementOfEmptyFails(t *testing.T) {
	s := newSession(t, mkModel(18, graphParts{
		nodes:   [][]byte{mkNode("OptionalGetElement", []string{"o"}, []string{"y"})},
		inputs:  [][]byte{mkWrappedValueInfo("o", 9)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
	_, err := s.RunValues(context.Background(), map[string]any{"o": Optional{}})
	require.ErrorContains(t, err, "the optional is empty")
	out, err := s.RunValues(context.Background(), map[string]any{"o": Optional{Value: tensor.FromSlice([]float32{3})}})
	require.NoError(t, err)
	assert.Equal(t, []float32{3}, out["y"].(*tensor.Tensor).Float32s())
}

func TestDeeplyNestedTypeIsRefused(t *testing.T) {
	typ := pbBytes(nil, 1, pbVarint(nil, 1, dtFloat))
	for range maxTypeDepth + 2 {
		typ = pbBytes(nil, 4, pbBytes(nil, 1, typ)) // sequence of the previous type
	}
	vi := pbBytes(pbString(nil, 1, "x"), 2, typ)
	_, err := Read(bytes.NewReader(mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("Identity", []string{"x"}, []string{"y"})},
		inputs:  [][]byte{vi},
		outputs: [][]byte{vi},
	})))
	require.ErrorContains(t, err, "nested deeper than")
}
