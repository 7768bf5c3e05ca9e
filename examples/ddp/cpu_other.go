//go:build !unix

package main

import "time"

// processCPU reports that the CPU time is not available on this system.
func processCPU() (user, sys time.Duration, ok bool) { return 0, 0, false }
