package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensorboard"
)

func TestTensorBoardExportCommand(t *testing.T) {
	logdir := filepath.Join(t.TempDir(), "runs")
	w, err := tensorboard.NewWriter(filepath.Join(logdir, "a"), tensorboard.Options{})
	require.NoError(t, err)
	w.AddScalar("train/loss", 0.5, 1)
	w.AddScalar("train/loss", 0.25, 2)
	w.AddScalar("train_loss", 9, 1)
	w.AddText("notes", "text is not exported", 1)
	require.NoError(t, w.Close())

	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"tensorboard", "export", logdir}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "wrote 2 CSV files")
	b, err := os.ReadFile(filepath.Join(logdir+"-csv", "a", "train__loss.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "wall_time,step,value", lines[0])
	assert.Regexp(t, `^\d+\.\d{6},1,0\.5$`, lines[1])
	assert.Regexp(t, `^\d+\.\d{6},2,0\.25$`, lines[2])
	b, err = os.ReadFile(filepath.Join(logdir+"-csv", "a", "train_loss.csv"))
	require.NoError(t, err)
	assert.Contains(t, string(b), ",1,9\n")

	out := filepath.Join(t.TempDir(), "csv")
	code = dispatch([]string{"tensorboard", "export", logdir, "-o", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.FileExists(t, filepath.Join(out, "a", "train__loss.csv"))
}

func TestTensorBoardExportCommandErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"tensorboard"}, &stdout, &stderr))
	assert.Equal(t, 2, dispatch([]string{"tensorboard", "export"}, &stdout, &stderr))
	assert.Equal(t, 2, dispatch([]string{"tensorboard", "frobnicate"}, &stdout, &stderr))
	stderr.Reset()
	assert.Equal(t, 1, dispatch([]string{"tensorboard", "export", filepath.Join(t.TempDir(), "missing")}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "is not a folder")
	empty := t.TempDir()
	stderr.Reset()
	assert.Equal(t, 1, dispatch([]string{"tensorboard", "export", empty}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no scalars")
	// A damaged file is reported with its offset.
	w, err := tensorboard.NewWriter(empty, tensorboard.Options{})
	require.NoError(t, err)
	w.AddScalar("x", 1, 1)
	w.AddScalar("x", 2, 2)
	require.NoError(t, w.Close())
	b, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	b[len(b)-5] ^= 1
	require.NoError(t, os.WriteFile(w.Path(), b, 0o644))
	stderr.Reset()
	assert.Equal(t, 1, dispatch([]string{"tensorboard", "export", empty}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "corrupt event record at offset")
}

func TestCSVFileName(t *testing.T) {
	used := map[string]bool{}
	assert.Equal(t, "a__b.csv", csvFileName("a/b", used))
	assert.Equal(t, "a__b-2.csv", csvFileName("a/b", used))
	assert.Equal(t, "__x.csv", csvFileName("../x", used))
	assert.Equal(t, "tag.csv", csvFileName("...", used))
	assert.Equal(t, "_.csv", csvFileName("é", used))
}

func TestONNXGraphCommand(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mlp.onnx")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"onnx", "export", "-model", "mlp", "-input-shape", "3,20", "-o", model}, &stdout, &stderr), stderr.String())
	dotPath := filepath.Join(dir, "g.dot")
	stdout.Reset()
	require.Equal(t, 0, dispatch([]string{"onnx", "graph", model, "-o", dotPath}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "wrote "+dotPath)
	src, err := os.ReadFile(dotPath)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(src), `digraph "onnx" {`))
	assert.Contains(t, string(src), "Gemm")

	stdout.Reset()
	require.Equal(t, 0, dispatch([]string{"onnx", "graph", model}, &stdout, &stderr))
	assert.Equal(t, string(src), stdout.String())

	stderr.Reset()
	assert.Equal(t, 1, dispatch([]string{"onnx", "graph", filepath.Join(dir, "missing.onnx")}, &stdout, &stderr))
	assert.Equal(t, 2, dispatch([]string{"onnx", "graph"}, &stdout, &stderr))

	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not installed (apt-get install graphviz)")
	}
	out, err := exec.Command(dot, "-Tsvg", dotPath).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "<svg")
}
