//go:build arm64 && !purego

package isa

// forceable is false: the NEON kernels of vec, gemm and cpu do not ask Has
// yet, so EMBER_CPU cannot move them, and a request for another path is
// clamped to NEON (Note says so) rather than reported as followed.
const forceable = false

// best is NEON: Advanced SIMD is part of every arm64 CPU Go runs on.
var best = NEON

// readCPU asks the operating system: arm64 has no user-mode CPUID.
func readCPU() Info { return fillFromOS(Info{}) }
