package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emberml/ember/cuda"
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
		for _, k := range []string{"device", "peak_gpu_mb", "tf32", "tflops"} {
			assert.NotContains(t, m, k, "a CPU line has only the CPU keys")
		}
		assert.InDelta(t, 1, m["threads"], 0)
		assert.InDelta(t, []float64{4, 9}[i], m["n"], 0)
		assert.Equal(t, tensor.HostCPU().Path, m["isa"], "the line names the kernels' path")
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
		{"bad device", []string{"bench", "-device", "gpu"}, 2, `-device: unknown device "gpu"`},
		{"tf32 on the cpu", []string{"bench", "-tf32"}, 2, "-tf32 needs -device cuda"},
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
	tests := []struct {
		sel  string
		gpu  bool
		want []string
	}{
		{"cnn,mlp,cnn,resnet18", false, []string{"cnn", "mlp", "resnet18_b1", "resnet18_b16"}},
		{"resnet50", false, []string{"resnet50_b1", "resnet50_b16"}},
		{"resnet50", true, []string{"resnet50_b64", "resnet50_train_b64"}},
		{"resnet18", true, []string{"resnet18_b1", "resnet18_b16"}},
		{"resnet50_b64,gru", false, []string{"resnet50_b64", "gru"}},
		{"all", false, []string{"gemm", "mlp", "cnn", "resnet18_b1", "resnet18_b16", "resnet50_b1", "resnet50_b16", "gru", "transformer"}},
		{"all", true, []string{"gemm", "mlp", "cnn", "resnet50_b64", "resnet50_train_b64"}},
	}
	for _, tc := range tests {
		ws, err := selectWorkloads(tc.sel, tc.gpu)
		require.NoError(t, err, tc.sel)
		var got []string
		for _, w := range ws {
			got = append(got, w.name)
		}
		assert.Equal(t, tc.want, got, "%s gpu=%v", tc.sel, tc.gpu)
	}
	assert.Equal(t, []string{"gemm", "mlp", "cnn", "resnet50_b64", "resnet50_train_b64"}, defaultWorkloadNames(true))
	assert.Len(t, workloadNames(), 11)
	_, err := selectWorkloads("resnet", true)
	assert.ErrorContains(t, err, `unknown workload "resnet"`)
}

func TestParseBenchDevice(t *testing.T) {
	tests := []struct {
		in      string
		dev     tensor.Device
		index   int
		wantErr bool
	}{
		{"cpu", tensor.CPU, -1, false},
		{"cuda", tensor.CUDA(0), 0, false},
		{"cuda:0", tensor.CUDA(0), 0, false},
		{"cuda:3", tensor.CUDA(3), 3, false},
		{"cuda:", "", 0, true},
		{"cuda:-1", "", 0, true},
		{"cuda:01", "", 0, true},
		{"cuda:x", "", 0, true},
		{"gpu", "", 0, true},
		{"CPU", "", 0, true},
	}
	for _, tc := range tests {
		d, err := parseBenchDevice(tc.in)
		if tc.wantErr {
			assert.ErrorContains(t, err, "want cpu, cuda or cuda:N", tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.dev, d.dev, tc.in)
		assert.Equal(t, tc.index, d.index, tc.in)
		assert.Equal(t, tc.index >= 0, d.gpu(), tc.in)
	}
}

// TestBenchNoDevice runs "ember bench -device cuda" where no CUDA device
// can be used (a build without -tags cuda, or a machine without a GPU):
// exit status 1 and the package cuda error naming the missing device.
func TestBenchNoDevice(t *testing.T) {
	if _, err := cuda.Device(0); err == nil {
		t.Skip("a CUDA device is present")
	}
	for _, i := range []int{0, 1} {
		err := benchDevice{dev: tensor.CUDA(i), index: i}.open(false)
		require.ErrorIs(t, err, cuda.ErrNoDevice)
		assert.Contains(t, err.Error(), cuda.ErrNoDevice.Error())
	}
	for _, dev := range []string{"cuda", "cuda:1"} {
		var out, errb bytes.Buffer
		rc := dispatch([]string{"bench", "-device", dev, "-workload", "mlp", "-json"}, &out, &errb)
		assert.Equal(t, 1, rc, dev)
		assert.Contains(t, errb.String(), "ember bench: -device cuda:", dev)
		assert.Contains(t, errb.String(), cuda.ErrNoDevice.Error(), dev)
		assert.Empty(t, out.String(), dev)
	}
	var out, errb bytes.Buffer
	rc := dispatch([]string{"bench", "-device", "cuda", "-tf32", "-workload", "gemm"}, &out, &errb)
	assert.Equal(t, 1, rc)
	assert.Contains(t, errb.String(), cuda.ErrNoDevice.Error())
}

// TestWorkloadsOnCUDA runs the GPU workloads, tiny, on CUDA device 0 and
// checks them against the CPU: the same losses for the deterministic
// training steps, finite and falling losses for the CNN (whose dropout
// draws may differ), the JSON keys of a GPU result. It skips without a
// device.
func TestWorkloadsOnCUDA(t *testing.T) {
	if _, err := cuda.Device(0); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	gpu, err := parseBenchDevice("cuda:0")
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		build func(bool) (*benchRun, error)
		// rtol is the relative tolerance of the losses against the CPU's;
		// 0 skips the comparison (the CNN's dropout draws differ by device).
		rtol float64
	}{
		{"mlp", buildMLP, 1e-4},
		{"resnet50_train_b64", buildResNetTrain(50, 64), 1e-2},
		{"cnn", buildCNN, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			losses := func(dev benchDevice) []float64 {
				run, err := tc.build(true)
				require.NoError(t, err)
				require.NoError(t, dev.move(run))
				var ls []float64
				for range 3 {
					require.NoError(t, run.step())
					ls = append(ls, run.loss())
				}
				require.NoError(t, dev.sync())
				return ls
			}
			want, got := losses(cpuDevice), losses(gpu)
			for i, l := range got {
				require.False(t, math.IsNaN(l) || math.IsInf(l, 0), "step %d loss %v", i, l)
				if tc.rtol > 0 {
					assert.InDelta(t, want[i], l, tc.rtol*max(1, math.Abs(want[i])), "step %d", i)
				}
			}
			if tc.rtol > 0 {
				assert.Less(t, got[2], got[0], "the loss falls on the GPU as on the CPU")
			} else {
				// Random init: cross-entropy near ln(10), as on the CPU.
				assert.InDelta(t, math.Log(10), got[0], 1.5)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		var out, errb bytes.Buffer
		rc := dispatch([]string{"bench", "-device", "cuda", "-workload", "gemm,resnet50_b64", "-sizes", "64",
			"-steps", "2", "-warmup", "1", "-json"}, &out, &errb)
		require.Equal(t, 0, rc, errb.String())
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, lines, 2)
		for _, line := range lines {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			assert.Equal(t, "cuda:0", m["device"], line)
			assert.Positive(t, m["peak_gpu_mb"], line)
			assert.Positive(t, m["samples_per_s"], line)
		}
	})
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

func TestBenchNamesCPUAndPath(t *testing.T) {
	host := tensor.HostCPU()
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"bench", "-cpuinfo"}, &out, &errb), errb.String())
	assert.Equal(t, host.String()+"\n", out.String())
	assert.Contains(t, out.String(), "kernels "+host.Path)

	out.Reset()
	rc := dispatch([]string{"bench", "-workload", "gemm", "-sizes", "4", "-steps", "1", "-warmup", "1", "-threads", "1"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "cpu: "+host.String()+"; GOMAXPROCS 1", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "gemm "), lines[1])
}
