//go:build cuda

package cuda

// elementwiseKernels lists the kernels this file launches.
var elementwiseKernels = []string{}
