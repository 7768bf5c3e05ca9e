//go:build !(amd64 || arm64) || purego

package isa

// forceable is true (Generic is the only path here).
const forceable = true

// best is Generic: this build has no assembly kernels.
var best = Generic

// readCPU asks the operating system (there is no assembly for CPUID here).
func readCPU() Info { return fillFromOS(Info{}) }
