package distributed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, WriteFileAtomic(path, []byte("old"), 0o600))
	require.NoError(t, WriteFileAtomic(path, []byte("new"), 0o600))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
	// A failed write leaves the old file alone.
	require.Error(t, WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600))
}

func TestCheckpointResumeMatchesUninterruptedTraining(t *testing.T) {
	const steps = 12
	train := func(m nn.Module, opt optim.Optimizer, from, to int) {
		for step := from; step < to; step++ {
			opt.ZeroGrad()
			x, y := ddpBatch(step, 6)
			ddpStep(t, m, x, y)
			require.NoError(t, opt.Step())
		}
	}
	newOpt := func(m nn.Module) optim.Optimizer {
		return optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
	}
	ref := ddpModel(5)
	refOpt := newOpt(ref)
	train(ref, refOpt, 0, steps)

	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	first := ddpModel(5)
	firstOpt := newOpt(first)
	train(first, firstOpt, 0, steps/2)
	require.NoError(t, SaveCheckpoint(path, first, firstOpt, map[string]string{"step": "6"}))

	resumed := ddpModel(99) // different weights, overwritten by the load
	resumedOpt := newOpt(resumed)
	meta, err := LoadCheckpoint(path, resumed, resumedOpt)
	require.NoError(t, err)
	assert.Equal(t, "6", meta["step"])
	train(resumed, resumedOpt, steps/2, steps)
	assert.Equal(t, paramValues(ref), paramValues(resumed), "momentum state must survive the checkpoint")

	_, err = LoadCheckpoint(filepath.Join(t.TempDir(), "nope"), resumed, resumedOpt)
	assert.Error(t, err)
}

// Files in the layout SaveCheckpoint wrote before it delegated to package
// train ("model." and "optim." keys, string metadata) still load.
func TestLoadCheckpointReadsTheOldLayout(t *testing.T) {
	src := ddpModel(5)
	opt := optim.NewSGD(src.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
	old := map[string]*tensor.Tensor{}
	for k, v := range nn.StateDict(src) {
		old["model."+k] = v
	}
	for k, v := range opt.StateDict() {
		old["optim."+k] = v
	}
	path := filepath.Join(t.TempDir(), "old.safetensors")
	require.NoError(t, nn.SaveTensors(path, old, map[string]string{"epoch": "3"}))

	dst := ddpModel(6)
	dstOpt := optim.NewSGD(dst.Parameters(), optim.SGDOptions{LR: 0.5})
	meta, err := LoadCheckpoint(path, dst, dstOpt)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"epoch": "3"}, meta)
	assert.Equal(t, paramValues(src), paramValues(dst))
	assert.Equal(t, 0.1, dstOpt.LR(0))

	// The new layout is train's: train.LoadCheckpoint reads what
	// SaveCheckpoint writes.
	require.NoError(t, SaveCheckpoint(path, src, opt, map[string]string{"epoch": "4"}))
	var got map[string]string
	require.NoError(t, train.LoadCheckpoint(path, &train.Checkpoint{
		Model: dst, Optimizers: map[string]train.Stateful{"optimizer": dstOpt}, Metadata: &got,
	}))
	assert.Equal(t, map[string]string{"epoch": "4"}, got)
}
