//go:build amd64 && !purego

package cpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor/internal/isa"
)

// checkArchKernelPath checks the amd64-only kernel choices: depthwise
// convolution in AVX-512 assembly only on that path.
func checkArchKernelPath(t *testing.T) {
	g := ConvGeom{N: 1, C: 1, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, OH: 2, OW: 2}
	assert.Equal(t, isa.Has(isa.AVX512), dwAsm(g), "depthwise assembly")
}
