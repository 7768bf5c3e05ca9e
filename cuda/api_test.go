package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// TestAPIWithoutDevice checks, in both builds, that on a machine without a
// usable GPU every function returns an error wrapping ErrNoDevice and none
// panics.
func TestAPIWithoutDevice(t *testing.T) {
	if d, err := Device(0); err == nil {
		t.Skipf("a CUDA device is present (%s)", d)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Device", func() error { _, err := Device(0); return err }},
		{"Device(-1)", func() error { _, err := Device(-1); return err }},
		{"Device(1000)", func() error { _, err := Device(1000); return err }},
		{"DeviceCount", func() error { _, err := DeviceCount(); return err }},
		{"Info", func() error { _, err := Info(0); return err }},
		{"MemoryStats", func() error { _, err := MemoryStats(0); return err }},
		{"ResetPeakMemory", func() error { return ResetPeakMemory(0) }},
		{"EmptyCache", func() error { return EmptyCache(0) }},
		{"Synchronize", func() error { return Synchronize(0) }},
		{"SetAllowTF32", func() error { return SetAllowTF32(0, true) }},
		{"SetGCPercent", func() error { return SetGCPercent(0, 20) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = c.call() })
			require.ErrorIs(t, err, ErrNoDevice)
			assert.NotEmpty(t, err.Error())
		})
	}
}

func TestDeviceCountZeroOnError(t *testing.T) {
	n, err := DeviceCount()
	if err != nil {
		assert.Zero(t, n)
		assert.ErrorIs(t, err, ErrNoDevice)
		return
	}
	assert.Positive(t, n)
}

// TestTensorLookupWithoutDevice checks that tensor's device lookup fails
// cleanly (it goes through the registration in a cuda build).
func TestTensorLookupWithoutDevice(t *testing.T) {
	if _, err := Device(0); err == nil {
		t.Skip("a CUDA device is present")
	}
	var err error
	require.NotPanics(t, func() { _, err = tensor.BackendFor(tensor.CUDA(0)) })
	require.Error(t, err)
	_, err = tensor.FromSlice([]float32{1}, 1).ToDevice(tensor.CUDA(0))
	require.Error(t, err)
}
