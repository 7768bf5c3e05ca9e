package distributed

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
	"unsafe"
)

// All-reduce of ordinary tensors in place.
//
// A rank cannot map a peer process's Go heap, but Linux lets it read and
// write the peer's memory with cross-memory attach (process_vm_readv(2),
// process_vm_writev(2)): the kernel copies straight between the two
// processes' pages. So an all-reduce of ordinary tensors between ranks of
// one machine runs as one of SharedZeros tensors does (zeroCopyAllReduce),
// with every rank publishing the address and length of its tensor's bytes
// instead of a region: each rank reads its piece of every peer's window
// into its idle staging slot, reduces it with its own into its tensor,
// and writes the result into every peer's tensor. Nothing is staged by
// the owner or copied out of a slot. Ranks of one process (goroutines)
// address each other's tensors and use plain loads and stores, as ranks
// do on SharedZeros tensors.
//
// Writing the results (process_vm_writev) rather than having the peers
// read them after a wait was 1.2 to 1.5 times as fast for 4 processes on
// 2 cores (64 MB of float32), and 1.6 to 1.7 times for goroutines.
//
// Whether the kernel lets every pair of ranks do this (ptrace access
// modes, Yama, seccomp profiles and containers may refuse it with EPERM
// or ENOSYS) is found out once, when the group sets up shared memory:
// every rank publishes the address of a random nonce on its heap, reads
// the peers' nonces back, and the ranks vote. If any pair fails, or any
// rank sets DisableCrossMemory, every rank keeps to the staged path.

// cmaAllReduce all-reduces v in place by reading the peers' tensors:
// through cross-memory attach from other processes, with plain loads from
// ranks of this process.
func (g *TCPGroup) cmaAllReduce(seq uint64, v vec, op ReduceOp, deadline time.Time) error {
	s, own := g.shm, sliceBytes(v.data)
	if slices.Contains(s.local, false) {
		s.huge.prepare(own, collapseHugePages)
	}
	err := g.zeroCopyAllReduce(seq, v, op, 0, [2]uint64{uint64(addrOf(own)), uint64(len(own))}, func(j int, where [2]uint64) (peerTensor, error) {
		if where[1] != uint64(len(own)) {
			return peerTensor{}, fmt.Errorf("mismatched operation: it all-reduces %d bytes while this rank all-reduces %d", where[1], len(own))
		}
		if s.local[j] {
			return peerTensor{mem: addrBytes(uintptr(where[0]), len(own))}, nil
		}
		return peerTensor{pid: s.pids[j], addr: uintptr(where[0])}, nil
	}, deadline)
	// The peers read the tensor by its address until the collective ends.
	runtime.KeepAlive(own)
	return err
}

// probeCrossMemory records the ranks' processes from the peers' setup
// records (own is this rank's) and reports whether this rank can read every
// peer's probe nonce: with plain loads from ranks of this process, with
// process_vm_readv from the others. A record holds the pid at 2 and the
// probe's address and nonce from 8 on.
func (s *shmGroup) probeCrossMemory(recs []vec, own []int64) bool {
	s.pids, s.local = make([]int, len(recs)), make([]bool, len(recs))
	ok := true
	s.pids[s.self], s.local[s.self] = int(own[2]), true
	for j, rec := range recs {
		if j == s.self {
			continue
		}
		d := rec.data.([]int64)
		// The pid is proved: the rank opened the peer's segment through
		// /proc/<pid> and found the peer's nonce in it.
		s.pids[j], s.local[j] = int(d[2]), d[2] == own[2]
		var got [16]byte
		if s.local[j] {
			copy(got[:], addrBytes(uintptr(d[8]), len(got)))
		} else if readRemote(s.pids[j], uintptr(d[8]), got[:]) != nil {
			ok = false
			continue
		}
		ok = ok && holdsNonce(got[:], [2]int64{d[9], d[10]})
	}
	return ok
}

// addrOf is the address of b's first byte, as a peer reads it.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// addrBytes views n bytes at addr, memory of this process that a rank of
// it published with addrOf and keeps alive while the view is used. The
// word is reinterpreted rather than converted: it holds a live pointer
// that went through a peer's descriptor, a conversion go vet rightly
// distrusts elsewhere.
func addrBytes(addr uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// Huge pages.
//
// The kernel's cross-memory copies pin and copy the peer's memory page by
// page. From a Go heap on 4 KiB pages they ran at 0.26 to 0.35 of memmove
// here, from memory on 2 MiB pages at 0.52 to 0.60, and the all-reduce of
// 64 MB across 4 processes went 1.46 to 1.80 times as fast
// (BenchmarkAllReduceProcesses). The Go runtime leaves its heap on small
// pages (the kernel's default gives huge pages only where asked), so a
// rank asks the kernel to move a tensor it all-reduces in place onto huge
// pages (madvise MADV_COLLAPSE, Linux 6.1), keeping its contents. The
// first time costs the kernel a copy and free huge pages (20 to 400 ms for
// 64 MB here, by how readily it found them), later times a few
// microseconds, so only a tensor that was all-reduced before (the
// gradients of a training loop) is moved; one all-reduced once is left
// alone. A collapse that fails (no huge page to be had) is not retried for
// that tensor; where the kernel does not know the advice the group stops
// asking.

const (
	// hugePageBytes is the size of the pages asked for.
	hugePageBytes = 2 << 20
	// hugeMinBytes is the smallest tensor moved: two huge pages.
	hugeMinBytes = 2 * hugePageBytes
	// hugeRemember is how many all-reduces a tensor is remembered for.
	hugeRemember = 256
)

// errNoHugePages is what collapseHugePages returns where the kernel cannot
// collapse memory into huge pages.
var errNoHugePages = errors.New("the kernel cannot collapse memory into huge pages")

// hugeTracker remembers the tensors a group all-reduced in place across
// processes (worker goroutine only).
type hugeTracker struct {
	off       bool   // the kernel does not know the advice
	calls     uint64 // tensors prepared so far
	collapsed int    // collapses that succeeded
	seen      map[[2]uintptr]hugeSeen
}

// hugeSeen is what hugeTracker knows of a tensor, by address and length.
type hugeSeen struct {
	last   uint64 // the call that last saw it
	failed bool   // its collapse failed: not tried again
}

// prepare is called with the bytes of a tensor about to be all-reduced in
// place; it calls collapse on them if the tensor was seen before.
func (h *hugeTracker) prepare(b []byte, collapse func([]byte) error) {
	if h.off || len(b) < hugeMinBytes {
		return
	}
	h.calls++
	key := [2]uintptr{addrOf(b), uintptr(len(b))}
	e, ok := h.seen[key]
	if ok && !e.failed {
		if err := collapse(b); errors.Is(err, errNoHugePages) {
			h.off, h.seen = true, nil
			return
		} else if err != nil {
			e.failed = true
		} else {
			h.collapsed++
		}
	}
	e.last = h.calls
	if h.seen == nil {
		h.seen = map[[2]uintptr]hugeSeen{}
	}
	h.seen[key] = e
	if len(h.seen) > hugeRemember {
		for k, s := range h.seen {
			if s.last+hugeRemember <= h.calls {
				delete(h.seen, k)
			}
		}
	}
}

// hugeInterior is the part [lo, hi) of the n bytes at addr that covers
// whole huge pages; lo >= hi when there is none.
func hugeInterior(addr uintptr, n int) (lo, hi int) {
	first := (addr + hugePageBytes - 1) &^ (hugePageBytes - 1)
	end := (addr + uintptr(n)) &^ (hugePageBytes - 1)
	if end <= first {
		return 0, 0
	}
	return int(first - addr), int(end - addr)
}
