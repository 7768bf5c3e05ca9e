//go:build unix

package safeio

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only with O_NONBLOCK, so that a FIFO put in
// place of a checked regular file cannot block the open; regular files
// ignore the flag.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
