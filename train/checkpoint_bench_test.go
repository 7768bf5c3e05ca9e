package train_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

// benchCheckpoint is an 8.4M-parameter MLP (32 MiB of float32 weights)
// with AdamW's state after one step: a checkpoint of about 100 MiB.
func benchCheckpoint(b *testing.B) *train.Checkpoint {
	g := tensor.NewGenerator(1)
	model := nn.NewSequential()
	for range 8 {
		model.Append(nn.NewLinear(g, 1024, 1024, true))
	}
	opt := optim.NewAdamW(model.Parameters(), optim.AdamOptions{LR: 1e-3})
	opt.ZeroGrad()
	if err := model.Forward(autograd.New(g.Randn([]int{2, 1024}))).Mean(nil, false).Backward(); err != nil {
		b.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		b.Fatal(err)
	}
	return &train.Checkpoint{Model: model, Optimizers: map[string]train.Stateful{"adamw": opt}, Step: 1}
}

func BenchmarkSaveCheckpoint(b *testing.B) {
	ckpt := benchCheckpoint(b)
	path := filepath.Join(b.TempDir(), "ckpt.safetensors")
	for b.Loop() {
		if err := train.SaveCheckpoint(path, ckpt); err != nil {
			b.Fatal(err)
		}
	}
	if st, err := os.Stat(path); err == nil {
		b.SetBytes(st.Size())
	}
}

func BenchmarkLoadCheckpoint(b *testing.B) {
	ckpt := benchCheckpoint(b)
	path := filepath.Join(b.TempDir(), "ckpt.safetensors")
	if err := train.SaveCheckpoint(path, ckpt); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if err := train.LoadCheckpoint(path, ckpt); err != nil {
			b.Fatal(err)
		}
	}
}
