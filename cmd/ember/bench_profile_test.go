package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchProfileSeesEveryWorkloadsOps profiles one tiny timed step of
// each model workload: every one shows its characteristic op, the GRU's
// through the embedding of its ids.
func TestBenchProfileSeesEveryWorkloadsOps(t *testing.T) {
	want := map[string]string{
		"mlp": "MatMul", "cnn": "Conv2d", "resnet18_b1": "Conv2dBatchNorm",
		"resnet50_train_b64": "Conv2d", "gru": "GRUSequence", "transformer": "Softmax",
	}
	o := benchOptions{threads: 1, steps: 1, warmup: 1, tiny: true, profile: true}
	for _, w := range workloads() {
		op, ok := want[w.name]
		if !ok {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			res, err := runWorkload(w, o)
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.NotNil(t, res[0].trace)
			var out bytes.Buffer
			require.NoError(t, reportProfile(&out, &out, res[0], o, false))
			assert.True(t, strings.HasPrefix(out.String(), w.name+": ops of 1 timed steps\n"), out.String())
			found := false
			for _, line := range strings.Split(out.String(), "\n") {
				if f := strings.Fields(line); len(f) > 1 && f[0] == op {
					found = true
				}
			}
			assert.True(t, found, "no %s row in\n%s", op, out.String())
		})
	}
}

func TestBenchTraceFiles(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "ops.json")
	var out, errb bytes.Buffer
	rc := dispatch([]string{"bench", "-workload", "mlp", "-steps", "1", "-warmup", "1", "-threads", "1", "-json", "-profile", "-trace", trace}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	// stdout stays JSON lines; the table goes to stderr.
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
	}
	assert.Contains(t, errb.String(), "mlp: ops of 1 timed steps")
	readTrace := func(name string) []map[string]any {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		var doc struct {
			TraceEvents []map[string]any `json:"traceEvents"`
		}
		require.NoError(t, json.Unmarshal(data, &doc))
		return doc.TraceEvents
	}
	assert.NotEmpty(t, readTrace(trace))

	// With several workloads each trace is named after its workload.
	res, err := runWorkload(workloads()[1], benchOptions{threads: 1, steps: 1, warmup: 1, tiny: true, trace: trace})
	require.NoError(t, err)
	require.NoError(t, reportProfile(&out, &errb, res[0], benchOptions{trace: trace}, true))
	assert.NotEmpty(t, readTrace(filepath.Join(dir, "ops."+res[0].Workload+".json")))

	errb.Reset()
	rc = dispatch([]string{"bench", "-workload", "mlp", "-device", "cuda", "-profile"}, &out, &errb)
	assert.Equal(t, 2, rc, "profiling on a GPU is refused")
	assert.Contains(t, errb.String(), "-profile and -trace time ops on the CPU's clock")
}
