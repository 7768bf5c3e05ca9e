//go:build linux

package distributed

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmSupported reports whether this build can map segments of other
// processes.
const shmSupported = true

// futex(2) operations on a word shared between processes (not the
// _PRIVATE variants, which only match waiters of one process).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// hostID identifies this boot of this machine and this network
// namespace: the hash of the host name, the kernel's boot id and the
// namespace's inode. Ranks that differ in it never try to open each
// other's segments; ranks in separate network namespaces (containers)
// count as separate machines.
func hostID() int64 {
	name, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	netns, _ := os.Readlink("/proc/self/ns/net")
	sum := sha256.Sum256([]byte(name + "\x00" + string(bytes.TrimSpace(boot)) + "\x00" + netns))
	return int64(binary.LittleEndian.Uint64(sum[:8]))
}

// createSegment creates an anonymous shared-memory file (memfd) of size
// bytes and maps it. Other processes of this machine open it through
// /proc/<pid>/fd/<fd> while fd is open; once the memfd is closed and
// every process has unmapped it, the kernel frees it, so nothing is left
// behind however the processes end.
func createSegment(size int) (mem []byte, pid, fd int, err error) {
	fd, err = unix.MemfdCreate("ember-dist", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, 0, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err = unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, 0, -1, fmt.Errorf("ftruncate: %w", err)
	}
	mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, 0, -1, fmt.Errorf("mmap: %w", err)
	}
	return mem, os.Getpid(), fd, nil
}

// closeSegmentFD closes the memfd createSegment returned; the mapping
// stays.
func closeSegmentFD(fd int) { unix.Close(fd) }

// openSegment maps the segment that process pid created as its file
// descriptor fd. It refuses anything but a regular file of at least size
// bytes, so that a stale pid on another machine cannot make it open a
// device or a pipe.
func openSegment(pid, fd, size int) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	f, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return nil, fmt.Errorf("fstat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < int64(size) {
		return nil, fmt.Errorf("%s is not a segment of %d bytes", path, size)
	}
	mem, err := unix.Mmap(f, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return mem, nil
}

// unmapSegment releases a mapping.
func unmapSegment(mem []byte) { unix.Munmap(mem) }

// futexWait sleeps while *addr holds val, at most d (spurious wake-ups
// are fine: callers re-check).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every process waiting on addr.
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, math.MaxInt32, 0, 0, 0)
}
