//go:build cuda

package cuda

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"

	"github.com/emberml/ember/cuda/internal/kernels"
)

// coreKernels lists the kernels device.go launches.
var coreKernels = []string{kMatMulI64, kMatMulI32}

// allKernels lists every kernel the Go side launches; a test checks that
// each is an entry of the embedded PTX.
func allKernels() []string {
	return slices.Concat(coreKernels, elementwiseKernels, indexKernels, nnKernels, fusedKernels, randomKernels)
}

// entryRE matches a kernel entry of a PTX module: ".visible .entry name(".
var entryRE = regexp.MustCompile(`(?m)^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$%][A-Za-z0-9_$%]*)\s*\(`)

// parsePTXEntries returns the names of the kernel entries of a PTX module.
func parsePTXEntries(src []byte) []string {
	var names []string
	for _, m := range entryRE.FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// ptxSource returns an embedded PTX module.
func ptxSource(file string) ([]byte, error) { return fs.ReadFile(kernels.PTX, file) }

// kernelIndex maps every kernel entry of the embedded PTX modules to its
// file; an entry defined twice is an error (the Go side launches by name).
func kernelIndex() (map[string]string, error) {
	files, err := fs.Glob(kernels.PTX, "*.ptx")
	if err != nil {
		return nil, err
	}
	idx := map[string]string{}
	for _, f := range files {
		src, err := ptxSource(f)
		if err != nil {
			return nil, err
		}
		for _, name := range parsePTXEntries(src) {
			if prev, dup := idx[name]; dup {
				return nil, fmt.Errorf("kernel %q is defined in both %s and %s", name, prev, f)
			}
			idx[name] = f
		}
	}
	return idx, nil
}
