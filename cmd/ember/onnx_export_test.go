package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/onnx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestONNXExportCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		model, shape string
		in, out      []onnx.Dim
	}{
		{"quickstart-cnn", "2,1,8,8", []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 1}, {Value: 8}, {Value: 8}}, []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 10}}},
		{"mlp", "3,20", []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 20}}, []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 10}}},
		{"gpt", "1,16", []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 16}}, []onnx.Dim{{Value: -1, Param: "batch"}, {Value: 16}, {Value: 256}}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			path := filepath.Join(dir, tc.model+".onnx")
			var stdout, stderr bytes.Buffer
			code := dispatch([]string{"onnx", "export", "-model", tc.model, "-input-shape", tc.shape, "-o", path}, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			assert.Contains(t, stdout.String(), "wrote "+path)
			m, err := onnx.Load(path)
			require.NoError(t, err)
			assert.Equal(t, tc.in, m.Inputs[0].Shape)
			assert.Equal(t, tc.out, m.Outputs[0].Shape)
			_, err = m.NewSession(onnx.SessionOptions{})
			require.NoError(t, err)
		})
	}
}

func TestONNXExportCommandErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-model", "nope", "-input-shape", "1,2", "-o", "x.onnx"},
		{"-model", "mlp", "-o", "x.onnx"},
		{"-model", "mlp", "-input-shape", "1,x", "-o", "x.onnx"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, dispatch(append([]string{"onnx", "export"}, args...), &stdout, &stderr), "%v", args)
	}
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"onnx", "export", "-model", "quickstart-cnn", "-input-shape", "1,3,8,8", "-o", filepath.Join(t.TempDir(), "q.onnx")}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "takes input shape N,1,8,8")
}
