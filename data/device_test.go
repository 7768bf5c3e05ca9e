package data_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/tensor"
)

// perSample hides a dataset's GetBatch so that the loader stacks samples.
type perSample struct{ ds data.Dataset }

func (p perSample) Len() int                   { return p.ds.Len() }
func (p perSample) Get(i int) []*tensor.Tensor { return p.ds.Get(i) }

// TestLoaderOnEmulatedDevice checks that a dataset held on a device yields
// batches on that device, equal to the CPU's, for batched and per-sample
// datasets alike.
func TestLoaderOnEmulatedDevice(t *testing.T) {
	d := devicetest.Device(0)
	x := tensor.Arange(0, 20, 1, tensor.Float32).Reshape(10, 2)
	y := tensor.Arange(0, 10, 1)
	xd, err := x.ToDevice(d)
	require.NoError(t, err)
	yd, err := y.ToDevice(d)
	require.NoError(t, err)
	opts := data.LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 3}
	cpu := data.NewTensorDataset(x, y)
	dev := data.NewTensorDataset(xd, yd)
	for name, ds := range map[string]data.Dataset{"batched": dev, "per-sample": perSample{dev}} {
		t.Run(name, func(t *testing.T) {
			var want [][]*tensor.Tensor
			for b := range data.NewLoader(cpu, opts).Batches(0) {
				want = append(want, b)
			}
			i := 0
			for b := range data.NewLoader(ds, opts).Batches(0) {
				require.Less(t, i, len(want))
				for k := range b {
					assert.Equal(t, d, b[k].Device())
					assert.Equal(t, want[i][k].Float64s(), b[k].Float64s())
				}
				i++
			}
			assert.Equal(t, len(want), i)
		})
	}
}
