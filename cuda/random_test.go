//go:build cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// The device mask is exactly the one tensor.PhiloxUniform defines, for odd
// lengths (partial last Philox block) and both dtypes.
func TestGPUDropoutMaskMatchesPhilox(t *testing.T) {
	b := gpu(t)
	for _, n := range []int{1, 3, 4, 5, 67, 1<<16 + 3} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			const keep, seed = 0.7, 0x1234_5678_9abc_def0
			scale := 1 / keep
			dst := b.Alloc(dt, n)
			b.DropoutMask(dst, keep, scale, seed)
			got := b.ToHost(dst, tensor.Layout{Shape: []int{n}, Strides: []int{1}})
			for i := range n {
				want := 0.0
				if tensor.PhiloxUniform(seed, int64(i)) < keep {
					want = scale
				}
				switch g := got.(type) {
				case []float32:
					require.Equal(t, float32(want), g[i], "n=%d i=%d", n, i)
				case []float64:
					require.Equal(t, want, g[i], "n=%d i=%d", n, i)
				}
			}
		}
	}
}

// Dropout through the tensor API draws on the device: no host transfer,
// reproducible from the generator's seed.
func TestGPUDropoutOnDevice(t *testing.T) {
	b := gpu(t)
	x, err := tensor.Ones([]int{64, 33}).ToDevice(b.Device())
	require.NoError(t, err)
	y1 := tensor.Dropout(x, 0.25, true, tensor.NewGenerator(9))
	y2 := tensor.Dropout(x, 0.25, true, tensor.NewGenerator(9))
	assert.Equal(t, b.Device(), y1.Device())
	assert.Equal(t, y1.Float32s(), y2.Float32s())
	zeros := 0
	for _, v := range y1.Float32s() {
		if v == 0 {
			zeros++
		} else {
			assert.InDelta(t, 1/0.75, v, 1e-6)
		}
	}
	assert.InDelta(t, 0.25, float64(zeros)/float64(64*33), 0.05)
}
