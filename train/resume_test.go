package train_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/data"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

const (
	resumeEpochs  = 4
	resumeSamples = 40
	resumeBatch   = 8 // 5 batches per epoch, 20 steps in all
)

// resumeRun is a training program: model with dropout, shuffling loader,
// AdamW with linear warm-up then cosine decay, stepped per batch.
type resumeRun struct {
	model  *nn.Sequential
	opt    *optim.Adam
	sched  optim.Scheduler
	loader *data.Loader
	best   float64
}

// newResumeRun builds the program; initSeed seeds the weights and the
// dropout generator, which a resumed run gets from its checkpoint.
func newResumeRun(initSeed uint64) *resumeRun {
	dataGen := tensor.NewGenerator(100)
	x := dataGen.Randn([]int{resumeSamples, 4})
	y := dataGen.Randn([]int{resumeSamples, 2})
	g := tensor.NewGenerator(initSeed)
	model := nn.NewSequential(
		nn.NewLinear(g, 4, 16, true),
		nn.NewDropout(0.3, tensor.NewGenerator(initSeed+1)),
		nn.NewLinear(g, 16, 2, true),
	)
	opt := optim.NewAdamW(model.Parameters(), optim.AdamOptions{LR: 0.02, WeightDecay: 0.01})
	warm := optim.NewLinearWarmup(opt, 4, 0.1)
	cosine := optim.NewCosineAnnealingLR(opt, 16, 0.001)
	return &resumeRun{
		model:  model,
		opt:    opt,
		sched:  optim.NewSequentialLR([]optim.Scheduler{warm, cosine}, []int{4}),
		loader: data.NewLoader(data.NewTensorDataset(x, y), data.LoaderOptions{BatchSize: resumeBatch, Shuffle: true, Seed: 7, Workers: 2}),
		best:   1e9,
	}
}

func (r *resumeRun) checkpoint(step, epoch int) *train.Checkpoint {
	return &train.Checkpoint{
		Model:      r.model,
		Optimizers: map[string]train.Stateful{"adamw": r.opt},
		Schedulers: map[string]train.Stateful{"warmup_cosine": r.sched},
		Loaders:    map[string]train.Stateful{"train": r.loader},
		Step:       step,
		Epoch:      epoch,
		Metadata:   &r.best,
	}
}

// loop trains from step to the end, saving a checkpoint to path after every
// step; it returns early (as a killed process would) after stopAfter steps,
// when stopAfter > 0. The loader keeps the epoch: after a resume its next
// All continues the interrupted epoch, or starts the next one if the
// checkpoint was taken after an epoch's last batch.
func (r *resumeRun) loop(t *testing.T, path string, step, stopAfter int) {
	t.Helper()
	for r.loader.Epoch() < resumeEpochs {
		for batch := range r.loader.All() {
			r.opt.ZeroGrad()
			loss := r.model.Forward(autograd.New(batch[0])).Sub(autograd.New(batch[1])).Square().Mean(nil, false)
			require.NoError(t, loss.Backward())
			require.NoError(t, r.opt.Step())
			r.sched.Step()
			r.best = min(r.best, loss.Value().Item())
			step++
			require.NoError(t, train.SaveCheckpoint(path, r.checkpoint(step, r.loader.Epoch()-1)))
			if step == stopAfter {
				return
			}
		}
		require.NoError(t, r.loader.Err())
	}
	assert.Equal(t, resumeEpochs*resumeSamples/resumeBatch, step)
}

func snapshotValues(r *resumeRun) (params, optState map[string][]float64) {
	return values(nn.StateDict(r.model)), values(r.opt.StateDict())
}

// A run stopped mid-epoch and resumed from its checkpoint ends with the
// parameters and optimizer state of the run that never stopped, bit for
// bit.
func TestResumeIsBitIdentical(t *testing.T) {
	dir := t.TempDir()
	whole := newResumeRun(1)
	whole.loop(t, filepath.Join(dir, "whole.safetensors"), 0, 0)
	wantParams, wantOpt := snapshotValues(whole)

	path := filepath.Join(dir, "run.safetensors")
	for _, stopAfter := range []int{3, 8, 10} { // mid-epoch, mid-epoch after warm-up, at an epoch's end
		first := newResumeRun(1)
		first.loop(t, path, 0, stopAfter)

		resumed := newResumeRun(99) // other weights and dropout seed: the checkpoint replaces them
		ckpt := resumed.checkpoint(0, 0)
		require.NoError(t, train.LoadCheckpoint(path, ckpt))
		require.Equal(t, stopAfter, ckpt.Step)
		require.Equal(t, (stopAfter-1)/(resumeSamples/resumeBatch), ckpt.Epoch)
		require.Equal(t, first.best, resumed.best)
		resumed.loop(t, path, ckpt.Step, 0)

		gotParams, gotOpt := snapshotValues(resumed)
		assert.Equal(t, wantParams, gotParams, "parameters after resuming at step %d", stopAfter)
		assert.Equal(t, wantOpt, gotOpt, "optimizer state after resuming at step %d", stopAfter)
		assert.Equal(t, whole.sched.LastLR(), resumed.sched.LastLR())
		assert.Equal(t, whole.best, resumed.best)
	}
}

// The test above can fail: resuming with the dropout generator left as it
// was (as before generators had a state) diverges.
func TestResumeWithoutGeneratorStateDiverges(t *testing.T) {
	dir := t.TempDir()
	whole := newResumeRun(1)
	whole.loop(t, filepath.Join(dir, "whole.safetensors"), 0, 0)
	wantParams, _ := snapshotValues(whole)

	path := filepath.Join(dir, "run.safetensors")
	first := newResumeRun(1)
	first.loop(t, path, 0, 8)
	resumed := newResumeRun(1)
	ckpt := resumed.checkpoint(0, 0)
	require.NoError(t, train.LoadCheckpoint(path, ckpt))
	nn.SetGenerators(resumed.model, tensor.NewGenerator(2)) // dropout restarted from its seed
	resumed.loop(t, path, ckpt.Step, 0)
	gotParams, _ := snapshotValues(resumed)
	assert.NotEqual(t, wantParams, gotParams)
}
