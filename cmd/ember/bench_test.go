package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emberml/ember/tensor"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkloadsRunOneTinyStep keeps every workload building and
// stepping: one warm-up and one timed step each, with tiny batches.
func TestWorkloadsRunOneTinyStep(t *testing.T) {
	o := benchOptions{threads: 1, steps: 1, warmup: 1, sizes: []int{3, 17}, tiny: true}
	for _, w := range workloads() {
		t.Run(w.name, func(t *testing.T) {
			res, err := runWorkload(w, o)
			require.NoError(t, err)
			require.NotEmpty(t, res)
			for _, r := range res {
				assert.Equal(t, w.name, r.Workload)
				assert.Equal(t, 1, r.Steps)
				assert.Positive(t, r.Batch)
				assert.Positive(t, r.MedianMS)
				assert.Positive(t, r.SamplesPerS)
				assert.NotZero(t, r.PeakRSSMB)
			}
			if w.name == "gemm" {
				require.Len(t, res, 2)
				assert.Equal(t, 3, res[0].N)
				assert.Equal(t, 17, res[1].N)
				assert.Positive(t, res[1].GFLOPS)
			}
		})
	}
}

// TestTrainStepLearns checks that the mlp and cnn steps really train: the
// loss on the fixed batch goes down over a few steps.
func TestTrainStepLearns(t *testing.T) {
	for _, build := range []struct {
		name    string
		fn      func(bool) (*benchRun, error)
		classes int
	}{{"mlp", buildMLP, 10}, {"cnn", buildCNN, 10}, {"gru", buildGRU, 2}} {
		t.Run(build.name, func(t *testing.T) {
			run, err := build.fn(true)
			require.NoError(t, err)
			assert.Equal(t, 2, run.batch)
			assert.True(t, math.IsNaN(run.loss()))
			require.NoError(t, run.step())
			first := run.loss()
			// Random init: cross-entropy near ln(classes).
			assert.InDelta(t, math.Log(float64(build.classes)), first, 1.5)
			for range 2 {
				require.NoError(t, run.step())
			}
			assert.Less(t, run.loss(), first)
		})
	}
}

func TestBenchJSONLines(t *testing.T) {
	var out, errb bytes.Buffer
	rc := dispatch([]string{"bench", "-workload", "gemm", "-sizes", "4,9", "-steps", "1", "-warmup", "1", "-threads", "1", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	for i, line := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		for _, k := range []string{"workload", "threads", "batch", "median_ms", "samples_per_s", "peak_rss_mb"} {
			assert.Contains(t, m, k, line)
		}
		assert.Equal(t, "gemm", m["workload"])
		assert.InDelta(t, 1, m["threads"], 0)
		assert.InDelta(t, []float64{4, 9}[i], m["n"], 0)
	}
}

func TestBenchBadArguments(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		rc      int
		wantErr string
	}{
		{"unknown workload", []string{"bench", "-workload", "vgg"}, 2, `unknown workload "vgg"`},
		{"bad sizes", []string{"bench", "-sizes", "0"}, 2, "-sizes"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.rc, dispatch(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), tc.wantErr)
			assert.Empty(t, out.String())
		})
	}
}

func TestSelectWorkloads(t *testing.T) {
	ws, err := selectWorkloads("cnn,mlp,cnn,resnet18")
	require.NoError(t, err)
	require.Len(t, ws, 4)
	for i, want := range []string{"cnn", "mlp", "resnet18_b1", "resnet18_b16"} {
		assert.Equal(t, want, ws[i].name)
	}
	all, err := selectWorkloads("all")
	require.NoError(t, err)
	assert.Equal(t, workloadNames(), func() []string {
		var s []string
		for _, w := range all {
			s = append(s, w.name)
		}
		return s
	}())
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"Name:\tember\nVmPeak:\t  900 kB\nVmHWM:\t  204800 kB\nVmRSS:\t 1 kB\n", 200},
		{"VmHWM:\t1536 kB", 1.5},
		{"Name:\tember\n", -1},
		{"VmHWM:\tlots kB\n", -1},
	}
	for _, tc := range tests {
		assert.InDelta(t, tc.want, parseVmHWM(tc.in), 1e-9, tc.in)
	}
	assert.Equal(t, 0.5, median([]float64{1, 0, 0.5}))
	assert.Equal(t, 1.5, median([]float64{2, 1}))
}

// TestTransformerLoss checks the transformer step's value: the layer ends in
// a LayerNorm with unit weight and zero bias at initialization, so every
// output row has mean 0 and variance v/(v+eps) ≈ 1, and mean(out²) ≈ 1.
func TestTransformerLoss(t *testing.T) {
	run, err := buildTransformer(true)
	require.NoError(t, err)
	require.NoError(t, run.step())
	assert.InDelta(t, 1, run.loss(), 1e-3)
}

// TestResNetShapes checks the two torchvision architectures: parameter
// counts (torchvision: resnet18 11,689,512; resnet50 25,557,032) and the
// tiny network's output.
func TestResNetShapes(t *testing.T) {
	for _, tc := range []struct {
		depth, params int
	}{{18, 11689512}, {50, 25557032}} {
		n := 0
		for _, p := range newResNet(tensor.NewGenerator(0), tc.depth, 64).Parameters() {
			n += p.Value().Numel()
		}
		assert.Equal(t, tc.params, n, "resnet%d", tc.depth)
	}
}

func TestBenchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errb bytes.Buffer
	rc := dispatch([]string{"bench", "-workload", "gemm", "-sizes", "8", "-steps", "1", "-warmup", "1", "-cpuprofile", path}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	assert.Contains(t, out.String(), "gemm")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}
