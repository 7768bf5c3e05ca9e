package onnx

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// ortRun is one entry of the run_onnxruntime.js manifest.
type ortRun struct {
	Model   string     `json:"model"`
	Inputs  []ortValue `json:"inputs"`
	Outputs []ortValue `json:"outputs"`
}

type ortValue struct {
	Name  string `json:"name"`
	DType string `json:"dtype,omitempty"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

// ortAvailable reports whether node can load onnxruntime-node (found next to
// the script, on NODE_PATH, or in ORT_NODE_MODULES).
func ortAvailable(t *testing.T) bool {
	if _, err := exec.LookPath("node"); err != nil {
		return false
	}
	cmd := exec.Command("node", "-e", "require('onnxruntime-node')")
	cmd.Env = ortEnv()
	return cmd.Run() == nil
}

func ortEnv() []string {
	env := os.Environ()
	if dir := os.Getenv("ORT_NODE_MODULES"); dir != "" {
		env = append(env, "NODE_PATH="+dir)
	}
	return env
}

func writeRaw(t *testing.T, path string, x *tensor.Tensor) string {
	t.Helper()
	var b []byte
	dt := "float32"
	if x.DType() == tensor.Int64 {
		dt = "int64"
		for _, v := range x.Int64s() {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	} else {
		for _, v := range x.Float32s() {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return dt
}

// TestExportRunsInONNXRuntime runs exported layers and zoo models in ONNX
// Runtime (skipped when node or onnxruntime-node is missing) and compares
// with Ember's outputs to 1e-4.
func TestExportRunsInONNXRuntime(t *testing.T) {
	if !ortAvailable(t) {
		t.Skip("node with onnxruntime-node not available (ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node; ORT_NODE_MODULES=.../node_modules)")
	}
	cases := exportCases()
	cases = append(cases, zooCases()...)
	cases = append(cases, rnnModuleCases()...)
	cases = append(cases, moreCases()...)
	cases = append(cases, lastCases()...)
	dir := t.TempDir()
	var runs []ortRun
	var want []*tensor.Tensor
	var names []string
	for ci, tc := range cases {
		g := tensor.NewGenerator(11)
		m := tc.build(g)
		b := exportModule(t, m, tc.input(g, 7), 0)
		model := filepath.Join(dir, strconv.Itoa(ci)+".onnx")
		require.NoError(t, os.WriteFile(model, b, 0o644))
		m.Train(false)
		for _, n := range []int{1, 7} {
			x := tc.input(g, n)
			base := filepath.Join(dir, strconv.Itoa(ci)+"_"+strconv.Itoa(n))
			dt := writeRaw(t, base+"_x.bin", x)
			runs = append(runs, ortRun{Model: model,
				Inputs:  []ortValue{{Name: "input_0", DType: dt, Shape: x.Shape(), File: base + "_x.bin"}},
				Outputs: []ortValue{{Name: "output_0", File: base + "_y.bin"}}})
			want = append(want, m.Forward(autograd.New(x)).Value())
			names = append(names, tc.name+"/batch"+strconv.Itoa(n))
		}
	}
	manifest := filepath.Join(dir, "runs.json")
	mb, err := json.Marshal(runs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, mb, 0o644))
	cmd := exec.Command("node", "../internal/golden/gen/run_onnxruntime.js", manifest)
	cmd.Env = ortEnv()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var got []ortRun
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(runs))
	for i, r := range got {
		t.Run(names[i], func(t *testing.T) {
			o := r.Outputs[0]
			raw, err := os.ReadFile(o.File)
			require.NoError(t, err)
			vals := make([]float32, len(raw)/4)
			for j := range vals {
				vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			}
			assertClose(t, want[i], tensor.FromSlice(vals, o.Shape...), 1e-4)
		})
	}
	t.Logf("ONNX Runtime matched Ember on %d runs of %d exported models", len(got), len(cases))
}
