package cpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor/internal/isa"
	"github.com/emberml/ember/tensor/internal/isa/isatest"
)

// TestPathInForce checks that the convolution and pooling kernels follow
// the instruction path isa chose.
func TestPathInForce(t *testing.T) {
	isatest.CheckPath(t)
	assert.Equal(t, isa.Current() == isa.AVX512, winoVector(), "Winograd transforms")
	checkArchKernelPath(t)
}

// testsOnEveryPath are the kernel tests TestEveryPath runs again under
// every other path.
const testsOnEveryPath = "^(TestConvKernelsMatchDefinition|TestDepthwiseMatchesGo|TestMaxPool2x2MatchesGeneric|TestMaxPool2x2PlaneMatchesGo|" +
	"TestMaxPool2dMatchesGeneric|TestMaxIntoAsmMatchesGo|TestWinogradMatchesDefinition|TestWinogradKernelsAsmMatchGo)$"

// TestEveryPath runs the kernel tests again under every other path the
// machine supports (EMBER_CPU=avx2, generic on an AVX-512 machine).
func TestEveryPath(t *testing.T) { isatest.RunEachPath(t, testsOnEveryPath) }
