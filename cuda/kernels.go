//go:build cuda

package cuda

import "slices"

// allKernels lists every kernel the Go side launches; a test checks that
// each is an entry of the embedded PTX.
func allKernels() []string {
	return slices.Concat(coreKernels, elementwiseKernels, indexKernels, nnKernels, fusedKernels)
}
