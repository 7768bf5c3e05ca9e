//go:build cuda

package cuda

// coreKernels lists the kernels device.go launches.
var coreKernels = []string{}
