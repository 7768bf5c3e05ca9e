package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

func TestONNXInspectHelp(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var out, errb bytes.Buffer
		code := dispatch([]string{"onnx", "inspect", h}, &out, &errb)
		assert.Equal(t, 0, code)
		assert.Contains(t, errb.String(), "usage: ember onnx inspect")
		assert.NotContains(t, errb.String(), "no such file")
	}
	var out, errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"onnx", "inspect"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: ember onnx inspect")
	// The flag may come before or after the model.
	model := writeReluModel(t, t.TempDir())
	for _, args := range [][]string{{"-max-bytes", "1000000", model}, {model, "-max-bytes", "1000000"}} {
		out.Reset()
		errb.Reset()
		require.Equal(t, 0, dispatch(append([]string{"onnx", "inspect"}, args...), &out, &errb), errb.String())
		assert.Contains(t, out.String(), "runnable: yes")
	}
}

func TestONNXRunPrintsValues(t *testing.T) {
	dir := t.TempDir()
	model := writeReluModel(t, dir)
	in := filepath.Join(dir, "x.npy")
	require.NoError(t, tensor.SaveNpy(in, tensor.FromSlice([]float32{-1, 2.5, 3, -4}, 2, 2)))
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"onnx", "run", model, "-i", in}, &out, &errb), errb.String())
	assert.Equal(t, "y: float32 [2 2]\n[[0, 2.5],\n [3, 0]]\n", out.String())
}

func TestFormatValues(t *testing.T) {
	assert.Equal(t, "7", formatTensorValues(tensor.FromSlice([]int64{7}).Reshape()))
	assert.Equal(t, "[True, False]", formatTensorValues(tensor.FromSlice([]bool{true, false})))
	assert.Equal(t, "[0.1, -2]", formatTensorValues(tensor.FromSlice([]float32{0.1, -2})))
	assert.Equal(t, "[18446744073709551615]", formatTensorValues(tensor.FromSlice([]uint64{1<<64 - 1})))
	assert.Equal(t, `["a", "b"]`, formatStringValues(onnx.Strings{Shape: []int{2}, Data: []string{"a", "b"}}))
	// 1001 elements are summarized like numpy.arange(1001).
	v := make([]int64, 1001)
	for i := range v {
		v[i] = int64(i)
	}
	assert.Equal(t, "[0, 1, 2, ..., 998, 999, 1000]", formatTensorValues(tensor.FromSlice(v)))
	// 1000 are not.
	assert.Equal(t, 1000, strings.Count(formatTensorValues(tensor.FromSlice(v[:1000])), ",")+1)
	// numpy.arange(2000).reshape(40, 50), rows and columns summarized.
	w := make([]int64, 2000)
	for i := range w {
		w[i] = int64(i)
	}
	want := "[[0, 1, 2, ..., 47, 48, 49],\n" +
		" [50, 51, 52, ..., 97, 98, 99],\n" +
		" [100, 101, 102, ..., 147, 148, 149],\n" +
		" ...,\n" +
		" [1850, 1851, 1852, ..., 1897, 1898, 1899],\n" +
		" [1900, 1901, 1902, ..., 1947, 1948, 1949],\n" +
		" [1950, 1951, 1952, ..., 1997, 1998, 1999]]"
	assert.Equal(t, want, formatTensorValues(tensor.FromSlice(w, 40, 50)))
	// Rank 3 separates blocks with a blank line, as NumPy does.
	assert.Equal(t, "[[[0, 1]],\n\n [[2, 3]]]", formatTensorValues(tensor.FromSlice([]int64{0, 1, 2, 3}, 2, 1, 2)))
	// An empty tensor.
	assert.Equal(t, "[]", formatTensorValues(tensor.Zeros([]int{0}, tensor.Float32)))
}
