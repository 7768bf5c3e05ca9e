//go:build linux

package distributed

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// shmSupported reports whether this build can map segments of other
// processes.
const shmSupported = true

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
// bytes and maps it. Both it and openSegment fill in the mapping's page
// tables at once (MAP_POPULATE): the collectives would otherwise take a
// page fault on every page of every peer's segment in every process the
// first time they touch it. Other processes of this machine open it through
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
	mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(fd)
		return nil, 0, -1, fmt.Errorf("mmap: %w", err)
	}
	return mem, os.Getpid(), fd, nil
}

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
	mem, err := unix.Mmap(f, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return mem, nil
}

// unmapSegment releases a mapping.
func unmapSegment(mem []byte) { unix.Munmap(mem) }

// createWaker creates the pipe a rank sleeps on while it waits for its
// peers: the read end as a File of the runtime's poller (a sleeping
// goroutine holds no thread, so computation overlapping the collective goes
// on), and the write end, kept open so that the pipe never reads as ended.
// Peers open the pipe through /proc/<pid>/fd/<fd of r> to wake the rank.
// rfd is r's descriptor number (r.Fd would put r in blocking mode).
func createWaker() (r *os.File, rfd, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, -1, -1, fmt.Errorf("pipe2: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "ember-dist-waker"), p[0], p[1], nil
}

// openWaker opens for writing the pipe that process pid reads as its file
// descriptor fd, refusing anything but a pipe.
func openWaker(pid, fd int) (int, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	f, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(f)
		return -1, fmt.Errorf("%s is not a pipe", path)
	}
	return f, nil
}

// wake writes a byte to a waker pipe; a full pipe already holds wake-ups.
func wake(fd int) { unix.Write(fd, []byte{1}) }

// closeFD closes a file descriptor.
func closeFD(fd int) { unix.Close(fd) }

// readRemote fills dst with the bytes at addr in process pid's memory
// (cross-memory attach, process_vm_readv(2)).
func readRemote(pid int, addr uintptr, dst []byte) error {
	return remoteCopy("process_vm_readv", unix.ProcessVMReadv, pid, addr, dst)
}

// writeRemote writes src at addr in process pid's memory
// (process_vm_writev(2)).
func writeRemote(pid int, addr uintptr, src []byte) error {
	return remoteCopy("process_vm_writev", unix.ProcessVMWritev, pid, addr, src)
}

// remoteCopy moves b between this process and addr in process pid with
// call, the system call named name. The kernel may stop short, at a page
// it cannot reach, so it goes on from there until b is done or nothing
// more moves.
func remoteCopy(name string, call func(int, []unix.Iovec, []unix.RemoteIovec, uint) (int, error), pid int, addr uintptr, b []byte) error {
	for len(b) > 0 {
		local := []unix.Iovec{{Base: &b[0]}}
		local[0].SetLen(len(b))
		k, err := call(pid, local, []unix.RemoteIovec{{Base: addr, Len: len(b)}}, 0)
		if err != nil {
			return fmt.Errorf("%s of %d bytes at %#x in process %d: %w", name, len(b), addr, pid, err)
		}
		if k == 0 {
			return fmt.Errorf("%s of %d bytes at %#x in process %d moved nothing", name, len(b), addr, pid)
		}
		b, addr = b[k:], addr+uintptr(k)
	}
	return nil
}

// collapseHugePages asks the kernel to move b's whole 2 MiB pages onto
// huge pages now (madvise MADV_COLLAPSE, Linux 6.1), keeping their
// contents. It returns errNoHugePages where the kernel does not know the
// advice.
func collapseHugePages(b []byte) error {
	lo, hi := hugeInterior(addrOf(b), len(b))
	if lo >= hi {
		return nil
	}
	err := unix.Madvise(b[lo:hi], unix.MADV_COLLAPSE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return fmt.Errorf("%w: %w", errNoHugePages, err)
	}
	return err
}
