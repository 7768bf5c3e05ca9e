//go:build cuda

package cuda

// fusedKernels lists the kernels this file launches.
var fusedKernels = []string{}
