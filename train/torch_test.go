package train_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

// TestTorchReadsCheckpoint has PyTorch load the model of a checkpoint
// (check_checkpoint.py) and compare its output with Ember's. It is skipped
// where /usr/bin/python3 with torch is missing.
func TestTorchReadsCheckpoint(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	g := tensor.NewGenerator(5)
	f64 := tensor.Float64
	model := nn.NewSequential(nn.NewLinear(g, 4, 16, true, f64), nn.NewDropout(0.25, g), nn.NewLinear(g, 16, 2, true, f64))
	opt := optim.NewAdamW(model.Parameters(), optim.AdamOptions{LR: 0.01})
	for range 3 {
		opt.ZeroGrad()
		require.NoError(t, model.Forward(autograd.New(g.Randn([]int{8, 4}, f64))).Square().Mean(nil, false).Backward())
		require.NoError(t, opt.Step())
	}
	dir := t.TempDir()
	ckptPath, ioPath := filepath.Join(dir, "ckpt.safetensors"), filepath.Join(dir, "io.safetensors")
	info := runInfo{BestLoss: 0.5, Notes: []string{"from Go"}}
	require.NoError(t, train.SaveCheckpoint(ckptPath, &train.Checkpoint{
		Model: model, Optimizers: map[string]train.Stateful{"adamw": opt}, Step: 3, Epoch: 1, Metadata: info,
	}))
	model.Train(false)
	x := g.Randn([]int{5, 4}, f64)
	y := model.Forward(autograd.New(x)).Value()
	require.NoError(t, nn.SaveTensors(ioPath, map[string]*tensor.Tensor{"input": x, "output": y}, nil))

	out, err := exec.Command(python, filepath.Join("testdata", "check_checkpoint.py"), ckptPath, ioPath).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("python3 has no usable torch: %s", out)
	}
	require.NoError(t, err, "%s", out)
	assert.Equal(t, `step 3 epoch 1 metadata {"best_loss": 0.5, "notes": ["from Go"]}`+"\n", string(out))
}
