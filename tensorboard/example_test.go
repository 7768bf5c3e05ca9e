package tensorboard_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard"
)

// Log a training run, then read its scalars back.
func Example() {
	dir, err := os.MkdirTemp("", "runs")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	run := filepath.Join(dir, "mlp")

	w, err := tensorboard.NewWriter(run, tensorboard.Options{})
	if err != nil {
		panic(err)
	}
	for epoch := range 3 {
		w.AddScalar("train/loss", 1/float64(epoch+1), int64(epoch))
	}
	w.AddHistogram("weights", tensor.FromSlice([]float32{-1, 0, 0.5, 1}, 4), 2)
	w.AddText("notes", "learning rate **0.1**", 0)
	if err := w.Close(); err != nil {
		panic(err)
	}

	scalars, err := tensorboard.ReadScalars(dir)
	if err != nil {
		panic(err)
	}
	for _, p := range scalars["mlp"]["train/loss"] {
		fmt.Printf("step %d: %.3f\n", p.Step, p.Value)
	}
	// Output:
	// step 0: 1.000
	// step 1: 0.500
	// step 2: 0.333
}
