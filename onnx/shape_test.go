package onnx

import (
	"bytes"
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sym(p string) Dim { return Dim{Value: -1, Param: p} }

func TestBroadcastDims(t *testing.T) {
	cases := []struct {
		name string
		a, b []Dim
		want []Dim
		err  bool
	}{
		{"equal", []Dim{static(2), static(3)}, []Dim{static(2), static(3)}, []Dim{static(2), static(3)}, false},
		{"ones", []Dim{static(1), static(3)}, []Dim{static(4), static(1)}, []Dim{static(4), static(3)}, false},
		{"rank", []Dim{static(3)}, []Dim{sym("N"), static(2), static(3)}, []Dim{sym("N"), static(2), static(3)}, false},
		{"symbol vs static", []Dim{sym("N")}, []Dim{static(5)}, []Dim{static(5)}, false},
		{"same symbol", []Dim{sym("N")}, []Dim{sym("N")}, []Dim{sym("N")}, false},
		{"other symbols", []Dim{sym("N")}, []Dim{sym("M")}, []Dim{unknownDim}, false},
		{"conflict", []Dim{static(2)}, []Dim{static(3)}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := broadcast(c.a, c.b)
			if c.err {
				require.ErrorContains(t, err, "do not broadcast")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// shapeOf infers the single output of op on the given input shapes.
func shapeOf(t *testing.T, op string, opset int64, attrs map[string]*attribute, in [][]Dim, consts []*tensor.Tensor) ([]Dim, error) {
	t.Helper()
	n := &node{opType: op, opset: opset, attrs: attrs, numIn: len(in)}
	if consts == nil {
		consts = make([]*tensor.Tensor, len(in))
	}
	outs, err := shapeFuncs[op](n, in, consts)
	if err != nil || len(outs) == 0 {
		return nil, err
	}
	return outs[0], nil
}

func intsAttr(v ...int64) *attribute { return &attribute{ints: v} }
func intAttr(v int64) *attribute     { return &attribute{i: v} }

func TestShapeRules(t *testing.T) {
	s := staticDims
	cases := []struct {
		name   string
		op     string
		opset  int64
		attrs  map[string]*attribute
		in     [][]Dim
		consts []*tensor.Tensor
		want   []Dim
		err    string
	}{
		{name: "matmul batched", op: "MatMul", in: [][]Dim{{sym("N"), static(4), static(3)}, s([]int{3, 5})}, want: []Dim{sym("N"), static(4), static(5)}},
		{name: "matmul vector", op: "MatMul", in: [][]Dim{s([]int{3}), s([]int{2, 3, 5})}, want: s([]int{2, 5})},
		{name: "matmul vectors", op: "MatMul", in: [][]Dim{s([]int{3}), s([]int{3})}, want: []Dim{}},
		{name: "matmul inner", op: "MatMul", in: [][]Dim{s([]int{2, 3}), s([]int{4, 5})}, err: "inner dimensions"},
		{name: "gemm transB", op: "Gemm", attrs: map[string]*attribute{"transB": intAttr(1)}, in: [][]Dim{{sym("N"), static(8)}, s([]int{10, 8}), s([]int{10})}, want: []Dim{sym("N"), static(10)}},
		{name: "conv pads strides", op: "Conv", attrs: map[string]*attribute{"pads": intsAttr(3, 3, 3, 3), "strides": intsAttr(2, 2)},
			in: [][]Dim{{sym("N"), static(3), static(224), static(224)}, s([]int{64, 3, 7, 7})}, want: []Dim{sym("N"), static(64), static(112), static(112)}},
		{name: "conv groups", op: "Conv", attrs: map[string]*attribute{"group": intAttr(4)}, in: [][]Dim{s([]int{1, 8, 5, 5}), s([]int{8, 2, 3, 3})}, want: s([]int{1, 8, 3, 3})},
		{name: "conv channels", op: "Conv", in: [][]Dim{s([]int{1, 4, 5, 5}), s([]int{8, 3, 3, 3})}, err: "channels"},
		{name: "conv same symbolic", op: "Conv", attrs: map[string]*attribute{"auto_pad": {s: []byte("SAME_UPPER")}}, in: [][]Dim{{static(1), static(3), sym("H"), static(9)}, s([]int{2, 3, 3, 3})}, want: []Dim{static(1), static(2), sym("H"), static(9)}},
		{name: "maxpool ceil", op: "MaxPool", attrs: map[string]*attribute{"kernel_shape": intsAttr(3, 3), "strides": intsAttr(2, 2), "ceil_mode": intAttr(1)}, in: [][]Dim{s([]int{1, 2, 6, 6})}, want: s([]int{1, 2, 3, 3})},
		{name: "maxpool floor", op: "MaxPool", attrs: map[string]*attribute{"kernel_shape": intsAttr(3, 3), "strides": intsAttr(2, 2)}, in: [][]Dim{s([]int{1, 2, 6, 6})}, want: s([]int{1, 2, 2, 2})},
		{name: "pool too small", op: "AveragePool", attrs: map[string]*attribute{"kernel_shape": intsAttr(3, 3)}, in: [][]Dim{s([]int{1, 2, 2, 2})}, err: "smaller than the kernel"},
		{name: "global pool", op: "GlobalAveragePool", in: [][]Dim{{sym("N"), static(512), static(7), static(7)}}, want: []Dim{sym("N"), static(512), static(1), static(1)}},
		{name: "flatten", op: "Flatten", in: [][]Dim{{sym("N"), static(512), static(1), static(1)}}, want: []Dim{sym("N"), static(512)}},
		{name: "reshape infer", op: "Reshape", in: [][]Dim{s([]int{2, 3, 4}), s([]int{2})}, consts: []*tensor.Tensor{nil, tensor.FromSlice([]int64{0, -1}, 2)}, want: s([]int{2, 12})},
		{name: "reshape bad", op: "Reshape", in: [][]Dim{s([]int{2, 3, 4}), s([]int{2})}, consts: []*tensor.Tensor{nil, tensor.FromSlice([]int64{5, -1}, 2)}, err: "cannot reshape"},
		{name: "reshape unknown shape", op: "Reshape", in: [][]Dim{s([]int{2, 3, 4}), s([]int{2})}},
		{name: "transpose", op: "Transpose", attrs: map[string]*attribute{"perm": intsAttr(1, 0, 2)}, in: [][]Dim{{sym("S"), static(2), static(8)}}, want: []Dim{static(2), sym("S"), static(8)}},
		{name: "concat", op: "Concat", attrs: map[string]*attribute{"axis": intAttr(1)}, in: [][]Dim{s([]int{2, 3}), s([]int{2, 4})}, want: s([]int{2, 7})},
		{name: "concat symbolic axis", op: "Concat", attrs: map[string]*attribute{"axis": intAttr(0)}, in: [][]Dim{{sym("N"), static(3)}, s([]int{2, 3})}, want: []Dim{unknownDim, static(3)}},
		{name: "concat mismatch", op: "Concat", attrs: map[string]*attribute{"axis": intAttr(0)}, in: [][]Dim{s([]int{2, 3}), s([]int{2, 4})}, err: "differ off the concat axis"},
		{name: "unsqueeze input axes", op: "Unsqueeze", opset: 13, in: [][]Dim{s([]int{3, 4}), s([]int{2})}, consts: []*tensor.Tensor{nil, tensor.FromSlice([]int64{0, -1}, 2)}, want: s([]int{1, 3, 4, 1})},
		{name: "squeeze attr axes", op: "Squeeze", opset: 11, attrs: map[string]*attribute{"axes": intsAttr(1)}, in: [][]Dim{{sym("N"), static(1), static(4)}}, want: []Dim{sym("N"), static(4)}},
		{name: "squeeze not one", op: "Squeeze", opset: 11, attrs: map[string]*attribute{"axes": intsAttr(0)}, in: [][]Dim{s([]int{2, 1})}, err: "cannot squeeze"},
		{name: "shape", op: "Shape", opset: 15, attrs: map[string]*attribute{"start": intAttr(1)}, in: [][]Dim{{sym("N"), static(3), static(4)}}, want: s([]int{2})},
		{name: "where", op: "Where", in: [][]Dim{s([]int{1, 4}), {sym("N"), static(1)}, s([]int{4})}, want: []Dim{sym("N"), static(4)}},
		{name: "unknown input", op: "Add", in: [][]Dim{nil, s([]int{2})}},
		{name: "quantize", op: "QuantizeLinear", in: [][]Dim{{sym("N"), static(3)}, s([]int{}), s([]int{})}, want: []Dim{sym("N"), static(3)}},
		{name: "dynamic quantize", op: "DynamicQuantizeLinear", in: [][]Dim{{sym("N"), static(3)}}, want: []Dim{sym("N"), static(3)}},
		{name: "matmul integer", op: "MatMulInteger", in: [][]Dim{{sym("N"), static(4)}, s([]int{4, 2}), s([]int{}), s([]int{})}, want: []Dim{sym("N"), static(2)}},
		{name: "qlinear matmul", op: "QLinearMatMul", in: [][]Dim{{sym("N"), static(4)}, nil, nil, s([]int{4, 2}), nil, nil, nil, nil}, want: []Dim{sym("N"), static(2)}},
		{name: "qlinear conv", op: "QLinearConv", in: [][]Dim{s([]int{1, 3, 5, 5}), nil, nil, s([]int{8, 3, 3, 3}), nil, nil, nil, nil}, want: s([]int{1, 8, 3, 3})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.attrs == nil {
				c.attrs = map[string]*attribute{}
			}
			got, err := shapeOf(t, c.op, c.opset, c.attrs, c.in, c.consts)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestSessionInfersShapes(t *testing.T) {
	m, err := Read(bytes.NewReader(mlpModel()))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	for _, name := range []string{"xw", "z", "y"} {
		got, ok := s.ValueShape(name)
		require.True(t, ok, name)
		assert.Equal(t, []Dim{sym("N"), static(2)}, got, name)
	}
	got, ok := s.ValueShape("W")
	require.True(t, ok)
	assert.Equal(t, staticDims([]int{3, 2}), got)
	_, ok = s.ValueShape("nope")
	assert.False(t, ok)

	cnn, err := Load("testdata/models/cnn_opset13/model.onnx")
	require.NoError(t, err)
	s, err = cnn.NewSession(SessionOptions{})
	require.NoError(t, err)
	got, ok = s.ValueShape(cnn.Outputs[0].Name)
	require.True(t, ok)
	assert.Equal(t, []Dim{sym("N"), static(5)}, got)
}

func TestShapeConflictAtLoad(t *testing.T) {
	b := mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("MatMul", []string{"x", "W"}, []string{"y"})},
		inits:   [][]byte{mkFloatTensor("W", []int64{4, 1}, 1, 2, 3, 4)},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, -1, 3)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{})
	require.ErrorContains(t, err, "MatMul")
	require.ErrorContains(t, err, "inner dimensions of [N 3] and [4 1] differ")
}

func TestShapeCheckedBeforeRun(t *testing.T) {
	// x has no declared shape, so only propagation of the fed shape can
	// catch the mismatch with W before MatMul runs.
	b := mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("Relu", []string{"x"}, []string{"r"}),
			mkNode("MatMul", []string{"r", "W"}, []string{"y"}),
		},
		inits:   [][]byte{mkFloatTensor("W", []int64{3, 1}, 1, 2, 3)},
		inputs:  [][]byte{mkValueInfoAnyShape("x", dtFloat)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Ones([]int{2, 4})})
	require.ErrorContains(t, err, "shape inference: MatMul")
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{1, -1, 2}, 1, 3)})
	require.NoError(t, err)
	assert.Equal(t, []float32{7}, out["y"].Float32s())
}

func TestSymbolBoundOnce(t *testing.T) {
	b := mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("Add", []string{"a", "b"}, []string{"y"})},
		inputs:  [][]byte{mkValueInfo("a", dtFloat, -1, 2), mkValueInfo("b", dtFloat, -1, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, -1, 2)},
	})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"a": tensor.Ones([]int{1, 2}), "b": tensor.Ones([]int{3, 2})})
	require.ErrorContains(t, err, `dimension "N" (axis 0) is 3, but input "a" set it to 1`)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"a": tensor.Ones([]int{3, 2}), "b": tensor.Ones([]int{3, 2})})
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 2, 2, 2, 2, 2}, out["y"].Float32s())
}

func TestMemoryPlanReleases(t *testing.T) {
	b := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Dropout", []string{"x"}, []string{"d", "mask"}),
			mkNode("Relu", []string{"d"}, []string{"r"}),
			mkNode("Add", []string{"r", "d"}, []string{"s"}),
			mkNode("Neg", []string{"s"}, []string{"y"}),
		},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2), mkValueInfo("r", dtFloat, 2)},
	})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	// Optimizations would remove the Dropout this test plans around.
	s, err := m.NewSession(SessionOptions{DisableOptimizations: true})
	require.NoError(t, err)
	// x dies at Dropout, whose unread mask dies at once; d dies at Add; r
	// is a graph output and is never released.
	assert.Equal(t, [][]string{{"x", "mask"}, nil, {"d"}, {"s"}}, s.plan.release)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{-1, 2}, 2)})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, -4}, out["y"].Float32s())
	assert.Equal(t, []float32{0, 2}, out["r"].Float32s())
}

func TestIntraOpThreads(t *testing.T) {
	prev := tensor.NumThreads()
	t.Cleanup(func() { tensor.SetNumThreads(prev) })
	m, err := Read(bytes.NewReader(mlpModel()))
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{IntraOpThreads: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, tensor.NumThreads())
	_, err = m.NewSession(SessionOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, tensor.NumThreads(), "zero leaves the setting alone")
}
