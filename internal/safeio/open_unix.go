//go:build unix

package safeio

import "syscall"

// nonBlocking makes opening a FIFO put in place of a checked regular file
// return at once instead of waiting for a writer; regular files ignore it.
const nonBlocking = syscall.O_NONBLOCK
