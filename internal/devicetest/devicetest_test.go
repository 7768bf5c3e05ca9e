package devicetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/tensor"
)

func TestRegisterIsIdempotent(t *testing.T) {
	devicetest.Register()
	devicetest.Register()
	d := devicetest.Device(2)
	assert.Equal(t, tensor.Device("emul:2"), d)
	b, err := tensor.BackendFor(d)
	require.NoError(t, err)
	assert.Equal(t, d, b.Device())
	assert.Same(t, b, devicetest.Open(d))
	assert.Panics(t, func() { devicetest.Open(tensor.CPU) })
}

func TestBuffersAreNotCPUBuffers(t *testing.T) {
	d := devicetest.Device(3)
	b := devicetest.Open(d)
	b.ResetCounters()
	x, err := tensor.FromSlice([]float32{1, 2, 3}).ToDevice(d)
	require.NoError(t, err)
	buf, ok := x.Buffer().(*devicetest.Buffer)
	require.True(t, ok, "buffer is a %T", x.Buffer())
	assert.Equal(t, d, buf.Device())
	assert.Equal(t, 3, buf.Len())
	_, host := tensor.HostData(x)
	assert.False(t, host, "HostData must not see into device memory")

	toHost, fromHost := b.Transfers()
	assert.EqualValues(t, 0, toHost)
	assert.EqualValues(t, 1, fromHost)
	assert.Equal(t, []float32{2, 4, 6}, x.MulScalar(2).Float32s())
	toHost, _ = b.Transfers()
	assert.EqualValues(t, 1, toHost)
	assert.Positive(t, b.Allocs())

	cpuBuf := tensor.Zeros([]int{3}).Buffer()
	other, err := tensor.FromSlice([]float32{1, 2, 3}).ToDevice(devicetest.Device(4))
	require.NoError(t, err)
	l := x.Layout()
	assert.PanicsWithValue(t, "devicetest: Copy on emul:3 was given a *tensor.cpuBuffer, not memory of this device (a tensor on another device reached the kernel)",
		func() { b.Copy(x.Buffer(), cpuBuf, l) })
	assert.PanicsWithValue(t, "devicetest: Copy on emul:3 was given a buffer of emul:4",
		func() { b.Copy(x.Buffer(), other.Buffer(), l) })
	b.ResetCounters()
	toHost, fromHost = b.Transfers()
	assert.Zero(t, toHost+fromHost+b.Allocs())
}
