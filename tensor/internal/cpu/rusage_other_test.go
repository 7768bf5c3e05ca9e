//go:build !linux

package cpu

// cpuSeconds returns 0: CPU time is read on Linux only.
func cpuSeconds() float64 { return 0 }
