package onnx

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// TestPyTorchExports runs small models exported by torch.onnx.export
// (internal/golden/gen/gen_onnx.py: a CNN with batch norm, pooling and
// softmax, a two-layer bidirectional LSTM, a batch-first bidirectional GRU
// and a transformer encoder layer at opsets 13 and 17) and compares with
// PyTorch's outputs to 1e-4.
func TestPyTorchExports(t *testing.T) {
	dirs, err := filepath.Glob("testdata/models/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, err := Load(filepath.Join(dir, "model.onnx"))
			require.NoError(t, err)
			s, err := m.NewSession(SessionOptions{})
			require.NoError(t, err)
			inputs := map[string]*tensor.Tensor{}
			for i, in := range m.Inputs {
				x, err := tensor.LoadNpy(filepath.Join(dir, fmt.Sprintf("input_%d.npy", i)))
				require.NoError(t, err)
				inputs[in.Name] = x
			}
			got, err := s.Run(context.Background(), inputs)
			require.NoError(t, err)
			for i, out := range m.Outputs {
				want, err := tensor.LoadNpy(filepath.Join(dir, fmt.Sprintf("output_%d.npy", i)))
				require.NoError(t, err)
				g := got[out.Name]
				require.NotNil(t, g, out.Name)
				require.Equal(t, want.Shape(), g.Shape(), out.Name)
				gv, wv := g.Float64s(), want.Float64s()
				for j := range wv {
					require.LessOrEqual(t, math.Abs(gv[j]-wv[j]), 1e-5+1e-4*math.Abs(wv[j]), "%s[%d]: %v, want %v", out.Name, j, gv[j], wv[j])
				}
			}
		})
	}
}

// TestDynamicBatch runs the CNN (exported with a symbolic batch axis) at
// batch sizes other than the export's, checking each row against the
// batch-2 run.
func TestDynamicBatch(t *testing.T) {
	dir := "testdata/models/cnn_opset13"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("model missing")
	}
	m, err := Load(filepath.Join(dir, "model.onnx"))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	x, err := tensor.LoadNpy(filepath.Join(dir, "input_0.npy"))
	require.NoError(t, err)
	want, err := tensor.LoadNpy(filepath.Join(dir, "output_0.npy"))
	require.NoError(t, err)
	for _, rows := range [][]int{{1}, {0}, {1, 0, 1}} {
		var parts []*tensor.Tensor
		for _, r := range rows {
			parts = append(parts, x.Narrow(0, r, 1))
		}
		out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Concat(parts, 0)})
		require.NoError(t, err)
		probs := out["probs"]
		require.Equal(t, []int{len(rows), 5}, probs.Shape())
		for i, r := range rows {
			g, w := probs.Select(0, i).Float64s(), want.Select(0, r).Float64s()
			for j := range w {
				require.InDelta(t, w[j], g[j], 1e-5)
			}
		}
	}
}

// TestPyTorchExportsConcurrent runs every exported model from several
// goroutines at once on one session (run the package with -race).
func TestPyTorchExportsConcurrent(t *testing.T) {
	dirs, err := filepath.Glob("testdata/models/*")
	require.NoError(t, err)
	for _, dir := range dirs {
		m, err := Load(filepath.Join(dir, "model.onnx"))
		require.NoError(t, err)
		s, err := m.NewSession(SessionOptions{})
		require.NoError(t, err)
		inputs := map[string]*tensor.Tensor{}
		for i, in := range m.Inputs {
			x, err := tensor.LoadNpy(filepath.Join(dir, fmt.Sprintf("input_%d.npy", i)))
			require.NoError(t, err)
			inputs[in.Name] = x
		}
		ref, err := s.Run(context.Background(), inputs)
		require.NoError(t, err)
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				out, err := s.Run(context.Background(), inputs)
				if err == nil {
					for name, want := range ref {
						w, g := want.Float64s(), out[name].Float64s()
						for j := range w {
							if w[j] != g[j] {
								err = fmt.Errorf("%s: %s differs between concurrent runs", dir, name)
								break
							}
						}
					}
				}
				errs <- err
			}()
		}
		for range 8 {
			require.NoError(t, <-errs)
		}
	}
}
