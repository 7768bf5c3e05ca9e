package vec

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor/internal/isa"
	"github.com/emberml/ember/tensor/internal/isa/isatest"
)

// TestPathInForce checks that the kernel sets follow the instruction path
// isa chose: the active set is the path's, and no set of a higher path is
// offered.
func TestPathInForce(t *testing.T) {
	isatest.CheckPath(t)
	names := map[isa.Path]string{isa.Generic: "go", isa.AVX2: "avx2", isa.AVX512: "avx512", isa.NEON: "neon"}
	assert.Equal(t, names[isa.Current()], Impl())
	for _, im := range impls() {
		assert.Contains(t, []string{"go", names[isa.Current()], names[isa.AVX2]}, im.name)
		if im.name == "avx2" {
			assert.True(t, isa.Has(isa.AVX2), "the AVX2 set is offered on the %s path", isa.Current())
		}
	}
	if runtime.GOARCH == "amd64" {
		onAVX512 := isa.Current() == isa.AVX512
		assert.Equal(t, onAVX512, addWidenKernel != nil, "addWiden kernel")
		assert.Equal(t, onAVX512, philoxMask32Kernel != nil, "philox mask kernel")
		assert.Equal(t, onAVX512, philoxDropout32Kernel != nil, "philox dropout kernel")
	}
}

// TestEveryPath runs this package's tests again under every other path
// the machine supports (EMBER_CPU=avx2, generic on an AVX-512 machine).
func TestEveryPath(t *testing.T) { isatest.RunEachPath(t, ".") }
