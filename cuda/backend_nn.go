//go:build cuda

package cuda

// nnKernels lists the kernels this file launches.
var nnKernels = []string{}
