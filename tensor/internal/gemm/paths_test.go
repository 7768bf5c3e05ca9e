package gemm

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor/internal/isa"
	"github.com/emberml/ember/tensor/internal/isa/isatest"
)

// TestPathInForce checks that the micro-kernels and packing routines follow
// the instruction path isa chose.
func TestPathInForce(t *testing.T) {
	isatest.CheckPath(t)
	names := map[isa.Path]string{isa.Generic: "generic", isa.AVX2: "avx2", isa.AVX512: "avx512", isa.NEON: "neon"}
	assert.Equal(t, names[isa.Current()], packKernel(1000).name)
	for _, k := range availableKernels() {
		switch k.name {
		case "avx512", "avx512x8":
			assert.True(t, isa.Has(isa.AVX512), "%s offered on the %s path", k.name, isa.Current())
		case "avx2":
			assert.True(t, isa.Has(isa.AVX2), "avx2 offered on the %s path", isa.Current())
		}
	}
	if runtime.GOARCH == "arm64" {
		assert.Equal(t, isa.Has(isa.NEON), canTranspose8())
		assert.Equal(t, isa.Has(isa.NEON), availableKernels()[0].dot != nil, "NEON dot kernel")
	}
	if runtime.GOARCH == "amd64" {
		assert.Equal(t, isa.Has(isa.AVX2), canTranspose8())
		assert.Equal(t, isa.Has(isa.AVX512), scatterPanels(make([]float32, 64), 32, make([]float32, 32), 32))
	}
}

// testsOnEveryPath are the products and packings TestEveryPath runs again
// under every other path: the whole suite takes too long to repeat.
const testsOnEveryPath = "^(TestSgemmAgainstNaive|TestSgemmLargeBlocks|TestSgemmThreadsIdentical|TestSgemmDot|" +
	"TestSgemmPackedMatchesSgemm|TestSgemmPackedEpilogue|TestPackBMatchesSgemm|TestPanelRow|TestTranspose|TestSgemmPrepackedMatchesSgemm)$"

// TestEveryPath runs the products again under every other path the
// machine supports (EMBER_CPU=avx2, generic on an AVX-512 machine).
func TestEveryPath(t *testing.T) { isatest.RunEachPath(t, testsOnEveryPath) }
