//go:build arm64 && !purego

package isa

// forceable is true: the NEON kernels of vec, gemm (micro-kernels, dot
// kernel, panel transposes) and cpu (maxInto32) ask Has, so
// EMBER_CPU=generic runs the pure-Go twins; an x86 path is clamped to NEON
// (Note says so).
const forceable = true

// best is NEON: Advanced SIMD is part of every arm64 CPU Go runs on.
var best = NEON

// readCPU asks the operating system: arm64 has no user-mode CPUID.
func readCPU() Info { return fillFromOS(Info{}) }
