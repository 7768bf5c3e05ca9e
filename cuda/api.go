//go:build cuda

package cuda

import (
	"fmt"

	"github.com/emberml/ember/cuda/internal/driver"
	"github.com/emberml/ember/tensor"
)

// Device opens CUDA device i (once per process; later calls reuse it) and
// returns its name, tensor.CUDA(i). Without a usable device the error wraps
// ErrNoDevice and says why (no driver, no GPU, no such ordinal, no cuBLAS).
func Device(i int) (tensor.Device, error) {
	d := tensor.CUDA(i)
	if _, err := backend(i); err != nil {
		return "", err
	}
	return d, nil
}

// backend returns the opened backend of device i.
func backend(i int) (*Backend, error) {
	if i < 0 {
		return nil, &noDeviceError{fmt.Errorf("device %d does not exist", i)}
	}
	be, err := tensor.BackendFor(tensor.CUDA(i))
	if err != nil {
		return nil, err
	}
	b, ok := be.(*Backend)
	if !ok {
		return nil, fmt.Errorf("cuda: the backend of %s is %T, not this package's", tensor.CUDA(i), be)
	}
	return b, nil
}

// DeviceCount returns the number of CUDA devices. Without a driver or a
// device it returns 0 and an error wrapping ErrNoDevice that says why.
func DeviceCount() (int, error) {
	drv, err := loadDriver()
	if err != nil {
		return 0, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return 0, wrapErr(err)
	}
	return n, nil
}

// Info describes device i without opening a backend on it.
func Info(i int) (DeviceInfo, error) {
	drv, err := loadDriver()
	if err != nil {
		return DeviceInfo{}, err
	}
	dev, err := deviceOf(drv, i)
	if err != nil {
		return DeviceInfo{}, err
	}
	info := DeviceInfo{Index: i}
	if info.Name, err = drv.DeviceName(dev); err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	if info.TotalMemory, err = drv.DeviceTotalMem(dev); err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	for _, a := range []struct {
		attr int32
		dst  *int
	}{
		{driver.AttrComputeCapMajor, &info.Major},
		{driver.AttrComputeCapMinor, &info.Minor},
		{driver.AttrMultiprocessorCount, &info.Multiprocessors},
	} {
		if *a.dst, err = drv.DeviceAttribute(dev, a.attr); err != nil {
			return DeviceInfo{}, wrapErr(err)
		}
	}
	if info.DriverVersion, err = drv.Version(); err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	ctx, err := drv.PrimaryCtxRetain(dev)
	if err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	defer func() { _ = drv.PrimaryCtxRelease(dev) }()
	unbind, err := drv.Bind(ctx)
	if err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	defer unbind()
	if info.FreeMemory, _, err = drv.MemGetInfo(); err != nil {
		return DeviceInfo{}, wrapErr(err)
	}
	return info, nil
}

// MemoryStats reports device i's caching allocator (opening the device).
func MemoryStats(i int) (Stats, error) {
	b, err := backend(i)
	if err != nil {
		return Stats{}, err
	}
	s := b.mem.Stats()
	return Stats{
		Allocated: s.Allocated, Reserved: s.Reserved, Peak: s.Peak, PeakReserved: s.PeakReserved,
		Segments: s.Segments, Allocs: s.Allocs, Frees: s.Frees, CacheHits: s.CacheHits, OOMRetries: s.OOMRetries,
	}, nil
}

// ResetPeakMemory restarts the peak counters of MemoryStats.
func ResetPeakMemory(i int) error {
	b, err := backend(i)
	if err != nil {
		return err
	}
	b.mem.ResetPeak()
	return nil
}

// EmptyCache returns the device memory that device i's allocator holds
// cached but unused to the driver (tensors still alive keep theirs).
func EmptyCache(i int) error {
	b, err := backend(i)
	if err != nil {
		return err
	}
	if err := b.mem.EmptyCache(); err != nil {
		return fmt.Errorf("cuda: device %d: %w", i, err)
	}
	return nil
}

// Synchronize waits until every operation queued on device i has finished.
// An error of a kernel that failed asynchronously is reported here.
func Synchronize(i int) error {
	b, err := backend(i)
	if err != nil {
		return err
	}
	unbind, err := b.drv.Bind(b.ctx)
	if err != nil {
		return wrapErr(err)
	}
	defer unbind()
	return wrapErr(b.drv.StreamSynchronize(b.stream))
}

// SetAllowTF32 lets Float32 matrix products on device i use TF32 tensor
// cores (inputs rounded to 10-bit mantissas, float32 accumulation), as
// PyTorch's torch.backends.cuda.matmul.allow_tf32; it also lets cuDNN
// convolutions use them, as torch.backends.cudnn.allow_tf32. It is off by
// default.
func SetAllowTF32(i int, on bool) error {
	b, err := backend(i)
	if err != nil {
		return err
	}
	b.blasMu.Lock()
	b.allowTF32 = on
	b.blasMu.Unlock()
	return nil
}

// SetGCPercent sets how far device memory in use on device i may grow
// beyond the live set before Ember runs the Go garbage collector to return
// unreachable tensors' memory (default 50, with a 256 MiB floor; negative
// turns pacing off, leaving collection to out-of-memory retries). Go's
// collector does not see device memory, so this pacing is what keeps a
// training loop's dead activations from piling up on the GPU; lower values
// trade collection time for a lower peak.
func SetGCPercent(i int, percent int) error {
	b, err := backend(i)
	if err != nil {
		return err
	}
	b.pacer.SetPercent(percent)
	return nil
}
