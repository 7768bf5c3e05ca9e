package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/emberml/ember/cuda"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// benchDevice is where "ember bench -device" runs the workloads: the CPU
// (also the zero value) or one CUDA device.
type benchDevice struct {
	dev   tensor.Device
	index int // CUDA ordinal; -1 for the CPU
}

// cpuDevice is the default device of "ember bench".
var cpuDevice = benchDevice{dev: tensor.CPU, index: -1}

// parseBenchDevice reads the -device value: cpu, cuda (device 0) or
// cuda:N.
func parseBenchDevice(s string) (benchDevice, error) {
	switch {
	case s == "cpu":
		return cpuDevice, nil
	case s == "cuda":
		return benchDevice{dev: tensor.CUDA(0), index: 0}, nil
	}
	if rest, ok := strings.CutPrefix(s, "cuda:"); ok {
		i, err := strconv.Atoi(rest)
		if err == nil && i >= 0 && strconv.Itoa(i) == rest {
			return benchDevice{dev: tensor.CUDA(i), index: i}, nil
		}
	}
	return benchDevice{}, fmt.Errorf("unknown device %q (want cpu, cuda or cuda:N)", s)
}

// gpu reports whether d is a CUDA device (the zero benchDevice is the CPU).
func (d benchDevice) gpu() bool { return d.dev.Kind() == "cuda" }

// open makes sure a CUDA device can be used (a build without -tags cuda,
// or a machine without a GPU, gives an error wrapping cuda.ErrNoDevice)
// and sets whether its float32 matrix products may use TF32.
func (d benchDevice) open(tf32 bool) error {
	if !d.gpu() {
		return nil
	}
	if _, err := cuda.Device(d.index); err != nil {
		if errors.Is(err, cuda.ErrNoDevice) && !strings.Contains(err.Error(), cuda.ErrNoDevice.Error()) {
			// Say it in the words of cuda.ErrNoDevice, then why.
			return fmt.Errorf("%w (%w)", cuda.ErrNoDevice, err)
		}
		return err
	}
	return cuda.SetAllowTF32(d.index, tf32)
}

// sync waits for the work queued on a CUDA device, so that a clock read
// after it covers that work. It does nothing on the CPU.
func (d benchDevice) sync() error {
	if !d.gpu() {
		return nil
	}
	return cuda.Synchronize(d.index)
}

// resetPeak restarts the device's peak-memory counter and returns the bytes
// allocated at that moment (tensors of an earlier workload not yet
// collected), which peakMB subtracts. On the CPU it returns 0.
func (d benchDevice) resetPeak() (int64, error) {
	if !d.gpu() {
		return 0, nil
	}
	if err := cuda.ResetPeakMemory(d.index); err != nil {
		return 0, err
	}
	s, err := cuda.MemoryStats(d.index)
	if err != nil {
		return 0, err
	}
	return s.Allocated, nil
}

// annotate adds the device and, on a GPU, its peak allocated memory above
// base in MB (MiB, as peak_rss_mb) to r.
func (d benchDevice) annotate(r *benchResult, base int64) error {
	if !d.gpu() {
		return nil
	}
	s, err := cuda.MemoryStats(d.index)
	if err != nil {
		return err
	}
	mb := round3(float64(s.Peak-base) / (1 << 20))
	r.Device = string(d.dev)
	r.PeakGPUMB = &mb
	return nil
}

// move puts a built workload's model (parameters and buffers, in place) and
// data tensors (in place, so the step's closures follow) on the device.
func (d benchDevice) move(run *benchRun) error {
	if !d.gpu() {
		return nil
	}
	if run.model == nil {
		return fmt.Errorf("the workload names no model to move to %s", d.dev)
	}
	if err := nn.ToDevice(run.model, d.dev); err != nil {
		return err
	}
	for _, t := range run.data {
		if err := t.MoveStorageTo(d.dev); err != nil {
			return fmt.Errorf("moving the input data to %s: %w", d.dev, err)
		}
	}
	return nil
}
