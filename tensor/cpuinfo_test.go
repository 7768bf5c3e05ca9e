package tensor_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/tensor"
)

func TestCPUInfoString(t *testing.T) {
	c := tensor.CPUInfo{Model: "AMD EPYC 7763 64-Core Processor", Path: "avx2", Best: "avx2", L1D: 32 << 10, L2: 512 << 10, L3: 32 << 20}
	assert.Equal(t, "AMD EPYC 7763 64-Core Processor; kernels avx2; L1d 32 KiB, L2 512 KiB, L3 32 MiB", c.String())
	c = tensor.CPUInfo{Path: "avx2", Best: "avx512", Requested: "avx2", L1D: 48 << 10, L2: 1280 << 10, L3: 1000}
	assert.Equal(t, "unknown CPU; kernels avx2 (EMBER_CPU=avx2, best avx512); L1d 48 KiB, L2 1280 KiB, L3 1000 B", c.String())
	c = tensor.CPUInfo{Model: "x", Path: "avx2", Best: "avx2", Requested: "avx512", Note: "isa: clamped"}
	assert.Equal(t, "x; kernels avx2 (isa: clamped)", c.String())
}

func TestHostCPU(t *testing.T) {
	c := tensor.HostCPU()
	paths := []string{"avx512", "avx2", "neon", "generic"}
	assert.Contains(t, paths, c.Path)
	assert.Contains(t, paths, c.Best)
	assert.Equal(t, os.Getenv("EMBER_CPU"), c.Requested)
	if c.Requested == "" {
		assert.Equal(t, c.Best, c.Path)
		assert.Empty(t, c.Note)
	}
	if c.Requested == c.Path {
		assert.Empty(t, c.Note)
	}
}

// ExampleHostCPU prints the kernels' instruction path, as benchmark
// headers do (with the model and cache sizes: fmt.Println(tensor.HostCPU())).
func ExampleHostCPU() {
	info := tensor.HostCPU()
	fmt.Println(slices.Contains([]string{"avx512", "avx2", "neon", "generic"}, info.Path))
	// Output: true
}
