package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeReluModel writes an ONNX model y = Relu(x), x FLOAT [N, 2], opset 13.
func writeReluModel(t *testing.T, dir string) string {
	t.Helper()
	str, vint := protoBytes, protoVarint
	valueInfo := func(name string) []byte {
		shape := str(nil, 1, str(nil, 2, []byte("N")))
		shape = str(shape, 1, vint(nil, 1, 2))
		tt := vint(nil, 1, 1) // FLOAT
		tt = str(tt, 2, shape)
		return str(str(nil, 1, []byte(name)), 2, str(nil, 1, tt))
	}
	node := str(nil, 1, []byte("x"))
	node = str(node, 2, []byte("y"))
	node = str(node, 4, []byte("Relu"))
	graph := str(nil, 1, node)
	graph = str(graph, 2, []byte("relu"))
	graph = str(graph, 11, valueInfo("x"))
	graph = str(graph, 12, valueInfo("y"))
	model := vint(nil, 1, 8)
	model = str(model, 2, []byte("test"))
	model = str(model, 7, graph)
	model = str(model, 8, vint(nil, 2, 13))
	path := filepath.Join(dir, "relu.onnx")
	require.NoError(t, os.WriteFile(path, model, 0o644))
	return path
}

func TestONNXInspect(t *testing.T) {
	model := writeReluModel(t, t.TempDir())
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"onnx", "inspect", model}, &out, &errb), errb.String())
	s := out.String()
	assert.Contains(t, s, "ai.onnx 13")
	assert.Contains(t, s, "x: FLOAT [N, 2]")
	assert.Contains(t, s, "y: FLOAT [N, 2]")
	assert.Contains(t, s, "Relu")
	assert.Contains(t, s, "parameters: 0 elements in 0 initializers")
	assert.Contains(t, s, "runnable: yes")
}

func TestONNXRun(t *testing.T) {
	dir := t.TempDir()
	model := writeReluModel(t, dir)
	in := filepath.Join(dir, "x.npy")
	require.NoError(t, tensor.SaveNpy(in, tensor.FromSlice([]float32{-1, 2, 3, -4}, 2, 2)))
	outDir := filepath.Join(dir, "out")
	for _, spec := range []string{"x=" + in, in} {
		var out, errb bytes.Buffer
		code := dispatch([]string{"onnx", "run", model, "-i", spec, "-o", outDir}, &out, &errb)
		require.Equal(t, 0, code, errb.String())
		assert.Contains(t, out.String(), "y: float32 [2 2]")
		y, err := tensor.LoadNpy(filepath.Join(outDir, "y.npy"))
		require.NoError(t, err)
		assert.Equal(t, []float32{0, 2, 3, 0}, y.Float32s())
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"onnx", "run", model, "-i", in, "-i", in}, "only one -i may be a bare path"},
		{[]string{"onnx", "run", model}, `missing input "x"`},
		{[]string{"onnx", "run", model, "-i", "z=" + in}, `"z" is not an input`},
		{[]string{"onnx", "run", filepath.Join(dir, "none.onnx")}, "no such file"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 1, dispatch(tc.args, &out, &errb))
		assert.Contains(t, errb.String(), tc.msg)
	}
}

func TestOutputFileName(t *testing.T) {
	for in, want := range map[string]string{"y": "y.npy", "a/b": "a_b.npy", "..": "output.npy", "../x": "_x.npy", "logits:0": "logits_0.npy"} {
		assert.Equal(t, want, outputFileName(in), in)
	}
}

func TestONNXRunSequenceOutput(t *testing.T) {
	model := filepath.Join("..", "..", "onnx", "testdata", "values", "split_sequence.onnx")
	dir := t.TempDir()
	in := filepath.Join(dir, "x.npy")
	require.NoError(t, tensor.SaveNpy(in, tensor.Arange(0, 12, 1).To(tensor.Float32).Reshape(3, 4)))
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"onnx", "inspect", model}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "chunks: sequence of FLOAT (shape unknown)")
	out.Reset()
	outDir := filepath.Join(dir, "out")
	require.Equal(t, 0, dispatch([]string{"onnx", "run", model, "-i", in, "-o", outDir}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "chunks: sequence of 2\n")
	assert.Contains(t, out.String(), "chunks_1: float32 [1 4]")
	last, err := tensor.LoadNpy(filepath.Join(outDir, "chunks_1.npy"))
	require.NoError(t, err)
	assert.Equal(t, []float32{8, 9, 10, 11}, last.Float32s())
	count, err := tensor.LoadNpy(filepath.Join(outDir, "count.npy"))
	require.NoError(t, err)
	assert.Equal(t, []int64{2}, count.Int64s())
}
