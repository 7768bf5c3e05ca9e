package onnx

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// zooDir is where internal/golden/gen/gen_onnx_zoo.py writes its models.
func zooDir() string {
	if d := os.Getenv("EMBER_ONNX_ZOO"); d != "" {
		return d
	}
	return filepath.Join("testdata", "zoo")
}

// TestZoo runs torchvision ResNet-18, MobileNetV2, SqueezeNet 1.1 and a
// two-layer transformer encoder exported at opsets 13 and 17 and compares
// with PyTorch's outputs to 1e-4 (absolute, plus 1e-4 relative). The models
// are too big for git: run internal/golden/gen/gen_onnx_zoo.py first; the
// test skips when they are absent, and under -short.
func TestZoo(t *testing.T) {
	if testing.Short() {
		t.Skip("zoo models are slow; skipped under -short")
	}
	dirs, _ := filepath.Glob(filepath.Join(zooDir(), "*_opset*"))
	if len(dirs) == 0 {
		t.Skipf("no zoo models in %s: run /usr/bin/python3 internal/golden/gen/gen_onnx_zoo.py", zooDir())
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, err := Load(filepath.Join(dir, "model.onnx"))
			require.NoError(t, err)
			s, err := m.NewSession(SessionOptions{})
			require.NoError(t, err)
			x, err := tensor.LoadNpy(filepath.Join(dir, "input_0.npy"))
			require.NoError(t, err)
			want, err := tensor.LoadNpy(filepath.Join(dir, "output_0.npy"))
			require.NoError(t, err)
			got, err := s.Run(context.Background(), map[string]*tensor.Tensor{m.Inputs[0].Name: x})
			require.NoError(t, err)
			g := got[m.Outputs[0].Name]
			require.NotNil(t, g)
			require.Equal(t, want.Shape(), g.Shape())
			gv, wv := g.Float64s(), want.Float64s()
			worst := 0.0
			for j := range wv {
				d := math.Abs(gv[j] - wv[j])
				worst = max(worst, d/(1+math.Abs(wv[j])))
				require.LessOrEqual(t, d, 1e-4+1e-4*math.Abs(wv[j]), "output[%d]: %v, want %v", j, gv[j], wv[j])
			}
			t.Logf("%s: %d outputs, worst scaled error %.2g", filepath.Base(dir), len(wv), worst)
		})
	}
}
