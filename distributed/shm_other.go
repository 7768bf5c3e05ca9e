//go:build !linux

package distributed

import (
	"errors"
	"os"
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

// openSegment is unavailable outside Linux.
func openSegment(int, int, int) ([]byte, error) { return nil, errNoShm }

// unmapSegment is unavailable outside Linux.
func unmapSegment([]byte) {}

// createWaker is unavailable outside Linux.
func createWaker() (*os.File, int, int, error) { return nil, -1, -1, errNoShm }

// openWaker is unavailable outside Linux.
func openWaker(int, int) (int, error) { return -1, errNoShm }

// wake has nothing to wake outside Linux.
func wake(int) {}

// closeFD has nothing to close outside Linux.
func closeFD(int) {}

// readRemote is unavailable outside Linux.
func readRemote(int, uintptr, []byte) error { return errNoShm }

// writeRemote is unavailable outside Linux.
func writeRemote(int, uintptr, []byte) error { return errNoShm }

// collapseHugePages is unavailable outside Linux.
func collapseHugePages([]byte) error { return errNoHugePages }
