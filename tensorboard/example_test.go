package tensorboard_test

import (
	"errors"
	"fmt"
	"io"
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

// Read an event file record by record; damaged records are reported with
// their offset.
func ExampleNewReader() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	w, err := tensorboard.NewWriter(dir, tensorboard.Options{})
	if err != nil {
		panic(err)
	}
	w.AddScalar("loss", 0.5, 10)
	if err := w.Close(); err != nil {
		panic(err)
	}

	f, err := os.Open(w.Path())
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r := tensorboard.NewReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var bad *tensorboard.CorruptionError
		if errors.As(err, &bad) {
			fmt.Println("damaged at offset", bad.Offset)
			return
		} else if err != nil {
			panic(err)
		}
		if ev.FileVersion != "" {
			fmt.Println("file version", ev.FileVersion)
		}
		for _, v := range ev.Values {
			fmt.Printf("step %d %s=%g (%s)\n", ev.Step, v.Tag, v.Scalar, v.Plugin)
		}
	}
	// Output:
	// file version brain.Event:2
	// step 10 loss=0.5 (scalars)
}
