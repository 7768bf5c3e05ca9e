//go:build cuda

package cuda

// indexKernels lists the kernels this file launches.
var indexKernels = []string{}
