package nn_test

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// The Ember twins of nn/testdata/torch_models.py.
var interopModels = map[string]func(g *tensor.Generator) nn.Module{
	"mlp": func(g *tensor.Generator) nn.Module {
		return nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewReLU(), nn.NewLinear(g, 8, 3, true))
	},
	"convnet": func(g *tensor.Generator) nn.Module {
		return nn.NewSequential(
			nn.NewConv2d(g, 1, 4, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true),
			nn.NewReLU(),
			nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}}),
			nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Groups: 2}, true),
			nn.NewReLU(),
			nn.NewFlatten(1, -1),
			nn.NewLinear(g, 24, 3, true),
		)
	},
}

var interopInputs = map[string][]int{"mlp": {5, 4}, "convnet": {2, 1, 8, 8}}

// TestLoadTorchStateDict loads state dicts written by PyTorch
// (make_torch_models.py) and checks the tensors and the forward output.
func TestLoadTorchStateDict(t *testing.T) {
	for name, build := range interopModels {
		t.Run(name, func(t *testing.T) {
			m := build(tensor.NewGenerator(1))
			m.Train(false)
			path := filepath.Join("testdata", "torch_"+name+".safetensors")
			require.NoError(t, nn.LoadSafetensors(path, m))

			want, meta, err := nn.LoadTensors(path)
			require.NoError(t, err)
			assert.Equal(t, "pt", meta["format"])
			got := nn.StateDict(m)
			require.Len(t, got, len(want))
			for k, w := range want {
				assert.Equal(t, w.Shape(), got[k].Shape(), k)
				assert.Equal(t, w.Float32s(), got[k].Float32s(), k)
			}

			io, _, err := nn.LoadTensors(filepath.Join("testdata", "torch_"+name+"_io.safetensors"))
			require.NoError(t, err)
			y := m.Forward(autograd.New(io["input"]))
			wantY := io["output"]
			golden.AllClose(t, "output", golden.Tensor{Shape: wantY.Shape(), DType: golden.Float32, Data: wantY.Float64s()},
				y.Shape(), y.Value().Float64s(), 1e-5, 1e-6)
		})
	}
}

// TestTorchLoadsEmberStateDict saves Ember models and has PyTorch load them
// and compare its forward output with Ember's (check_ember_model.py, one
// process for all models). It is skipped where /usr/bin/python3 with torch
// is missing.
func TestTorchLoadsEmberStateDict(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	args := []string{filepath.Join("testdata", "check_ember_model.py")}
	for _, name := range slices.Sorted(maps.Keys(interopModels)) {
		g := tensor.NewGenerator(42)
		m := interopModels[name](g)
		m.Train(false)
		weights := filepath.Join(dir, name+".safetensors")
		require.NoError(t, nn.SaveSafetensors(weights, m))
		x := g.Randn(interopInputs[name])
		y := m.Forward(autograd.New(x)).Value()
		ioPath := filepath.Join(dir, name+"_io.safetensors")
		require.NoError(t, nn.SaveTensors(ioPath, map[string]*tensor.Tensor{"input": x, "output": y}, nil))
		args = append(args, name, weights, ioPath)
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("python3 has no usable torch: %s", out)
	}
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
}
