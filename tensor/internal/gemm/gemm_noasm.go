//go:build !(amd64 || arm64) || purego

package gemm

// availableKernels lists the micro-kernels usable in this build: only the
// pure-Go one.
func availableKernels() []*kernel {
	return []*kernel{genericKernel}
}
