//go:build !cuda

package cuda

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// errNotBuilt is returned by every function of a build without -tags cuda.
var errNotBuilt = fmt.Errorf("%w: this binary was built without -tags cuda (rebuild with go build -tags cuda)", ErrNoDevice)

// Device opens CUDA device i and returns its name, tensor.CUDA(i). In this
// build (without -tags cuda) it always returns an error wrapping
// ErrNoDevice.
func Device(i int) (tensor.Device, error) { return "", errNotBuilt }

// DeviceCount returns the number of CUDA devices; in this build 0 and an
// error wrapping ErrNoDevice.
func DeviceCount() (int, error) { return 0, errNotBuilt }

// Info describes device i; in this build it returns an error wrapping
// ErrNoDevice.
func Info(i int) (DeviceInfo, error) { return DeviceInfo{}, errNotBuilt }

// MemoryStats reports device i's caching allocator; in this build it
// returns an error wrapping ErrNoDevice.
func MemoryStats(i int) (Stats, error) { return Stats{}, errNotBuilt }

// ResetPeakMemory restarts the peak counters of MemoryStats; in this build
// it returns an error wrapping ErrNoDevice.
func ResetPeakMemory(i int) error { return errNotBuilt }

// EmptyCache returns cached device memory to the driver; in this build it
// returns an error wrapping ErrNoDevice.
func EmptyCache(i int) error { return errNotBuilt }

// Synchronize waits for device i's queued work; in this build it returns an
// error wrapping ErrNoDevice.
func Synchronize(i int) error { return errNotBuilt }

// SetAllowTF32 lets Float32 matrix products on device i use TF32 tensor
// cores; in this build it returns an error wrapping ErrNoDevice.
func SetAllowTF32(i int, on bool) error { return errNotBuilt }

// SetGCPercent sets device-memory garbage-collection pacing; this build has
// no CUDA support.
func SetGCPercent(i int, percent int) error { return errNotBuilt }

// CuDNN describes the cuDNN library device i's convolutions run on; in
// this build it returns an error wrapping ErrNoDevice.
func CuDNN(i int) (string, error) { return "", errNotBuilt }
