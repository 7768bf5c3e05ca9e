// Package runlog is the TensorBoard logging that the quickstart and MNIST
// examples share: the graph, a batch of images, per-epoch scalars and
// parameter histograms, and the run's hyperparameters.
package runlog

import (
	"fmt"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard"
)

// Log writes a run for TensorBoard when a log directory is given; its
// methods do nothing otherwise.
type Log struct {
	w *tensorboard.Writer
}

// New opens a TensorBoard run in logdir ("" for none) and logs the
// model's graph, traced on example, and a grid of the batch's images.
func New(logdir string, model nn.Module, example, images *tensor.Tensor) (*Log, error) {
	if logdir == "" {
		return &Log{}, nil
	}
	w, err := tensorboard.NewWriter(logdir, tensorboard.Options{})
	if err != nil {
		return nil, err
	}
	if err := w.AddGraph(model, example); err != nil {
		w.Close()
		return nil, err
	}
	w.AddImageGrid("train/batch", images, 8, 0)
	return &Log{w: w}, nil
}

// Epoch logs an epoch's mean training loss, test accuracy and a histogram
// of every parameter.
func (l *Log) Epoch(model nn.Module, epoch int, loss, acc float64) {
	if l.w == nil {
		return
	}
	step := int64(epoch + 1)
	l.w.AddScalar("train/loss", loss, step)
	l.w.AddScalar("test/accuracy", acc, step)
	for _, p := range model.NamedParameters() {
		l.w.AddHistogram("params/"+p.Name, p.Param.Value(), step)
	}
}

// Close logs the hyperparameters with the final accuracy and closes the
// run.
func (l *Log) Close(hparams map[string]any, acc float64) error {
	if l.w == nil {
		return nil
	}
	if err := l.w.AddHParams(hparams, map[string]float64{"hparam/test_accuracy": acc}); err != nil {
		l.w.Close()
		return err
	}
	if err := l.w.Close(); err != nil {
		return err
	}
	fmt.Printf("TensorBoard run written to %s (tensorboard --logdir %s)\n", l.w.LogDir(), l.w.LogDir())
	return nil
}
