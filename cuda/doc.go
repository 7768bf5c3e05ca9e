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
//
// Convolutions (forward and both gradients, transposed convolutions too)
// run on cuDNN when libcudnn.so.9 or libcudnn.so.8 is found, in the same
// folders as cuBLAS (LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda, the
// nvidia/cudnn/lib folder of NVIDIA's pip wheels); otherwise, or for a
// geometry cuDNN cannot express, they are lowered to an im2col kernel and
// a cuBLAS GEMM. cuDNN 9 opens its sub-libraries (libcudnn_ops,
// libcudnn_cnn, ...) itself; the backend opens them first from the front
// library's folder so that works without LD_LIBRARY_PATH, and if cuDNN
// still cannot open one, convolutions fall back and the error (naming the
// folder to add to LD_LIBRARY_PATH) is kept for diagnosis. SetAllowTF32
// governs float32 convolutions as it does matrix products.
//
// Example (the package example) computes a product on the GPU, or on the
// CPU where there is none; ExampleInfo lists the devices and
// ExampleMemoryStats reads the caching allocator's figures, reporting
// ErrNoDevice where no GPU is present.
package cuda

import "errors"

// ErrNoDevice is wrapped by every error that reports a missing CUDA device,
// driver or library, and by device lookups in a build without -tags cuda.
var ErrNoDevice = errors.New("cuda: no CUDA device")
