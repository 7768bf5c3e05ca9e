// Package cuda is Ember's NVIDIA GPU backend. It implements tensor's device
// contract (tensor.Backend) on CUDA devices, so tensors, autograd, nn and
// optim run unchanged on a GPU:
//
//	dev, err := cuda.Device(0)       // tensor.Device("cuda:0"), or an error
//	x, err := t.ToDevice(dev)        // copy a tensor to the GPU
//
// The backend is compiled only with the build tag cuda and needs no cgo: the
// CUDA driver (libcuda.so.1), cuBLAS and the other NVIDIA libraries are
// opened at run time, and the kernels are PTX compiled from the .cu sources
// in internal/kernels and embedded in the binary. A binary built without the
// tag, or run on a machine without a GPU, still runs its CPU work: device
// lookups return an error wrapping ErrNoDevice.
package cuda

import "errors"

// ErrNoDevice is wrapped by every error that reports a missing CUDA device,
// driver or library, and by device lookups in a build without -tags cuda.
var ErrNoDevice = errors.New("cuda: no CUDA device")
