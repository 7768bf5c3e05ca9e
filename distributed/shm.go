package distributed

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/emberml/ember/distributed/internal/reduce"
	"github.com/emberml/ember/tensor"
)

// Shared-memory transport for ranks of one machine.
//
// At setup every rank creates one segment (a memfd on Linux) and every
// rank maps every segment; the segments are proved shared by a random
// nonce each rank reads back from its peers' segments. A segment holds a
// header of counters and two slot descriptors, two staging slots (what the
// rank contributes to a round) and two result slots (what it computed for
// the others):
//
//	0     16 bytes  nonce
//	64    uint32    filled:   rounds whose staging slot is written
//	128   uint32    reduced:  rounds whose peers' staging this rank has read
//	                          (and whose result slot it has written)
//	192   uint32    gathered: rounds whose peers' results this rank has read
//	256   64×uint32 sleepers: bit i set while rank i sleeps on a counter
//	512   2×64      slot descriptors: seq, element count, op and dtype,
//	                and where the tensor is in an in-place all-reduce
//	640   uint32    wrote:    in-place all-reduces (by first round) after
//	                          which this rank writes into no peer's tensor
//	4096  4×slot    staging 0, staging 1, result 0, result 1
//
// A collective is cut into rounds of at most a slot each, numbered across
// collectives; round T uses slot T%2, so a rank fills round T+1 while slow
// peers still read round T. In each round a rank fills its staging slot,
// waits for every peer's, reads what it needs straight from the peers'
// segments (its 1/N slice of every contribution, reduced in rank order,
// for AllReduce and ReduceScatter), and for AllReduce waits for every
// peer's result and copies the N results into place. A rank's own share
// of its contribution is read from its tensor, never staged. The data
// stays in cache from one phase to the next: a slot is ChunkBytes (1 MiB
// by default; 256 KiB and 4 MiB slots were slower). Float sums add all N
// contributions in one pass (reduce.SumFloat32s: four sources per pass in
// registers, the bits of adding them rank by rank), and results of
// collectives of shmStreamBytes or more go into the caller's tensors with
// non-temporal stores, which skip reading every destination line first.
//
// Where the time goes (4 ranks as goroutines, 64 MB of float32 each, 2
// cores, CPU profile): copying the others' three quarters of each window
// into the staging slot 34%, the results into the tensor 28%, the
// reduction 20%, waiting 3%. Memory traffic is at its floor (each tensor
// read once from memory and written once, without the read a cached store
// needs), so what is left is the two cache-to-cache copies through the
// slots. All-reduces of ordinary tensors skip the slots where the kernel
// lets the ranks read and write each other's memory (cma.go); the other
// collectives, and all-reduces where it does not, are staged.
//
// A rank waiting on a peer's counter spins briefly, then marks itself in
// the peer's sleepers and sleeps on its own waker pipe, which the peer
// writes to after it moves a counter while sleepers are marked. The pipe
// is read through the runtime's poller, so a sleeping rank holds no
// thread and computation that overlaps the collective runs on. The TCP
// connections stay the control channel for failures: the rank sleeps a
// few milliseconds at a time, checking between naps whether the group has
// aborted, whether the peer's connection has closed (the kernel
// closes a dead process's sockets) and whether the collective's deadline
// has passed. Any of those ends the wait with a *PeerError, and the worker
// aborts the group so that the other ranks hear of it over TCP.
const (
	shmNonceOff    = 0
	shmFilledOff   = 64
	shmReducedOff  = 128
	shmGatheredOff = 192
	shmSleepersOff = 256
	shmMaxRanks    = 64 * 32 // sleeper bits in the header
	shmDescOff     = 512
	shmWroteOff    = 640
	shmHeaderBytes = 4096

	// A waiter yields up to shmSpins times, for at most shmSpin, before
	// it sleeps: the peer is usually a few microseconds away. The time
	// bound matters because one yield to a goroutine computing beside
	// the collective can last a whole scheduler slice. Where the machine
	// has a CPU for every thread of every rank (ranks × GOMAXPROCS ≤
	// CPUs), a waiter yields for up to shmSpinLong instead, however many
	// times: it keeps its CPU from no other rank, yields to this
	// process's other goroutines, and a rank waking from a sleep on its
	// pipe takes tens of microseconds on a virtual machine (ddp's CNN, 2
	// processes of 1 thread: the gradient exchange of the rank that
	// arrives last took a median 193–200 µs with the short spin, 133–151
	// µs spinning 2 ms). Where the ranks' threads share CPUs, a spinning
	// waiter would slow the very peer it waits for.
	shmSpins    = 64
	shmSpin     = 50 * time.Microsecond
	shmSpinLong = 2 * time.Millisecond
	// shmNap bounds one sleep, and so how late a failure is noticed.
	shmNap = 2 * time.Millisecond
	// shmQuiesce bounds how long a rank whose in-place all-reduce failed
	// waits for the peers to stop writing into its tensor (quiesce).
	shmQuiesce = time.Second
)

// shmGroup is a group's shared-memory state.
type shmGroup struct {
	g    *TCPGroup
	self int
	segs [][]byte // by rank, each mapped here
	slot int      // bytes in a staging or result slot
	// streamFrom is the collective size from which results go into the
	// caller's tensors with non-temporal stores (shmStreamBytes).
	streamFrom int
	round      uint32 // rounds completed; worker goroutine only
	// A waiter yields at most spins times for at most spin before it
	// sleeps: shmSpins and shmSpin, or without a count for shmSpinLong
	// where every thread of every rank can have a CPU.
	spin  time.Duration
	spins int

	waker  *os.File // this rank's waker pipe, read end
	wakerW int      // its write end, held so that the pipe never ends
	wakers []int    // write ends of the peers' waker pipes, by rank
	wbuf   [64]byte // drains wake-ups

	heap sharedHeap // SharedZeros regions (shared.go)

	// cma reports whether all-reduces of ordinary tensors of cmaFrom bytes
	// or more read the peers' tensors in place (cma.go): pids holds the
	// ranks' processes, local marks the ranks of this process.
	cma     bool
	cmaFrom int
	pids    []int
	local   []bool
	// huge moves tensors all-reduced in place across processes again and
	// again onto huge pages (cma.go).
	huge hugeTracker
	// held keeps the tensors of failed in-place all-reduces that a peer
	// may still touch by address (a process stalled past shmQuiesce, a
	// goroutine rank): their memory must not go back to the allocator.
	held [][]byte
	// probe holds the nonce the peers read while the group sets up.
	probe [16]byte
	// pause, set by tests only, runs in a zero-copy all-reduce once every
	// rank has published where its tensor is.
	pause func()
}

// shmDesc identifies the collective a round belongs to, so that ranks
// running different collectives fail instead of mixing data.
type shmDesc struct {
	seq  uint64
	n    uint64 // elements of the collective
	op   byte
	dt   tensor.DType
	root int // the root of Broadcast, Reduce, Gather and Scatter; 0 for the others
}

// words is the descriptor as a rank publishes it beside a slot, with flag
// (shmSharedFlag or 0) in the operation word.
func (d shmDesc) words(flag uint64) [3]uint64 {
	return [3]uint64{d.seq, d.n, uint64(d.op) | uint64(d.dt)<<8 | flag | uint64(d.root)<<32}
}

// shmPhases is what a collective does in each round r: fill writes this
// rank's staging slot, middle reads the peers' staging slots (and may
// write this rank's result slot), gather (nil for collectives without
// results) reads the peers' result slots.
type shmPhases struct {
	fill   func(r int, stage []byte)
	middle func(r int, stage func(j int) []byte, result []byte)
	gather func(r int, result func(j int) []byte)
}

// shmSlotBytes is the slot size for ChunkBytes chunk in a group of size
// ranks: a multiple of 64 bytes that holds at least one float64 per rank.
func shmSlotBytes(chunk, size int) int {
	return max(chunk&^63, 64*size)
}

// setupShm decides, with every rank, whether the group's collectives can
// use shared memory, and maps the segments if so. All ranks run the same
// two exchanges whatever they find, so that a rank without shared memory
// (another machine, DisableSharedMemory, a kernel that refuses) makes the
// whole group keep to TCP. Only transport failures are errors.
func (g *TCPGroup) setupShm(cfg Config, deadline time.Time) error {
	slot := shmSlotBytes(g.chunk, g.size)
	size := shmHeaderBytes + 4*slot
	s := &shmGroup{g: g, self: g.rank, segs: make([][]byte, g.size), slot: slot, streamFrom: shmStreamBytes, cmaFrom: cmaMinBytes, wakerW: -1, wakers: make([]int, g.size), spin: shmSpin, spins: shmSpins}
	if g.size*runtime.GOMAXPROCS(0) <= runtime.NumCPU() {
		s.spin, s.spins = shmSpinLong, math.MaxInt
	}
	for j := range s.wakers {
		s.wakers[j] = -1
	}
	s.heap.self, s.heap.regions = g.rank, map[uint64]*sharedRegion{}
	want := shmSupported && nativeLittle && !cfg.DisableSharedMemory && g.size <= shmMaxRanks
	var pid, fd int
	wakerFD := -1
	var nonce, probeNonce [2]int64
	// probe is the heap memory the peers read to find out whether they
	// can read this process's memory (probeCrossMemory). It lives in s,
	// which is on the heap: a buffer local to this function would stay on
	// the goroutine's stack, which moves when it grows.
	probe := s.probe[:]
	if want {
		var err error
		s.segs[g.rank], pid, fd, err = createSegment(size)
		if err == nil {
			defer closeFD(fd) // once every rank has opened it
			nonce = writeNonce(s.segs[g.rank][shmNonceOff:])
			probeNonce = writeNonce(probe)
			s.waker, wakerFD, s.wakerW, err = createWaker()
		}
		if err == nil {
			// Deadlines need a pipe the runtime polls.
			err = s.waker.SetReadDeadline(time.Time{})
		}
		want = err == nil
	}
	info := []int64{boolInt(want), cfg.machineID(g.members[g.rank], g.root.size), int64(pid), int64(fd), int64(size), nonce[0], nonce[1], int64(wakerFD),
		int64(addrOf(probe)), probeNonce[0], probeNonce[1]}
	got, err := g.exchange(opShmSetup, g.nextSeq(), tensor.Int64, len(info), func(int) vec { return vec{tensor.Int64, info} }, deadline)
	if err != nil {
		s.unmap()
		return err
	}
	ok := want
	for j := 0; ok && j < g.size; j++ {
		if j != g.rank {
			ok = s.open(j, got[j].data.([]int64), info, size)
		}
	}
	ok, err = g.agree(opShmSetup, ok, deadline)
	if err != nil {
		s.unmap()
		return err
	}
	if !ok {
		s.unmap()
		return nil
	}
	cma := !cfg.DisableCrossMemory && !cfg.failCrossMemoryProbe && s.probeCrossMemory(got, info)
	if s.cma, err = g.agree(opShmSetup, cma, deadline); err != nil {
		s.unmap()
		return err
	}
	// The peers have read the probe by now (they voted after).
	runtime.KeepAlive(probe)
	g.shm = s
	return nil
}

// open maps peer j's segment and opens its waker from the setup record d
// it sent (own is this rank's), and reports whether the segment holds the
// nonce j wrote, that is, whether the two ranks share its memory.
func (s *shmGroup) open(j int, d, own []int64, size int) bool {
	if d[0] != 1 || d[1] != own[1] || d[4] != own[4] {
		return false
	}
	m, err := openSegment(int(d[2]), int(d[3]), size)
	if err != nil {
		return false
	}
	s.segs[j] = m
	if !holdsNonce(m[shmNonceOff:], [2]int64{d[5], d[6]}) {
		return false
	}
	s.wakers[j], err = openWaker(int(d[2]), int(d[7]))
	return err == nil
}

// agree tells every rank whether this one is ok and reports whether all
// are: the last exchange of setupShm and allocShared, after which every
// rank takes the same path.
func (g *TCPGroup) agree(op byte, ok bool, deadline time.Time) (bool, error) {
	vote := []int64{boolInt(ok)}
	votes, err := g.exchange(op, g.nextSeq(), tensor.Int64, 1, func(int) vec { return vec{tensor.Int64, vote} }, deadline)
	if err != nil {
		return false, err
	}
	for j, v := range votes {
		if j != g.rank && v.data.([]int64)[0] != 1 {
			ok = false
		}
	}
	return ok, nil
}

// writeNonce writes 16 random bytes at the start of mem, a fresh segment,
// and returns them as the two words a setup record carries: a peer that
// reads them back from its own mapping shares the memory.
func writeNonce(mem []byte) [2]int64 {
	rand.Read(mem[:16])
	return [2]int64{int64(binary.LittleEndian.Uint64(mem[:8])), int64(binary.LittleEndian.Uint64(mem[8:16]))}
}

// holdsNonce reports whether mem starts with the nonce writeNonce returned
// as words.
func holdsNonce(mem []byte, words [2]int64) bool {
	return int64(binary.LittleEndian.Uint64(mem[:8])) == words[0] && int64(binary.LittleEndian.Uint64(mem[8:16])) == words[1]
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// unmap releases every mapping and waker (after the worker has stopped).
func (s *shmGroup) unmap() {
	s.heap.close()
	for _, m := range s.segs {
		if m != nil {
			unmapSegment(m)
		}
	}
	s.segs = nil
	for _, w := range s.wakers {
		if w >= 0 {
			closeFD(w)
		}
	}
	if s.waker != nil {
		s.waker.Close()
		closeFD(s.wakerW)
	}
}

// word returns the counter at off in rank r's segment.
func (s *shmGroup) word(r, off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&s.segs[r][off]))
}

// staging returns rank r's staging slot k.
func (s *shmGroup) staging(r, k int) []byte {
	off := shmHeaderBytes + k*s.slot
	return s.segs[r][off : off+s.slot : off+s.slot]
}

// result returns rank r's result slot k.
func (s *shmGroup) result(r, k int) []byte {
	off := shmHeaderBytes + (2+k)*s.slot
	return s.segs[r][off : off+s.slot : off+s.slot]
}

// desc returns rank r's descriptor words for slot k.
func (s *shmGroup) desc(r, k int) *[3]uint64 {
	return (*[3]uint64)(unsafe.Pointer(&s.segs[r][shmDescOff+64*k]))
}

// reached compares round counters modulo 2³².
func reached(cur, want uint32) bool { return int32(cur-want) >= 0 }

// sleepers returns the word of rank r's sleeper bits that holds rank i's
// bit, and the bit.
func (s *shmGroup) sleepers(r, i int) (*uint32, uint32) {
	return s.word(r, shmSleepersOff+4*(i/32)), 1 << (i % 32)
}

// publish sets this rank's counter at off to v and wakes the peers
// sleeping on its counters.
func (s *shmGroup) publish(off int, v uint32) {
	atomic.StoreUint32(s.word(s.self, off), v)
	// The store comes before these loads and a sleeper's mark before its
	// last look at the counter, so one of the two sees the other.
	for base := 0; base < len(s.segs); base += 32 {
		marks := atomic.LoadUint32(s.word(s.self, shmSleepersOff+base/8))
		for ; marks != 0; marks &= marks - 1 {
			wake(s.wakers[base+bits.TrailingZeros32(marks)])
		}
	}
}

// await waits until rank j's counter at off reaches want, or returns why
// it never will.
func (s *shmGroup) await(j, off int, want uint32, d shmDesc, deadline time.Time) error {
	w := s.word(j, off)
	var start time.Time
	for i := 0; ; i++ {
		if reached(atomic.LoadUint32(w), want) {
			return nil
		}
		if i == 0 {
			start = time.Now()
		}
		if i < s.spins && time.Since(start) < s.spin {
			runtime.Gosched()
			continue
		}
		if err := s.check(j, d, deadline); err != nil {
			// A peer that reached the counter and went on to close its
			// group (it finished the collective first) did not fail.
			if reached(atomic.LoadUint32(w), want) {
				return nil
			}
			return err
		}
		mark, bit := s.sleepers(j, s.self)
		atomic.OrUint32(mark, bit)
		if !reached(atomic.LoadUint32(w), want) {
			s.waker.SetReadDeadline(time.Now().Add(min(shmNap, time.Until(deadline))))
			s.waker.Read(s.wbuf[:])
		}
		atomic.AndUint32(mark, ^bit)
	}
}

// check returns an error once waiting for peer j is hopeless: the group
// has failed, j's connection is gone or the deadline has passed.
func (s *shmGroup) check(j int, d shmDesc, deadline time.Time) error {
	g := s.g
	select {
	case <-g.done:
		return g.failure()
	default:
	}
	fail := func(err error) error {
		return &PeerError{Op: opName(d.op), Seq: d.seq, Rank: g.peers[j].global, Reporter: -1, Err: err}
	}
	if g.peers[j].ended() {
		// A rank that aborted names the first failure before it closes.
		return g.settle(fail(fmt.Errorf("connection closed during a shared-memory %s", opName(d.op))))
	}
	if !time.Now().Before(deadline) {
		// The peer may itself be waiting on another rank (in a
		// two-level collective, one on another machine): give its
		// report naming that rank a moment to arrive.
		return g.settle(fail(fmt.Errorf("timed out after %v waiting for it (is it running the same collective?)", g.Timeout())))
	}
	return nil
}

// awaitAll waits for the counter at off of every peer.
func (s *shmGroup) awaitAll(off int, want uint32, d shmDesc, deadline time.Time) error {
	for j := range s.segs {
		if j != s.self {
			if err := s.await(j, off, want, d, deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// run executes a collective of the given number of rounds.
func (s *shmGroup) run(d shmDesc, rounds int, p shmPhases, deadline time.Time) error {
	words := d.words(0)
	for r := range rounds {
		t := s.round
		k := int(t % 2)
		// Slot k was last read by the peers in round t-2.
		if err := s.awaitAll(shmReducedOff, t-1, d, deadline); err != nil {
			return err
		}
		p.fill(r, s.staging(s.self, k))
		*s.desc(s.self, k) = words
		s.publish(shmFilledOff, t+1)
		if err := s.awaitAll(shmFilledOff, t+1, d, deadline); err != nil {
			return err
		}
		if err := s.checkDescs(k, words, d); err != nil {
			return err
		}
		if p.gather != nil {
			// Result slot k was last read by the peers in round t-2.
			if err := s.awaitAll(shmGatheredOff, t-1, d, deadline); err != nil {
				return err
			}
		}
		p.middle(r, func(j int) []byte { return s.staging(j, k) }, s.result(s.self, k))
		s.publish(shmReducedOff, t+1)
		if p.gather != nil {
			if err := s.awaitAll(shmReducedOff, t+1, d, deadline); err != nil {
				return err
			}
			p.gather(r, func(j int) []byte { return s.result(j, k) })
		}
		s.publish(shmGatheredOff, t+1)
		s.round++
	}
	return nil
}

// checkDescs returns an error naming the first peer whose descriptor for
// slot k differs from this rank's words.
func (s *shmGroup) checkDescs(k int, words [3]uint64, d shmDesc) error {
	for j := range s.segs {
		if pw := *s.desc(j, k); j != s.self && pw != words {
			var why string
			switch diff := pw[2] ^ words[2]; {
			case diff&shmSharedFlag != 0:
				why = "; one all-reduces a tensor of SharedZeros and the other does not (allocate the tensor with SharedZeros on every rank or on none)"
			case diff>>32 != 0:
				why = fmt.Sprintf("; its root is rank %d and this rank's rank %d", pw[2]>>32, words[2]>>32)
			}
			return &PeerError{Op: opName(d.op), Seq: d.seq, Rank: s.g.peers[j].global, Reporter: -1, Err: fmt.Errorf(
				"mismatched operation: it runs %s #%d on %d elements of dtype %d while this rank runs %s #%d on %d elements of dtype %d (ranks must issue the same collectives in the same order, on tensors of the same shape and dtype)%s",
				opName(byte(pw[2])), pw[0], pw[1], byte(pw[2]>>8), opName(d.op), d.seq, d.n, d.dt, why)}
		}
	}
	return nil
}

// bytesVec views b, aligned memory of whole elements, as a vec of dtype dt.
func bytesVec(dt tensor.DType, b []byte) vec {
	switch dt {
	case tensor.Float32:
		return vec{dt, rawView[float32](b)}
	case tensor.Float64:
		return vec{dt, rawView[float64](b)}
	case tensor.Int32:
		return vec{dt, rawView[int32](b)}
	default:
		return vec{dt, rawView[int64](b)}
	}
}

// shmAllReduce all-reduces v in place: in each round of a slot's worth of
// elements, rank i reduces the i-th of N pieces from every rank's staging
// slot in rank order (dividing by N for Avg), and every rank copies the N
// reduced pieces back. Every element is reduced once, by one rank, in one
// order, so the ranks' results are bit-identical.
func (g *TCPGroup) shmAllReduce(seq uint64, v vec, op ReduceOp, deadline time.Time) error {
	s, es, n, size := g.shm, v.elemSize(), v.len(), g.size
	w := s.slot / es
	window := func(r int) (int, int) { return span(r, w, n) }
	piece := func(lo, hi, i int) (int, int) { return rankPiece(lo, hi, i, size) }
	all, place := sliceBytes(v.data), s.placeFor(n*es)
	return s.run(shmDesc{seq: seq, n: uint64(n), op: opAllReduce, dt: v.dt}, (n+w-1)/w, shmPhases{
		fill: func(r int, stage []byte) {
			// This rank's own piece is read from v: only the others
			// are staged.
			lo, hi := window(r)
			a, b := piece(lo, hi, s.self)
			copy(stage, all[lo*es:a*es])
			copy(stage[(b-lo)*es:], all[b*es:hi*es])
		},
		middle: func(r int, stage func(int) []byte, result []byte) {
			lo, hi := window(r)
			a, b := piece(lo, hi, s.self)
			from, to := (a-lo)*es, (b-lo)*es
			combineRanks(bytesVec(v.dt, result[:to-from]), 0, b-a, size, func(j int, use func(int, []byte)) {
				if j == s.self {
					use(0, all[a*es:b*es])
				} else {
					use(0, stage(j)[from:to])
				}
			}, op)
		},
		gather: func(r int, result func(int) []byte) {
			lo, hi := window(r)
			for j := range size {
				a, b := piece(lo, hi, j)
				place(all[a*es:b*es], result(j)[:(b-a)*es])
			}
		},
	}, deadline)
}

// span returns window r of windows of w elements over n elements.
func span(r, w, n int) (int, int) { return r * w, min((r+1)*w, n) }

// rankPiece returns the i-th of size near-equal pieces of [lo, hi): the
// piece rank i reduces in an all-reduce.
func rankPiece(lo, hi, i, size int) (int, int) {
	return lo + i*(hi-lo)/size, lo + (i+1)*(hi-lo)/size
}

// shmStreamBytes is the size from which a collective writes its results
// into the caller's tensors with non-temporal stores: a tensor that large
// does not stay in the caches until it is read anyway, and a cached store
// would first read every destination line from memory, a third more
// memory traffic for the phase.
const shmStreamBytes = 32 << 20

// placeFor returns how a collective of total bytes copies results into
// the caller's tensors.
func (s *shmGroup) placeFor(total int) func(dst, src []byte) int {
	if total >= s.streamFrom {
		return reduce.CopyStreaming
	}
	return func(dst, src []byte) int { return copy(dst, src) }
}

// shmReduceScatter reduces into dst this rank's share of the ranks' ins:
// in each round every rank stages its pieces for all ranks side by side,
// and each rank reduces the pieces meant for it straight from the peers'
// slots, in rank order.
func (g *TCPGroup) shmReduceScatter(seq uint64, dst vec, ins []vec, op ReduceOp, deadline time.Time) error {
	s, es, n, size := g.shm, dst.elemSize(), dst.len(), g.size
	c := s.slot / es / size
	window := func(r int) (int, int) { return span(r, c, n) }
	return s.run(shmDesc{seq: seq, n: uint64(n), op: opReduceScatter, dt: dst.dt}, (n+c-1)/c, shmPhases{
		fill: func(r int, stage []byte) {
			lo, hi := window(r)
			for j, in := range ins {
				if j != s.self {
					copy(stage[j*c*es:], sliceBytes(in.data)[lo*es:hi*es])
				}
			}
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			lo, hi := window(r)
			from := s.self * c * es
			combineRanks(dst, lo, hi, size, func(j int, use func(int, []byte)) {
				if j == s.self {
					use(0, sliceBytes(ins[j].data)[lo*es:hi*es])
				} else {
					use(0, stage(j)[from:from+(hi-lo)*es])
				}
			}, op)
		},
	}, deadline)
}

// combineRanks writes into dst[lo:hi) the combination by op, in rank
// order, of the size ranks' contributions (divided by size for Avg);
// contrib(j, use) hands rank j's elements to use in runs: use(at, b) for
// the elements from lo+at, in native byte order.
func combineRanks(dst vec, lo, hi, size int, contrib func(j int, use func(at int, b []byte)), op ReduceOp) {
	es := dst.elemSize()
	var runs []rankRun
	for j := range size {
		contrib(j, func(at int, b []byte) {
			if len(b) > 0 {
				runs = append(runs, rankRun{j, at, b})
			}
		})
	}
	if sumWhole(dst, lo, hi, size, runs, op) {
		return
	}
	for _, r := range runs {
		a := lo + r.at
		if r.j == 0 {
			dst.decode(a, a+len(r.b)/es, r.b)
		} else {
			dst.reduceBytes(a, a+len(r.b)/es, r.b, op)
		}
	}
	if op == Avg && hi > lo {
		vec{dst.dt, dst.slice(lo, hi)}.divide(size)
	}
}

// rankRun is a run of rank j's contribution to combineRanks: the
// elements from lo+at (at counts elements, not bytes).
type rankRun struct {
	j, at int
	b     []byte
}

// sumWhole is combineRanks' one-pass form for float sums where every rank
// contributes all of [lo, hi), in runs of its own (each rank's runs in
// order; the peers' come whole from their slots, this rank's own share of
// a ZeRO reduce-scatter from the tensors that hold it): it cuts [lo, hi)
// wherever some rank's run ends and adds the ranks' runs over each piece
// in rank order with reduce's fused kernels (dividing by size for Avg in
// the same pass), the bits of the run-by-run path and the division after
// it, and reports whether it could.
func sumWhole(dst vec, lo, hi, size int, runs []rankRun, op ReduceOp) bool {
	if (op != Sum && op != Avg) || len(runs) == 0 {
		return false
	}
	mean := op == Avg && size > 1
	switch d := dst.data.(type) {
	case []float32:
		sum := reduce.SumFloat32s
		if mean {
			sum = func(dst []float32, srcs ...[]float32) { reduce.MeanFloat32s(dst, float32(size), srcs...) }
		}
		return sumPieces(d[lo:hi], size, runs, sum)
	case []float64:
		sum := reduce.SumFloat64s
		if mean {
			sum = func(dst []float64, srcs ...[]float64) { reduce.MeanFloat64s(dst, float64(size), srcs...) }
		}
		return sumPieces(d[lo:hi], size, runs, sum)
	}
	return false
}

// sumPieces is sumWhole for dst of element type T.
func sumPieces[T float32 | float64](dst []T, size int, runs []rankRun, sum func([]T, ...[]T)) bool {
	// first[j] is the index of rank j's first run; views are the runs as
	// []T; covered counts the elements of the current rank's runs so far.
	var first []int
	views := make([][]T, len(runs))
	covered := 0
	for i, r := range runs {
		if r.j == len(first) {
			if len(first) > 0 && covered != len(dst) {
				return false
			}
			first, covered = append(first, i), 0
		}
		views[i] = rawView[T](r.b)
		if r.j != len(first)-1 || views[i] == nil || r.at != covered {
			return false
		}
		covered += len(views[i])
	}
	if len(first) != size || covered != len(dst) {
		return false
	}
	cur, srcs := first, make([][]T, len(first))
	// start[j] is where rank j's current run starts in dst.
	start := make([]int, len(first))
	for pos := 0; pos < len(dst); {
		end := len(dst)
		for j, i := range cur {
			end = min(end, start[j]+len(views[i]))
		}
		for j, i := range cur {
			srcs[j] = views[i][pos-start[j] : end-start[j]]
		}
		sum(dst[pos:end], srcs...)
		for j, i := range cur {
			if start[j]+len(views[i]) == end {
				cur[j], start[j] = i+1, end
			}
		}
		pos = end
	}
	return true
}

// shmAllGather copies every rank's in into outs[rank], a slot at a time,
// straight from the peers' staging slots.
func (g *TCPGroup) shmAllGather(seq uint64, in vec, outs []vec, deadline time.Time) error {
	s, es, n := g.shm, in.elemSize(), in.len()
	w := s.slot / es
	window := func(r int) (int, int) { return span(r, w, n) }
	src := sliceBytes(in.data)
	return s.run(shmDesc{seq: seq, n: uint64(n), op: opAllGather, dt: in.dt}, (n+w-1)/w, shmPhases{
		fill: func(r int, stage []byte) {
			lo, hi := window(r)
			copy(stage, src[lo*es:hi*es])
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			lo, hi := window(r)
			for j, o := range outs {
				copy(sliceBytes(o.data)[lo*es:hi*es], stage(j)[:(hi-lo)*es])
			}
		},
	}, deadline)
}

// shmBroadcast copies root's v into every other rank's v, a slot at a
// time, straight from root's staging slot.
func (g *TCPGroup) shmBroadcast(seq uint64, v vec, root int, deadline time.Time) error {
	s, es, n := g.shm, v.elemSize(), v.len()
	w := s.slot / es
	all := sliceBytes(v.data)
	return s.run(shmDesc{seq: seq, n: uint64(n), op: opBroadcast, dt: v.dt, root: root}, (n+w-1)/w, shmPhases{
		fill: func(r int, stage []byte) {
			if s.self == root {
				lo, hi := span(r, w, n)
				copy(stage, all[lo*es:hi*es])
			}
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			if s.self != root {
				lo, hi := span(r, w, n)
				copy(all[lo*es:hi*es], stage(root)[:(hi-lo)*es])
			}
		},
	}, deadline)
}

// shmReduce combines every rank's v by op, in rank order, into root's v
// (dividing by N for Avg). Root reads its own contribution from its slot
// too, so that writing a result never overwrites one still to be read.
func (g *TCPGroup) shmReduce(seq uint64, v vec, root int, op ReduceOp, deadline time.Time) error {
	es := v.elemSize()
	d := shmDesc{seq: seq, n: uint64(v.len()), op: opReduce, dt: v.dt, root: root}
	return g.shmToRoot(d, v, func(lo, hi int, stage func(int) []byte) {
		combineRanks(v, lo, hi, g.size, func(j int, use func(int, []byte)) {
			use(0, stage(j)[:(hi-lo)*es])
		}, op)
	}, deadline)
}

// shmGather copies every rank's in into root's outs[rank] (root's own
// from its slot as well, so that outs may overlap in as far as ownCopy
// allows).
func (g *TCPGroup) shmGather(seq uint64, in vec, outs []vec, root int, deadline time.Time) error {
	es := in.elemSize()
	d := shmDesc{seq: seq, n: uint64(in.len()), op: opGather, dt: in.dt, root: root}
	return g.shmToRoot(d, in, func(lo, hi int, stage func(int) []byte) {
		for j, o := range outs {
			copy(sliceBytes(o.data)[lo*es:hi*es], stage(j)[:(hi-lo)*es])
		}
	}, deadline)
}

// shmToRoot runs collective d, in which every rank stages src a slot at a
// time and root reads every rank's window [lo, hi) from the slots with
// use.
func (g *TCPGroup) shmToRoot(d shmDesc, src vec, use func(lo, hi int, stage func(j int) []byte), deadline time.Time) error {
	s, es, n := g.shm, src.elemSize(), src.len()
	w := s.slot / es
	all := sliceBytes(src.data)
	return s.run(d, (n+w-1)/w, shmPhases{
		fill: func(r int, stage []byte) {
			lo, hi := span(r, w, n)
			copy(stage, all[lo*es:hi*es])
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			if s.self == d.root {
				lo, hi := span(r, w, n)
				use(lo, hi, stage)
			}
		},
	}, deadline)
}

// shmScatter copies root's ins[j] into rank j's out, a slot at a time:
// root stages the ranks' pieces side by side and each rank but root
// copies its own from root's slot. On root, out only gives the size and
// dtype (root stores its own piece afterwards, as the TCP path does).
func (g *TCPGroup) shmScatter(seq uint64, out vec, ins []vec, root int, deadline time.Time) error {
	s, es, n, size := g.shm, out.elemSize(), out.len(), g.size
	c := s.slot / es / size
	dst := sliceBytes(out.data)
	return s.run(shmDesc{seq: seq, n: uint64(n), op: opScatter, dt: out.dt, root: root}, (n+c-1)/c, shmPhases{
		fill: func(r int, stage []byte) {
			if s.self != root {
				return
			}
			lo, hi := span(r, c, n)
			for j, in := range ins {
				if j != root {
					copy(stage[j*c*es:], sliceBytes(in.data)[lo*es:hi*es])
				}
			}
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			if s.self == root {
				return
			}
			lo, hi := span(r, c, n)
			from := s.self * c * es
			copy(dst[lo*es:hi*es], stage(root)[from:from+(hi-lo)*es])
		},
	}, deadline)
}

// shmBarrier returns once every rank has entered it: one round that
// carries nothing.
func (g *TCPGroup) shmBarrier(seq uint64, deadline time.Time) error {
	nop := func(int, []byte) {}
	return g.shm.run(shmDesc{seq: seq, op: opBarrier, dt: tensor.Float32}, 1, shmPhases{
		fill:   nop,
		middle: func(int, func(int) []byte, []byte) {},
	}, deadline)
}

// shmReduceScatterParts is reduceScatterPartsAsync's shared-memory form:
// like shmReduceScatter, with this rank's contributions for rank j in the
// pieces send(j) (own for itself); opc names the collective it serves.
func (g *TCPGroup) shmReduceScatterParts(opc byte, dt tensor.DType, send func(j int) parts, own parts, dst vec, op ReduceOp, deadline time.Time) error {
	s, es, n, size := g.shm, dt.Size(), dst.len(), g.size
	c := s.slot / es / size
	window := func(r int) (int, int) { return span(r, c, n) }
	srcs := make([]parts, size)
	for j := range srcs {
		if j != s.self {
			srcs[j] = send(j)
		}
	}
	return s.run(shmDesc{seq: g.nextSeq(), n: uint64(n), op: opc, dt: dt}, (n+c-1)/c, shmPhases{
		fill: func(r int, stage []byte) {
			lo, hi := window(r)
			for j, ps := range srcs {
				if j != s.self {
					ps.copyOut(lo, hi, stage[j*c*es:])
				}
			}
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			lo, hi := window(r)
			from := s.self * c * es
			combineRanks(dst, lo, hi, size, func(j int, use func(int, []byte)) {
				if j != s.self {
					use(0, stage(j)[from:from+(hi-lo)*es])
					return
				}
				own.overlap(lo, hi, func(p vec, a, e, at int) {
					use(at/es, sliceBytes(p.data)[a*es:e*es])
				})
			}, op)
		},
	}, deadline)
}

// shmAllGatherParts is allGatherPartsAsync's shared-memory form: every
// peer j's own pieces are copied into dsts[j]. The shares may differ in
// length: lens holds every rank's.
func (g *TCPGroup) shmAllGatherParts(opc byte, dt tensor.DType, own parts, dsts []parts, lens []int, deadline time.Time) error {
	s, es := g.shm, dt.Size()
	w := s.slot / es
	n, total := 0, 0
	for _, l := range lens {
		n, total = max(n, l), total+l
	}
	// window returns round r's elements of a share of length l.
	window := func(r, l int) (int, int) { return min(r*w, l), min((r+1)*w, l) }
	return s.run(shmDesc{seq: g.nextSeq(), n: uint64(total), op: opc, dt: dt}, (n+w-1)/w, shmPhases{
		fill: func(r int, stage []byte) {
			lo, hi := window(r, lens[s.self])
			own.copyOut(lo, hi, stage)
		},
		middle: func(r int, stage func(int) []byte, _ []byte) {
			for j, ps := range dsts {
				if lo, hi := window(r, lens[j]); j != s.self && lo < hi {
					ps.decode(lo, hi, stage(j)[:(hi-lo)*es])
				}
			}
		},
	}, deadline)
}
