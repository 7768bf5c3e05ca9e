package train_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

// A training program saves everything it needs to resume with one call and
// restores it, into the objects the same code builds, with another.
func ExampleSaveCheckpoint() {
	type progress struct {
		BestAccuracy float64 `json:"best_accuracy"`
		Config       string  `json:"config"`
	}
	build := func(seed uint64) (nn.Module, optim.Optimizer, optim.Scheduler) {
		g := tensor.NewGenerator(seed)
		model := nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewDropout(0.1, g), nn.NewLinear(g, 8, 3, true))
		opt := optim.NewAdamW(model.Parameters(), optim.AdamOptions{LR: 1e-3, WeightDecay: 0.01})
		warm := optim.NewLinearWarmup(opt, 100, 0.01)
		cosine := optim.NewCosineAnnealingLR(opt, 900, 0)
		return model, opt, optim.NewSequentialLR([]optim.Scheduler{warm, cosine}, []int{100})
	}
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "last.safetensors")

	// The run: ... train, then at the end of an epoch:
	model, opt, sched := build(1)
	best := progress{BestAccuracy: 0.91, Config: "lr=1e-3"}
	err = train.SaveCheckpoint(path, &train.Checkpoint{
		Model:      model,
		Optimizers: map[string]train.Stateful{"adamw": opt},
		Schedulers: map[string]train.Stateful{"lr": sched},
		Step:       1200,
		Epoch:      3,
		Metadata:   best,
	})
	if err != nil {
		panic(err)
	}

	// The resumed run builds the same objects and loads into them.
	model2, opt2, sched2 := build(2)
	var restored progress
	ckpt := &train.Checkpoint{
		Model:      model2,
		Optimizers: map[string]train.Stateful{"adamw": opt2},
		Schedulers: map[string]train.Stateful{"lr": sched2},
		Metadata:   &restored,
	}
	if err := train.LoadCheckpoint(path, ckpt); err != nil {
		panic(err)
	}
	fmt.Println("resume at step", ckpt.Step, "epoch", ckpt.Epoch)
	fmt.Printf("%+v\n", restored)
	fmt.Println("same weights:", slices.Equal(nn.StateDict(model)["0.weight"].Float64s(), nn.StateDict(model2)["0.weight"].Float64s()))

	// A checkpoint of another architecture is refused, naming the key.
	_, _, sched3 := build(3)
	g := tensor.NewGenerator(3)
	wider := nn.NewSequential(nn.NewLinear(g, 4, 16, true), nn.NewDropout(0.1, g), nn.NewLinear(g, 16, 3, true))
	err = train.LoadCheckpoint(path, &train.Checkpoint{Model: wider,
		Optimizers: map[string]train.Stateful{"adamw": optim.NewAdamW(wider.Parameters(), optim.AdamOptions{})},
		Schedulers: map[string]train.Stateful{"lr": sched3}})
	fmt.Println(err.Error()[strings.Index(err.Error(), "the model"):])
	// Output:
	// resume at step 1200 epoch 3
	// {BestAccuracy:0.91 Config:lr=1e-3}
	// same weights: true
	// the model does not match the checkpoint: "0.weight" has shape [8 4] in the checkpoint, [16 4] in the model (and 2 more differences)
}

// WriteCheckpoint and ReadCheckpoint move a checkpoint through any stream:
// here a buffer, elsewhere a network connection or an object store.
func ExampleWriteCheckpoint() {
	g := tensor.NewGenerator(0)
	model := nn.NewLinear(g, 2, 2, true)
	augment := tensor.NewGenerator(42)
	var buf bytes.Buffer
	err := train.WriteCheckpoint(&buf, &train.Checkpoint{
		Model: model, Generators: map[string]*tensor.Generator{"augment": augment}, Step: 7,
	})
	if err != nil {
		panic(err)
	}
	next := augment.Uint64()

	restored := nn.NewLinear(tensor.NewGenerator(1), 2, 2, true)
	augment2 := tensor.NewGenerator(0)
	ckpt := &train.Checkpoint{Model: restored, Generators: map[string]*tensor.Generator{"augment": augment2}}
	if err := train.ReadCheckpoint(&buf, ckpt); err != nil {
		panic(err)
	}
	fmt.Println(ckpt.Step, augment2.Uint64() == next)
	// Output:
	// 7 true
}
