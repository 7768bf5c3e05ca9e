//go:build cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestDevicePointerRejectsHostTensors(t *testing.T) {
	cases := []struct {
		name string
		t    *tensor.Tensor
		want string
	}{
		{"nil", nil, "nil tensor"},
		{"cpu", tensor.FromSlice([]float32{1, 2, 3}, 3), "not on a CUDA device"},
		{"cpu view", tensor.FromSlice([]int64{1, 2, 3, 4}, 2, 2).T(), "not on a CUDA device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DevicePointer(c.t)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// interopDevice returns cuda:0, skipping the test when it cannot be opened.
func interopDevice(t *testing.T) tensor.Device {
	t.Helper()
	dev := tensor.CUDA(0)
	if _, err := tensor.BackendFor(dev); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	return dev
}

func TestDevicePointerOffsets(t *testing.T) {
	dev := interopDevice(t)
	cases := []struct {
		dt       tensor.DType
		elemSize uint64
	}{
		{tensor.Float32, 4}, {tensor.Float64, 8}, {tensor.Int64, 8}, {tensor.Int32, 4},
		{tensor.Bool, 1}, {tensor.Float16, 2}, {tensor.BFloat16, 2},
	}
	for _, c := range cases {
		t.Run(c.dt.String(), func(t *testing.T) {
			host := tensor.Zeros([]int{4, 6}, c.dt)
			x, err := host.ToDevice(dev)
			require.NoError(t, err)
			base, err := DevicePointer(x)
			require.NoError(t, err)
			require.Equal(t, x.Buffer().(*buffer).ptr, base)

			row, err := DevicePointer(x.Select(0, 2)) // contiguous, offset 12
			require.NoError(t, err)
			assert.Equal(t, base+12*c.elemSize, row)

			_, err = DevicePointer(x.T())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not contiguous")
		})
	}
}
