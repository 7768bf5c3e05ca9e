package gemm

import "syscall"

// cpuSeconds returns the user plus system CPU time of the process, or 0
// where it cannot be read: on a busy machine a steadier cost than wall
// time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
