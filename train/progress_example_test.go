package train_test

import (
	"fmt"
	"os"
	"time"

	"github.com/emberml/ember/train"
)

func ExampleProgress() {
	// A fixed clock makes the output reproducible; real loops leave Now nil.
	clock := time.Unix(0, 0)
	p := train.NewProgress(os.Stdout, 100, train.ProgressOptions{
		Label: "epoch 1/5",
		Style: train.Lines, // the Auto default redraws in place on a terminal
		Now:   func() time.Time { return clock },
	})
	for step := 1; step <= 100; step++ {
		clock = clock.Add(20 * time.Millisecond) // one training step
		p.Update(step, train.Metric{Name: "loss", Value: 1 / float64(step)})
	}
	p.Finish(train.Metric{Name: "val_acc", Value: 0.91})
	// Output:
	// epoch 1/5  1/100  1%  50.0 it/s  ETA 2.0s  loss 1
	// epoch 1/5  100/100  100%  50.0 it/s  2.0s  loss 0.01
	// epoch 1/5  100/100  100%  50.0 it/s  2.0s  val_acc 0.91
}

func ExampleEarlyStopping() {
	stop := train.NewEarlyStopping(train.Min, 2, 0.001)
	for epoch, valLoss := range []float64{0.9, 0.7, 0.65, 0.66, 0.651, 0.64} {
		if stop.Observe(valLoss) {
			fmt.Printf("epoch %d: new best %.3f (save the model here)\n", epoch, valLoss)
		}
		if stop.ShouldStop() {
			fmt.Printf("epoch %d: no improvement for 2 epochs, stopping\n", epoch)
			break
		}
	}
	// Output:
	// epoch 0: new best 0.900 (save the model here)
	// epoch 1: new best 0.700 (save the model here)
	// epoch 2: new best 0.650 (save the model here)
	// epoch 4: no improvement for 2 epochs, stopping
}

func ExampleMetricsLog() {
	log := train.NewMetricsLog(os.Stdout) // train.OpenMetricsLog("metrics.csv") for a file
	for epoch := 1; epoch <= 2; epoch++ {
		log.Log(train.Metric{Name: "epoch", Value: float64(epoch)}, train.Metric{Name: "loss", Value: 1 / float64(epoch)})
	}
	// Output:
	// epoch,loss
	// 1,1
	// 2,0.5
}
