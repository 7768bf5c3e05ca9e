package main

import (
	"fmt"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard"
)

// runLog writes the run for TensorBoard when -logdir is given; its methods
// do nothing otherwise.
type runLog struct {
	w *tensorboard.Writer
}

// newRunLog opens a TensorBoard run in logdir ("" for none) and logs the
// model's graph, traced on example, and a grid of the batch's images.
func newRunLog(logdir string, model nn.Module, example, images *tensor.Tensor) (*runLog, error) {
	if logdir == "" {
		return &runLog{}, nil
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
	return &runLog{w: w}, nil
}

// epoch logs an epoch's mean training loss, test accuracy and a histogram
// of every parameter.
func (l *runLog) epoch(model nn.Module, epoch int, loss, acc float64) {
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

// close logs the hyperparameters with the final accuracy and closes the
// run.
func (l *runLog) close(hparams map[string]any, acc float64) error {
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
