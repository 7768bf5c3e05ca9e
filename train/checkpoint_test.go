package train_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

// runInfo is the typed metadata the tests store.
type runInfo struct {
	BestLoss float64  `json:"best_loss"`
	Notes    []string `json:"notes"`
}

// setup is what a training program builds before its loop: the same code
// builds it for the first run and for the resumed one.
type setup struct {
	model   *nn.Sequential
	opt     *optim.Adam
	sched   optim.Scheduler
	augment *tensor.Generator
	info    runInfo
}

// newSetup builds a small model (with dropout) seeded by seed, AdamW and a
// warm-up + cosine schedule.
func newSetup(seed uint64, hidden int) *setup {
	g := tensor.NewGenerator(seed)
	model := nn.NewSequential(
		nn.NewLinear(g, 4, hidden, true),
		nn.NewDropout(0.25, tensor.NewGenerator(seed+1)),
		nn.NewLinear(g, hidden, 2, true),
	)
	opt := optim.NewAdamW(model.Parameters(), optim.AdamOptions{LR: 0.01, WeightDecay: 0.01})
	warm := optim.NewLinearWarmup(opt, 3, 0.1)
	cosine := optim.NewCosineAnnealingLR(opt, 10, 0)
	return &setup{
		model:   model,
		opt:     opt,
		sched:   optim.NewSequentialLR([]optim.Scheduler{warm, cosine}, []int{3}),
		augment: tensor.NewGenerator(seed + 2),
	}
}

func (s *setup) checkpoint(step, epoch int) *train.Checkpoint {
	return &train.Checkpoint{
		Model:      s.model,
		Optimizers: map[string]train.Stateful{"adamw": s.opt},
		Schedulers: map[string]train.Stateful{"lr": s.sched},
		Generators: map[string]*tensor.Generator{"augment": s.augment},
		Step:       step,
		Epoch:      epoch,
		Metadata:   &s.info,
	}
}

// trainSteps runs steps of training on batches drawn from s.augment.
func (s *setup) trainSteps(t *testing.T, steps int) {
	t.Helper()
	for range steps {
		x := autograd.New(s.augment.Randn([]int{8, 4}))
		y := autograd.New(s.augment.Randn([]int{8, 2}))
		s.opt.ZeroGrad()
		loss := s.model.Forward(x).Sub(y).Square().Mean(nil, false)
		require.NoError(t, loss.Backward())
		require.NoError(t, s.opt.Step())
		s.sched.Step()
	}
}

func values(sd map[string]*tensor.Tensor) map[string][]float64 {
	out := map[string][]float64{}
	for k, t := range sd {
		out[k] = t.Float64s()
	}
	return out
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	a := newSetup(1, 16)
	a.trainSteps(t, 5)
	a.info = runInfo{BestLoss: 0.25, Notes: []string{"warm-up done"}}
	stopA := train.NewEarlyStopping(train.Min, 3, 0)
	stopA.Observe(0.5)
	stopA.Observe(0.6)
	ckptA := a.checkpoint(5, 2)
	ckptA.Extra = map[string]train.Stateful{"early_stopping": stopA}
	require.NoError(t, train.SaveCheckpoint(path, ckptA))

	b := newSetup(7, 16) // other weights and generator states, overwritten
	stopB := train.NewEarlyStopping(train.Min, 3, 0)
	ckpt := b.checkpoint(0, 0)
	ckpt.Extra = map[string]train.Stateful{"early_stopping": stopB}
	require.NoError(t, train.LoadCheckpoint(path, ckpt))
	assert.Equal(t, values(stopA.StateDict()), values(stopB.StateDict()))
	assert.Equal(t, 1, stopB.Stale())
	assert.Equal(t, 5, ckpt.Step)
	assert.Equal(t, 2, ckpt.Epoch)
	assert.Equal(t, runInfo{BestLoss: 0.25, Notes: []string{"warm-up done"}}, b.info)
	assert.Equal(t, values(nn.StateDict(a.model)), values(nn.StateDict(b.model)))
	assert.Equal(t, values(a.opt.StateDict()), values(b.opt.StateDict()))
	assert.Equal(t, values(a.sched.StateDict()), values(b.sched.StateDict()))
	assert.Equal(t, a.augment.Uint64(), b.augment.Uint64())
	dropA := a.model.Children()[1].Module.(*nn.Dropout).Generator()
	dropB := b.model.Children()[1].Module.(*nn.Dropout).Generator()
	assert.Equal(t, dropA.Uint64(), dropB.Uint64(), "the model's dropout generator is restored too")
}

// loadFails loads data into a fresh setup and returns the error, checking
// that the setup was left as it was.
func loadFails(t *testing.T, data []byte) error {
	t.Helper()
	s := newSetup(3, 16)
	before := values(nn.StateDict(s.model))
	beforeOpt := values(s.opt.StateDict())
	var err error
	require.NotPanics(t, func() { err = train.ReadCheckpoint(bytes.NewReader(data), s.checkpoint(0, 0)) })
	require.Error(t, err)
	assert.Equal(t, before, values(nn.StateDict(s.model)), "a failed load leaves the model alone")
	assert.Equal(t, beforeOpt, values(s.opt.StateDict()), "and the optimizer")
	assert.Equal(t, runInfo{}, s.info)
	return err
}

func savedBytes(t *testing.T, s *setup) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, train.WriteCheckpoint(&buf, s.checkpoint(4, 1)))
	return buf.Bytes()
}

func TestTruncatedCheckpoints(t *testing.T) {
	s := newSetup(1, 16)
	s.trainSteps(t, 2)
	data := savedBytes(t, s)
	for _, n := range []int{0, 1, 7, 8, 9, 20, 100, len(data) / 2, len(data) - 4, len(data) - 1} {
		err := loadFails(t, data[:n])
		assert.Contains(t, err.Error(), "not a readable checkpoint", "truncated to %d bytes", n)
	}
	path := filepath.Join(t.TempDir(), "cut.safetensors")
	require.NoError(t, os.WriteFile(path, data[:len(data)-1], 0o644))
	err := train.LoadCheckpoint(path, s.checkpoint(0, 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "train.LoadCheckpoint: "+path)
	err = train.LoadCheckpoint(filepath.Join(t.TempDir(), "absent"), s.checkpoint(0, 0))
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

// withHeader returns data with its JSON header rewritten by edit.
func withHeader(t *testing.T, data []byte, edit func(string) string) []byte {
	t.Helper()
	n := binary.LittleEndian.Uint64(data)
	head := edit(string(data[8 : 8+n]))
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(head)))
	out = append(out, head...)
	return append(out, data[8+n:]...)
}

func TestMalformedCheckpointHeaders(t *testing.T) {
	data := savedBytes(t, newSetup(1, 16))
	key := `"ember.train.checkpoint":"`
	tests := []struct {
		name, want string
		edit       func(string) string
	}{
		{"plain safetensors", "not a training checkpoint", func(h string) string {
			return strings.Replace(h, key, `"something.else":"`, 1)
		}},
		{"broken JSON", "malformed", func(h string) string {
			return strings.Replace(h, key+`{`, key+`[`, 1)
		}},
		{"newer layout", "layout version 2", func(h string) string {
			return strings.Replace(h, `\"version\":1`, `\"version\":2`, 1)
		}},
		{"generator state", `generator "augment"`, func(h string) string {
			i := strings.Index(h, `\"augment\":\"`) + len(`\"augment\":\"`)
			return h[:i] + "AAAA" + h[i+4:]
		}},
		{"metadata of another type", "metadata", func(h string) string {
			return strings.Replace(h, `\"best_loss\":0`, `\"best_loss\":\"zero\"`, 1)
		}},
		{"missing optimizer", `optimizers["adamw"]`, func(h string) string {
			return strings.Replace(h, `\"optimizers\":[\"adamw\"]`, `\"optimizers\":[]`, 1)
		}},
		{"shape of a tensor", "shape", func(h string) string {
			return strings.Replace(h, `"model.0.bias":{"dtype":"F32","shape":[16]`, `"model.0.bias":{"dtype":"F32","shape":[8,2]`, 1)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			edited := withHeader(t, data, tc.edit)
			require.NotEqual(t, data, edited, "the edit must apply")
			err := loadFails(t, edited)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCheckpointNamesTheFirstMismatchingKey(t *testing.T) {
	data := savedBytes(t, newSetup(1, 16))
	wider := newSetup(2, 32)
	err := train.ReadCheckpoint(bytes.NewReader(data), wider.checkpoint(0, 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"0.weight" has shape [16 4] in the checkpoint, [32 4] in the model (and 2 more differences)`)

	g := tensor.NewGenerator(1)
	deeper := newSetup(1, 16)
	deeper.model.Append(nn.NewLinear(g, 2, 2, true))
	err = train.ReadCheckpoint(bytes.NewReader(data), deeper.checkpoint(0, 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"3.weight" is missing from the checkpoint`)
}

func TestCheckpointPartsMustMatch(t *testing.T) {
	s := newSetup(1, 16)
	data := savedBytes(t, s)
	ckpt := s.checkpoint(0, 0)
	ckpt.Schedulers = nil
	err := train.ReadCheckpoint(bytes.NewReader(data), ckpt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the checkpoint holds schedulers["lr"]`)

	ckpt = s.checkpoint(0, 0)
	ckpt.Generators["extra"] = tensor.NewGenerator(0)
	err = train.ReadCheckpoint(bytes.NewReader(data), ckpt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `names generators["extra"], which the checkpoint does not hold`)

	ckpt = s.checkpoint(0, 0)
	ckpt.Optimizers["a.b"] = s.opt
	err = train.WriteCheckpoint(&bytes.Buffer{}, ckpt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `optimizers name "a.b" contains a dot`)

	ckpt = s.checkpoint(0, 0)
	ckpt.Metadata = runInfo{} // not a pointer: cannot be loaded into
	err = train.ReadCheckpoint(bytes.NewReader(data), ckpt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "non-nil pointer")
}

// refusing is a part whose state dict is never accepted.
type refusing struct{}

func (refusing) StateDict() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{"x": tensor.ScalarOf(1.0, tensor.Float64)}
}

func (refusing) LoadStateDict(map[string]*tensor.Tensor) error { return errors.New("refused") }

// A part that refuses its state after others took theirs rolls them back.
func TestCheckpointRollsBackOnRefusal(t *testing.T) {
	s := newSetup(1, 16)
	s.trainSteps(t, 3)
	ckpt := s.checkpoint(3, 0)
	ckpt.Schedulers["zz"] = refusing{} // loaded after the optimizer
	var buf bytes.Buffer
	require.NoError(t, train.WriteCheckpoint(&buf, ckpt))

	fresh := newSetup(5, 16)
	before := values(fresh.opt.StateDict())
	ckpt = fresh.checkpoint(0, 0)
	ckpt.Schedulers["zz"] = refusing{}
	err := train.ReadCheckpoint(&buf, ckpt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `schedulers["zz"]: refused`)
	assert.Equal(t, before, values(fresh.opt.StateDict()), "the optimizer got its state back")
	assert.Equal(t, 0, ckpt.Step)
}
