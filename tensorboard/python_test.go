package tensorboard

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// pythonEvents compiles the committed .proto files for Python, reads the
// event files with testdata/check_events.py (which checks every CRC on its
// own) and returns one decoded object per event. It skips the test when
// protoc or Debian's python3-protobuf is missing.
func pythonEvents(t *testing.T, files ...string) []map[string]any {
	t.Helper()
	const python = "/usr/bin/python3"
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc is not installed (apt-get install protobuf-compiler)")
	}
	if exec.Command(python, "-c", "import google.protobuf").Run() != nil {
		t.Skip("python3 with google.protobuf is not installed (apt-get install python3-protobuf)")
	}
	out := t.TempDir()
	var protos []string
	root := filepath.Join("internal", "tbpb", "proto")
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".proto") {
			rel, _ := filepath.Rel(root, p)
			protos = append(protos, rel)
		}
		return err
	}))
	cmd := exec.Command(protoc, append([]string{"-I" + root, "--python_out=" + out}, protos...)...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "protoc: %s", b)
	cmd = exec.Command(python, append([]string{filepath.Join("testdata", "check_events.py"), out}, files...)...)
	b, err = cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("check_events.py: %v: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		evs = append(evs, m)
	}
	return evs
}

func TestEventsParseInPythonProtobuf(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{})
	require.NoError(t, err)
	w.AddScalar("train/loss", 0.5, 3)
	w.AddHistogramValues("weights", []float64{1, 2, 3, 4}, 4, 3)
	w.AddImageTensor("img", tensor.Zeros([]int{1, 3, 5}), 3)
	w.AddAudio("beep", tensor.Zeros([]int{2, 10}), 16000, 3)
	w.AddText("notes", "# hello", 3)
	require.NoError(t, w.AddPRCurve("pr", []bool{true, false}, []float64{0.7, 0.2}, 5, 3))
	w.AddCustomScalarsLayout(CustomScalarLayout{Categories: []CustomScalarCategory{{Title: "c", Charts: []CustomScalarChart{{Title: "m", Margin: []MarginSeries{{Value: "a", Lower: "b", Upper: "c"}}}}}}})
	require.NoError(t, w.AddHParams(map[string]any{"lr": 0.01, "opt": "adam", "bn": false}, map[string]float64{"acc": 0.5}))
	require.NoError(t, w.AddGraph(newTwoLayer(), tensor.Zeros([]int{2, 4})))
	require.NoError(t, w.Close())

	evs := pythonEvents(t, w.Path())
	require.NotEmpty(t, evs)
	assert.Equal(t, "brain.Event:2", evs[0]["file_version"])
	values := map[string]map[string]any{}
	var graphNodes []any
	for _, ev := range evs[1:] {
		if ev["what"] == "graph_def" {
			graphNodes = ev["nodes"].([]any)
			continue
		}
		require.Equal(t, "summary", ev["what"])
		for _, v := range ev["values"].([]any) {
			m := v.(map[string]any)
			values[m["tag"].(string)] = m
		}
	}
	assert.Equal(t, 0.5, values["train/loss"]["scalar"])
	assert.Equal(t, 4.0, values["weights"]["num"])
	assert.Equal(t, 4.0, values["weights"]["buckets"])
	assert.Equal(t, true, values["img"]["png"])
	assert.Equal(t, []any{5.0, 3.0}, values["img"]["size"])
	assert.Equal(t, true, values["beep"]["wav"])
	assert.Equal(t, "# hello", values["notes"]["text"])
	assert.Equal(t, 5.0, values["pr"]["thresholds"])
	assert.Equal(t, []any{6.0, 5.0}, values["pr"]["dims"])
	assert.Equal(t, []any{"c"}, values["custom_scalars__config__"]["categories"])
	assert.Equal(t, "experiment", values[hparamsExperimentTag]["hparams"])
	assert.Equal(t, map[string]any{"lr": "number_value", "opt": "string_value", "bn": "bool_value"}, values[hparamsSessionStartTag]["values"])
	assert.Equal(t, "session_end_info", values[hparamsSessionEndTag]["hparams"])
	assert.Equal(t, 0.5, values["acc"]["scalar"])
	assert.Contains(t, graphNodes, []any{"twoLayer/Sequential[body]/ReLU[1]/Relu", "Relu", []any{"twoLayer/Sequential[body]/Linear[0]/Add"}})
}
