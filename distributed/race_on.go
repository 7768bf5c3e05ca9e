//go:build race

package distributed

import (
	"runtime"
	"unsafe"
)

// raceRelease and raceAcquire tell the race detector of the order that
// the shared-memory counters give to accesses of b by ranks of one
// process: the detector cannot see it, since every rank reads the
// counters through a mapping of its own, at addresses of its own, while
// the ranks' tensors are at one address.
func raceRelease(b []byte) {
	if len(b) > 0 {
		runtime.RaceReleaseMerge(unsafe.Pointer(unsafe.SliceData(b)))
	}
}

// raceAcquire is raceRelease's other half.
func raceAcquire(b []byte) {
	if len(b) > 0 {
		runtime.RaceAcquire(unsafe.Pointer(unsafe.SliceData(b)))
	}
}
