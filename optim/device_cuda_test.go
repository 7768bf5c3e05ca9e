//go:build cuda

package optim_test

import (
	"testing"

	"github.com/emberml/ember/cuda"
	"github.com/emberml/ember/tensor"
)

// TestTrainOnCUDA trains the models of TestTrainOnEmulatedDevice on the
// first GPU, moved there with nn.ToDevice, and checks that they end where
// CPU training ends, to rounding.
func TestTrainOnCUDA(t *testing.T) {
	d, err := cuda.Device(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	for _, dm := range deviceModels() {
		for _, o := range deviceOptimizers {
			t.Run(dm.name+"/"+o.name, func(t *testing.T) {
				wantSD, wantLoss := train(t, dm, o.make, tensor.CPU, nil)
				gotSD, gotLoss := train(t, dm, o.make, d, nil)
				requireSameTraining(t, d, wantSD, gotSD, wantLoss, gotLoss, 1e-4)
			})
		}
	}
}
