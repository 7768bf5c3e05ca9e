//go:build !linux

package distributed

import (
	"errors"
	"time"
)

// shmSupported reports whether this build can map segments of other
// processes: only Linux builds do; elsewhere local ranks use TCP.
const shmSupported = false

// errNoShm is what the segment functions return outside Linux.
var errNoShm = errors.New("shared-memory transport is Linux only")

// hostID is unused outside Linux.
func hostID() int64 { return 0 }

// createSegment is unavailable outside Linux.
func createSegment(int) ([]byte, int, int, error) { return nil, 0, -1, errNoShm }

// closeSegmentFD is unavailable outside Linux.
func closeSegmentFD(int) {}

// openSegment is unavailable outside Linux.
func openSegment(int, int, int) ([]byte, error) { return nil, errNoShm }

// unmapSegment is unavailable outside Linux.
func unmapSegment([]byte) {}

// futexWait sleeps for d: no segment is ever mapped outside Linux, so
// nothing waits on a shared word.
func futexWait(_ *uint32, _ uint32, d time.Duration) { time.Sleep(d) }

// futexWake has nothing to wake outside Linux.
func futexWake(*uint32) {}
