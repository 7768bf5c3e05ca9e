package onnx

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSession(t *testing.T, model []byte) *Session {
	t.Helper()
	m, err := Read(bytes.NewReader(model))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	return s
}

func TestSessionRunMLP(t *testing.T) {
	s := newSession(t, mlpModel())
	x := tensor.FromSlice([]float32{1, 2, 3, 0, 1, -1}, 2, 3)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	// x@W = [[1+4-9, -1+1+3], [0+2+3, 0+0.5-1]] = [[-4, 3], [5, -0.5]];
	// +b = [[-3.5, -1], [5.5, -4.5]]; relu.
	assert.Equal(t, []int{2, 2}, out["y"].Shape())
	assert.Equal(t, []float32{0, 0, 5.5, 0}, out["y"].Float32s())

	x2 := tensor.FromSlice([]float32{3, 1, 0}, 1, 3)
	out, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": x2})
	require.NoError(t, err)
	// [3+2, -3+0.5] + b = [5.5, -6.5] -> relu [5.5, 0]
	assert.Equal(t, []float32{5.5, 0}, out["y"].Float32s())
}

func TestSessionInputValidation(t *testing.T) {
	s := newSession(t, mlpModel())
	ok := tensor.Zeros([]int{4, 3})
	for _, tc := range []struct {
		name   string
		inputs map[string]*tensor.Tensor
		msg    string
	}{
		{"unknown name", map[string]*tensor.Tensor{"x": ok, "z": ok}, `"z" is not an input of the model`},
		{"missing", map[string]*tensor.Tensor{}, `missing input "x"`},
		{"nil", map[string]*tensor.Tensor{"x": nil}, `input "x" is nil`},
		{"dtype", map[string]*tensor.Tensor{"x": tensor.Zeros([]int{4, 3}, tensor.Float64)}, "dtype float64, the model wants float32"},
		{"rank", map[string]*tensor.Tensor{"x": tensor.Zeros([]int{3})}, "the model wants rank 2"},
		{"static dim", map[string]*tensor.Tensor{"x": tensor.Zeros([]int{4, 5})}, "axis 1 must be 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Run(context.Background(), tc.inputs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	// The symbolic batch dimension accepts any size.
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Zeros([]int{7, 3})})
	require.NoError(t, err)
	assert.Equal(t, []int{7, 2}, out["y"].Shape())
}

func TestSessionConcurrentRun(t *testing.T) {
	s := newSession(t, mlpModel())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				v := float32(g*20 + i)
				x := tensor.FromSlice([]float32{v, 0, 0}, 1, 3)
				out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
				if err != nil {
					errs <- err
					return
				}
				// y = relu([v + 0.5, -v - 4])
				got := out["y"].Float32s()
				if got[0] != v+0.5 || got[1] != 0 {
					errs <- errors.New("wrong result under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestSessionCancellation(t *testing.T) {
	s := newSession(t, mlpModel())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Run(ctx, map[string]*tensor.Tensor{"x": tensor.Zeros([]int{1, 3})})
	require.ErrorIs(t, err, context.Canceled)
}

func TestSessionPanicBecomesError(t *testing.T) {
	// Reshape to a shape with the wrong element count panics inside tensor.
	model := mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("Reshape", []string{"x", "s"}, []string{"y"})},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, -1), mkValueInfo("s", dtInt64, 1)},
		outputs: [][]byte{mkValueInfo("y", dtFloat)},
	})
	s := newSession(t, model)
	_, err := s.Run(context.Background(), map[string]*tensor.Tensor{
		"x": tensor.Zeros([]int{6}), "s": tensor.FromSlice([]int64{5}),
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Reshape node")
	assert.Contains(t, err.Error(), "tensor.Reshape: shape [5] has 5 elements, tensor of shape [6] has 6")
	// No stack trace: no goroutine header, no source paths.
	assert.NotContains(t, err.Error(), "goroutine")
	assert.NotContains(t, err.Error(), ".go:")
	assert.NotContains(t, err.Error(), "\n")
}

func TestSessionUnsupportedListsEveryOp(t *testing.T) {
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("FancyOp", []string{"x"}, []string{"a"}),
			mkNode("Relu", []string{"a"}, []string{"b"}),
			mkNode("OtherOp", []string{"b"}, []string{"c"}),
			mkNode("FancyOp", []string{"c"}, []string{"d"}),
			mkDomainNode("com.example", "Custom", []string{"d"}, []string{"y"}),
		},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2)},
	})
	m, err := Read(bytes.NewReader(model))
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{})
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"FancyOp (opset 13)", "OtherOp (opset 13)", `com.example.Custom (domain "com.example" not imported)`}, ue.Ops)
}

func TestSessionConstantFolding(t *testing.T) {
	// Shape(W) -> Reshape(x, Shape(W)) : the Shape node is folded at load.
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Shape", []string{"W"}, []string{"s"}),
			mkNode("Reshape", []string{"x", "s"}, []string{"y"}),
		},
		inits:   [][]byte{mkFloatTensor("W", []int64{2, 3}, 0, 0, 0, 0, 0, 0)},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 6)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2, 3)},
	})
	m, err := Read(bytes.NewReader(model))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	assert.Len(t, s.plan.nodes, 1)
	unfolded, err := m.NewSession(SessionOptions{DisableConstantFolding: true})
	require.NoError(t, err)
	assert.Len(t, unfolded.plan.nodes, 2)
	for _, sess := range []*Session{s, unfolded} {
		out, err := sess.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Arange(0, 6, 1, tensor.Float32)})
		require.NoError(t, err)
		assert.Equal(t, []int{2, 3}, out["y"].Shape())
		assert.Equal(t, []float32{0, 1, 2, 3, 4, 5}, out["y"].Float32s())
	}
}

func TestSessionOutputsDoNotAliasConstants(t *testing.T) {
	model := mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
		inits:   [][]byte{mkFloatTensor("W", []int64{2}, 1, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), nil)
	require.NoError(t, err)
	out["y"].Fill(9)
	out, err = s.Run(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, out["y"].Float32s())
}

func TestMalformedModels(t *testing.T) {
	valid := mlpModel()
	for _, tc := range []struct {
		name  string
		model []byte
		msg   string
	}{
		{"truncated", valid[:len(valid)-7], "truncated"},
		{"empty", nil, "no graph"},
		{"cycle", mkModel(13, graphParts{
			nodes: [][]byte{
				mkNode("Relu", []string{"b"}, []string{"a"}),
				mkNode("Relu", []string{"a"}, []string{"b"}),
			},
			outputs: [][]byte{mkValueInfo("b", dtFloat)},
		}), "cycle"},
		{"missing input", mkModel(13, graphParts{
			nodes:   [][]byte{mkNode("Relu", []string{"nowhere"}, []string{"y"})},
			outputs: [][]byte{mkValueInfo("y", dtFloat)},
		}), `reads "nowhere"`},
		{"duplicate output", mkModel(13, graphParts{
			nodes: [][]byte{
				mkNode("Relu", []string{"x"}, []string{"y"}),
				mkNode("Neg", []string{"x"}, []string{"y"}),
			},
			inputs:  [][]byte{mkValueInfo("x", dtFloat)},
			outputs: [][]byte{mkValueInfo("y", dtFloat)},
		}), "produced twice"},
		{"huge declared dims", mkModel(13, graphParts{
			inits: [][]byte{mkTensor("W", dtFloat, []int64{1 << 40, 1 << 20}, nil)},
		}), "more than"},
		{"dims without data", mkModel(13, graphParts{
			inits: [][]byte{mkTensor("W", dtFloat, []int64{1000, 1000}, []byte{1, 2, 3, 4})},
		}), "needs 4000000 bytes"},
		{"negative dim", mkModel(13, graphParts{
			inits: [][]byte{mkTensor("W", dtFloat, []int64{-3}, nil)},
		}), "negative dimension"},
		{"unknown dtype", mkModel(13, graphParts{
			inits: [][]byte{mkTensor("W", 99, []int64{1}, []byte{0})},
		}), "DataType(99)"},
		{"unsupported dtype", mkModel(13, graphParts{
			inits: [][]byte{mkTensor("W", dtComplex64, []int64{1}, []byte{0, 0, 0, 0, 0, 0, 0, 0})},
		}), "COMPLEX64 is not supported"},
		{"huge ConstantOfShape", mkModel(13, graphParts{
			nodes:   [][]byte{mkNode("ConstantOfShape", []string{"s"}, []string{"y"})},
			inits:   [][]byte{mkInt64Tensor("s", []int64{3}, 1<<30, 1<<30, 1<<30)},
			outputs: [][]byte{mkValueInfo("y", dtFloat)},
		}), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Read(bytes.NewReader(tc.model))
			if err == nil {
				_, err = m.NewSession(SessionOptions{})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 8+8)
	copy(raw[8:], mkFloatTensor("", nil, 1.5, -2)[len(mkFloatTensor("", nil, 1.5, -2))-8:])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weights.bin"), raw, 0o644))
	ext := func(loc string) []byte {
		b := pbVarint(nil, 1, 2)
		b = pbVarint(b, 2, dtFloat)
		b = pbString(b, 8, "W")
		for _, kv := range [][2]string{{"location", loc}, {"offset", "8"}, {"length", "8"}} {
			e := pbString(nil, 1, kv[0])
			e = pbString(e, 2, kv[1])
			b = pbBytes(b, 13, e)
		}
		return pbVarint(b, 14, 1)
	}
	write := func(loc string) string {
		model := mkModel(13, graphParts{
			nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
			inits:   [][]byte{ext(loc)},
			outputs: [][]byte{mkValueInfo("y", dtFloat, 2)},
		})
		p := filepath.Join(dir, "model.onnx")
		require.NoError(t, os.WriteFile(p, model, 0o644))
		return p
	}
	m, err := Load(write("weights.bin"))
	require.NoError(t, err)
	assert.Equal(t, []float32{1.5, -2}, m.Initializer("W").Float32s())

	for _, bad := range []string{"../weights.bin", "/etc/passwd", "sub/../../weights.bin", ""} {
		_, err := Load(write(bad))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "relative path inside the model's folder")
	}
	// Read (no folder) refuses external data.
	b, err := os.ReadFile(write("weights.bin"))
	require.NoError(t, err)
	_, err = Read(bytes.NewReader(b))
	require.ErrorContains(t, err, "not loaded from a file")
}
