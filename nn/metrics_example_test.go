package nn_test

import (
	"fmt"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Stream two evaluation batches of logits through several metrics at once.
func ExampleMetric() {
	metrics := map[string]nn.Metric{
		"accuracy": nn.NewAccuracy(3),
		"macro F1": nn.NewF1(3, nn.AverageMacro),
		"top-2":    nn.NewTopKAccuracy(2),
	}
	batches := []struct{ logits, labels *tensor.Tensor }{
		{tensor.FromSlice([]float64{2, 1, 0, 0, 3, 1, 1, 0, 2}, 3, 3), tensor.FromSlice([]int64{0, 1, 1}, 3)},
		{tensor.FromSlice([]float64{0, 1, 2, 3, 0, 1}, 2, 3), tensor.FromSlice([]int64{2, 0}, 2)},
	}
	for _, b := range batches {
		for _, m := range metrics {
			m.Update(b.logits, b.labels)
		}
	}
	for _, name := range []string{"accuracy", "macro F1", "top-2"} {
		fmt.Printf("%s: %.3f\n", name, metrics[name].Compute())
	}
	// Output:
	// accuracy: 0.800
	// macro F1: 0.778
	// top-2: 0.800
}
