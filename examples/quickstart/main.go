// Command quickstart trains a small convolutional network on the UCI 8×8
// handwritten digits, which are embedded in the binary, and reports its
// accuracy on a held-out fifth of them.
//
// It shows the whole loop an Ember user writes: build a model from nn layers,
// batch a dataset with data.Loader, run forward, loss and backward through
// autograd, step an optim optimizer, then save the trained weights as a
// safetensors checkpoint and load them into a fresh model, and finally export
// the model to ONNX and check that Ember's ONNX importer predicts the same.
//
//	go run ./examples/quickstart
//
// With -logdir DIR it also writes a TensorBoard run there: the model's
// graph, a grid of a training batch, the training loss and test accuracy
// per epoch, a histogram of every parameter per epoch, and the run's
// hyperparameters with its final accuracy.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/data"
	"github.com/emberml/ember/examples/internal/runlog"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

const (
	epochs    = 15
	batchSize = 32
	seed      = 42
	// learningRate is Adam's step size.
	learningRate = 3e-3
)

func main() {
	logdir := flag.String("logdir", "", "write a TensorBoard run to this folder")
	flag.Parse()
	if err := run(*logdir); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// newModel builds the network: two 3×3 convolutions with max pooling, then
// two fully connected layers. Images are [N, 1, 8, 8].
func newModel(g *tensor.Generator) *nn.Sequential {
	same := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	return nn.NewSequential(
		nn.NewConv2d(g, 1, 16, [2]int{3, 3}, same, true), // 16×8×8
		nn.NewReLU(),
		nn.NewMaxPool2d(pool), // 16×4×4
		nn.NewConv2d(g, 16, 32, [2]int{3, 3}, same, true), // 32×4×4
		nn.NewReLU(),
		nn.NewMaxPool2d(pool), // 32×2×2
		nn.NewFlatten(1, -1),
		nn.NewLinear(g, 32*2*2, 64, true),
		nn.NewReLU(),
		nn.NewLinear(g, 64, 10, true),
	)
}

func run(logdir string) error {
	images, labels, err := loadDigits()
	if err != nil {
		return err
	}
	n := len(labels)
	all := data.NewTensorDataset(
		tensor.FromSlice(images, n, 1, 8, 8),
		tensor.FromSlice(labels, n),
	)
	g := tensor.NewGenerator(seed)
	parts := data.RandomSplit(all, []float64{0.8, 0.2}, g)
	train, test := parts[0], parts[1]
	fmt.Printf("digits: %d training and %d test images\n", train.Len(), test.Len())

	model := newModel(g)
	lossFn := nn.NewCrossEntropyLoss()
	opt := optim.NewAdam(model.Parameters(), optim.AdamOptions{LR: learningRate})
	loader := data.NewLoader(train, data.LoaderOptions{BatchSize: batchSize, Shuffle: true, Seed: seed})
	first := test.Get(0)[0].Unsqueeze(0)
	var shown *tensor.Tensor
	for batch := range data.NewLoader(test, data.LoaderOptions{BatchSize: batchSize}).All() {
		shown = batch[0]
		break
	}
	runLog, err := runlog.New(logdir, model, first, shown)
	if err != nil {
		return err
	}

	for epoch := range epochs {
		start := time.Now()
		model.Train(true)
		var sum float64
		var batches int
		for batch := range loader.Batches(epoch) {
			x, y := autograd.New(batch[0]), batch[1]
			opt.ZeroGrad()
			loss := lossFn.Forward(model.Forward(x), y)
			if err := loss.Backward(); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			sum += loss.Item()
			batches++
		}
		acc := accuracy(model, test)
		runLog.Epoch(model, epoch, sum/float64(batches), acc)
		fmt.Printf("epoch %2d  loss %.4f  test accuracy %.4f  (%v)\n",
			epoch+1, sum/float64(batches), acc, time.Since(start).Round(time.Millisecond))
	}

	// Save a checkpoint, load it into a freshly initialized model, and make
	// sure the reloaded model predicts exactly what the trained one does.
	dir, err := os.MkdirTemp("", "ember-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "digits-cnn.safetensors")
	if err := nn.SaveSafetensors(path, model); err != nil {
		return err
	}
	fresh := newModel(tensor.NewGenerator(seed + 1))
	if err := nn.LoadSafetensors(path, fresh); err != nil {
		return err
	}
	if err := samePredictions(model, fresh, test); err != nil {
		return err
	}
	fmt.Printf("checkpoint %s reloaded: predictions match\n", filepath.Base(path))
	onnxPath := filepath.Join(dir, "digits-cnn.onnx")
	if err := exportONNX(fresh, test, onnxPath); err != nil {
		return err
	}
	fmt.Printf("exported %s (opset %d, dynamic batch) and ran it with Ember's ONNX import: predictions match\n", filepath.Base(onnxPath), onnx.DefaultExportOpset)
	acc := accuracy(fresh, test)
	hparams := map[string]any{"epochs": epochs, "batch_size": batchSize, "lr": learningRate, "optimizer": "adam", "seed": seed}
	if err := runLog.Close(hparams, acc); err != nil {
		return err
	}
	fmt.Printf("test accuracy: %.4f\n", acc)
	return nil
}

// predict returns the predicted classes of the whole dataset in eval mode.
func predict(m nn.Module, ds data.Dataset) (pred, want []int64) {
	m.Train(false)
	loader := data.NewLoader(ds, data.LoaderOptions{BatchSize: 256})
	for batch := range loader.All() {
		logits := m.Forward(autograd.New(batch[0])).Value()
		pred = append(pred, logits.ArgMax(1, false).Int64s()...)
		want = append(want, batch[1].Int64s()...)
	}
	return pred, want
}

func accuracy(m nn.Module, ds data.Dataset) float64 {
	pred, want := predict(m, ds)
	correct := 0
	for i := range pred {
		if pred[i] == want[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(pred))
}

func samePredictions(a, b nn.Module, ds data.Dataset) error {
	pa, _ := predict(a, ds)
	pb, _ := predict(b, ds)
	for i := range pa {
		if pa[i] != pb[i] {
			return fmt.Errorf("reloaded model predicts %d for test image %d, trained model %d", pb[i], i, pa[i])
		}
	}
	return nil
}

// exportONNX writes m as an ONNX model with a dynamic batch axis, loads it
// back with Ember's ONNX import and checks that it predicts what m does on
// every test image.
func exportONNX(m nn.Module, ds data.Dataset, path string) error {
	example := ds.Get(0)[0].Unsqueeze(0)
	dyn := map[string]map[int]string{"input_0": {0: "batch"}, "output_0": {0: "batch"}}
	if err := onnx.ExportFile(path, m, []*tensor.Tensor{example}, onnx.ExportOptions{DynamicAxes: dyn}); err != nil {
		return err
	}
	model, err := onnx.Load(path)
	if err != nil {
		return err
	}
	sess, err := model.NewSession(onnx.SessionOptions{})
	if err != nil {
		return err
	}
	want, _ := predict(m, ds)
	var got []int64
	loader := data.NewLoader(ds, data.LoaderOptions{BatchSize: 256})
	for batch := range loader.All() {
		out, err := sess.Run(context.Background(), map[string]*tensor.Tensor{"input_0": batch[0]})
		if err != nil {
			return err
		}
		got = append(got, out["output_0"].ArgMax(1, false).Int64s()...)
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("the ONNX model predicts %d for test image %d, the Ember model %d", got[i], i, want[i])
		}
	}
	return nil
}
