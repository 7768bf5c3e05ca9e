package distributed

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/emberml/ember/tensor"
)

// Tensors in shared memory.
//
// The shared-memory transport (shm.go) stages every contribution in a
// slot because the ranks cannot read each other's tensors, and copies
// every result out of the peers' slots: two copies of each tensor beyond
// the reduction. A tensor of SharedZeros lives in a segment every rank of
// the machine maps, so an all-reduce of such tensors reads the peers'
// contributions where they are and writes each rank's share of the result
// straight into every rank's tensor: each rank's tensor is read once by
// the rank that reduces each piece and written once, and nothing is
// staged. Ordinary tensors take the same path through cross-memory attach
// (cma.go).

// shmSharedFlag marks, in a slot descriptor's op word, a collective on
// tensors of SharedZeros.
const shmSharedFlag = 1 << 16

// sharedRegion is one SharedZeros allocation: a segment per rank, all of
// one size, each mapped by every rank.
type sharedRegion struct {
	id   uint64
	segs [][]byte // by rank; segs[self] holds this rank's tensor
}

// sharedHeap holds a group's live SharedZeros regions. Tensors release
// theirs from cleanup goroutines, hence the mutex.
type sharedHeap struct {
	mu      sync.Mutex
	self    int
	closed  bool
	regions map[uint64]*sharedRegion
	next    uint64 // id of the next region; worker goroutine only
}

// SharedZeros returns a tensor of zeros of the given shape and dtype
// (float32, float64, int32 or int64) whose memory every rank of this
// machine maps. AllReduce of such tensors reads the peers' tensors in
// place instead of staging them, the fastest all-reduce between processes
// of one machine; DataParallel allocates its gradient buckets with it.
//
// SharedZeros is a collective: every rank calls it in the same order as
// its other collectives, with the same shape and dtype, and an all-reduce
// must get a SharedZeros tensor (or a contiguous view at the same offset
// of one) on every rank or on none. Where the ranks cannot share memory
// (ranks on several machines, a subgroup, DisableSharedMemory, another
// operating system than Linux) it returns an ordinary tensor and the
// collectives behave as for any other. The memory is freed once the
// tensor and its views are unreachable.
func (g *TCPGroup) SharedZeros(shape []int, dt tensor.DType) (*tensor.Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("distributed.SharedZeros: negative dimension in shape %v", shape))
		}
		n *= d
	}
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64:
	default:
		panic(fmt.Sprintf("distributed.SharedZeros: dtype %s; collectives support float32, float64, int32 and int64", dt))
	}
	var t *tensor.Tensor
	err := wait(g.submit(func(deadline time.Time) error {
		if g.shm == nil || n == 0 {
			t = tensor.Zeros(shape, dt)
			return nil
		}
		mem, release, err := g.shm.allocShared(n*dt.Size(), deadline)
		switch {
		case err != nil:
			return err
		case mem == nil:
			t = tensor.Zeros(shape, dt)
		default:
			t = hostTensor(dt, mem, release, shape)
		}
		return nil
	}))
	return t, err
}

// hostTensor makes a tensor of shape and dtype dt whose storage is mem.
func hostTensor(dt tensor.DType, mem []byte, release func(), shape []int) *tensor.Tensor {
	switch dt {
	case tensor.Float32:
		return tensor.FromHostMemory(rawView[float32](mem), release, shape...)
	case tensor.Float64:
		return tensor.FromHostMemory(rawView[float64](mem), release, shape...)
	case tensor.Int32:
		return tensor.FromHostMemory(rawView[int32](mem), release, shape...)
	default:
		return tensor.FromHostMemory(rawView[int64](mem), release, shape...)
	}
}

// allocShared creates a region of at least bytes on every rank and maps
// the peers' segments. It returns this rank's memory (bytes long, zeroed)
// and the function that frees the region, or nil memory and no error when
// some rank could not create or map a segment: then every rank falls back
// to an ordinary tensor. All ranks run the same two exchanges whatever
// happens, as in setupShm.
func (s *shmGroup) allocShared(bytes int, deadline time.Time) ([]byte, func(), error) {
	g := s.g
	size := (bytes + 16 + 4095) &^ 4095 // whole pages, room for the nonce
	segs := make([][]byte, g.size)
	unmapAll := func() {
		for _, m := range segs {
			if m != nil {
				unmapSegment(m)
			}
		}
	}
	var nonce [2]int64
	mem, pid, fd, err := createSegment(size)
	ok := err == nil
	if ok {
		defer closeFD(fd) // once every rank has opened it
		segs[g.rank] = mem
		nonce = writeNonce(mem)
	}
	info := []int64{boolInt(ok), int64(pid), int64(fd), int64(size), nonce[0], nonce[1]}
	got, err := g.exchange(opShmAlloc, g.nextSeq(), tensor.Int64, len(info), func(int) vec { return vec{tensor.Int64, info} }, deadline)
	if err != nil {
		unmapAll()
		return nil, nil, err
	}
	for j := 0; ok && j < g.size; j++ {
		if j == g.rank {
			continue
		}
		d := got[j].data.([]int64)
		if d[0] != 1 || d[3] != int64(size) {
			ok = false
			break
		}
		m, err := openSegment(int(d[1]), int(d[2]), size)
		if err != nil {
			ok = false
			break
		}
		segs[j] = m
		ok = holdsNonce(m, [2]int64{d[4], d[5]})
	}
	ok, err = g.agree(opShmAlloc, ok, deadline)
	if err != nil {
		unmapAll()
		return nil, nil, err
	}
	if !ok {
		unmapAll()
		return nil, nil, nil
	}
	// Every peer has checked the nonce by now (it voted after).
	clear(mem[:16])
	h := &s.heap
	r := &sharedRegion{id: h.next, segs: segs}
	h.next++
	h.mu.Lock()
	h.regions[r.id] = r
	h.mu.Unlock()
	return mem[:bytes:bytes], func() { h.release(r.id) }, nil
}

// release frees region id: it unmaps this rank's mappings of every
// segment. Peers keep theirs until they release the region too; the
// kernel frees a segment once no process maps it.
func (h *sharedHeap) release(id uint64) {
	h.mu.Lock()
	r := h.regions[id]
	delete(h.regions, id)
	closed := h.closed
	h.mu.Unlock()
	if r == nil {
		return
	}
	for j, m := range r.segs {
		// After Close the peers' mappings are gone already.
		if m != nil && (j == h.self || !closed) {
			unmapSegment(m)
		}
	}
}

// close unmaps the peers' segments of every live region when the group
// closes. The rank's own segments stay mapped until their tensors are
// unreachable: the tensors still use them.
func (h *sharedHeap) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, r := range h.regions {
		for j, m := range r.segs {
			if j != h.self && m != nil {
				unmapSegment(m)
			}
		}
	}
}

// find returns the region whose memory holds b, the bytes of a tensor on
// this rank, and b's offset in it; nil if b is not shared memory.
func (h *sharedHeap) find(b []byte) (*sharedRegion, int) {
	if len(b) == 0 {
		return nil, 0
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.regions {
		own := r.segs[h.self]
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(own)))
		if p >= lo && p-lo+uintptr(len(b)) <= uintptr(len(own)) {
			return r, int(p - lo)
		}
	}
	return nil, 0
}

// descWhere returns rank r's words for slot k that say where its tensor
// is in a zero-copy all-reduce: region and offset for SharedZeros
// tensors, address and length for cross-memory attach (cma.go).
func (s *shmGroup) descWhere(r, k int) *[2]uint64 {
	return (*[2]uint64)(unsafe.Pointer(&s.segs[r][shmDescOff+64*k+24]))
}

// shmSharedAllReduce all-reduces v, this rank's bytes at offset off of
// region reg, in place, when every rank's tensor is shared memory: every
// rank maps the peers' tensors, so zeroCopyAllReduce reads them where
// they are.
func (g *TCPGroup) shmSharedAllReduce(seq uint64, v vec, reg *sharedRegion, off int, op ReduceOp, deadline time.Time) error {
	n := len(sliceBytes(v.data))
	return g.zeroCopyAllReduce(seq, v, op, shmSharedFlag, [2]uint64{reg.id, uint64(off)}, func(j int, where [2]uint64) (peerTensor, error) {
		if where[0] != reg.id || where[1] > uint64(len(reg.segs[j])-n) {
			return peerTensor{}, fmt.Errorf("mismatched operation: it all-reduces SharedZeros tensor #%d at byte %d while this rank all-reduces #%d, %d bytes (ranks must all-reduce tensors of the same SharedZeros call)", where[0], where[1], reg.id, n)
		}
		return peerTensor{mem: reg.segs[j][where[1] : int(where[1])+n]}, nil
	}, deadline)
}

// peerTensor is a peer's tensor in a zero-copy all-reduce: its bytes
// where this process addresses them (a SharedZeros segment, or the
// memory of a rank of this process), or else the process and address
// to reach them at with cross-memory attach.
type peerTensor struct {
	mem  []byte
	pid  int
	addr uintptr
}

// read returns the tensor's bytes [from, to): in place where this
// process addresses them, else read into scratch.
func (p peerTensor) read(from, to int, scratch []byte) ([]byte, error) {
	if p.mem != nil {
		return p.mem[from:to], nil
	}
	b := scratch[:to-from]
	return b, readRemote(p.pid, p.addr+uintptr(from), b)
}

// write copies src into the tensor from byte at on.
func (p peerTensor) write(at int, src []byte) error {
	if p.mem != nil {
		// Cached stores: non-temporal ones took 1.6 to 1.9 times as long
		// here (4 goroutine ranks, 64 MB of float32, 2 cores).
		copy(p.mem[at:at+len(src)], src)
		return nil
	}
	return writeRemote(p.pid, p.addr+uintptr(at), src)
}

// zeroCopyAllReduce all-reduces v in place, reading and writing the
// peers' tensors where they are instead of staging them in slots. Every
// rank publishes where its tensor is (the words where, beside a
// descriptor marked with flag) and open turns a peer's words into its
// peerTensor. In windows of a slot's worth of elements, rank i reduces
// the i-th of N pieces from every rank's tensor, in rank order, into its
// own tensor (dividing by N for Avg), and writes the result into every
// peer's tensor. Only rank i reads or writes piece i of any tensor, so
// the ranks never wait for each other between windows: they meet at the
// start (every contribution is in place) and at the end (every peer has
// written its pieces here, and no peer still touches this rank's tensor
// when it returns). As in shmAllReduce every element is reduced once, by
// one rank, in one order: the results are bit-identical.
//
// Pushing each result while it is in the caches, rather than having the
// peers pull it after a wait, also saves the sleeps and wake-ups of ranks
// that outnumber the cores: 4 goroutine ranks on 2 cores all-reduced 64 MB
// of float32 1.6 to 1.7 times as fast as pulling (BenchmarkAllReduceVsStream).
func (g *TCPGroup) zeroCopyAllReduce(seq uint64, v vec, op ReduceOp, flag uint64, where [2]uint64, open func(j int, where [2]uint64) (peerTensor, error), deadline time.Time) error {
	s, n := g.shm, v.len()
	d := shmDesc{seq: seq, n: uint64(n), op: opAllReduce, dt: v.dt}
	t, k := s.round, int(s.round%2)
	// However it ends, this rank writes into no peer's tensor after it.
	defer s.publish(shmWroteOff, t+1)
	// Slot k's descriptor and staging were last read by the peers in
	// round t-2.
	if err := s.awaitAll(shmReducedOff, t-1, d, deadline); err != nil {
		return err
	}
	*s.desc(s.self, k) = d.words(flag)
	*s.descWhere(s.self, k) = where
	own := sliceBytes(v.data)
	raceRelease(own)
	s.publish(shmFilledOff, t+1)
	peers := make([]peerTensor, g.size)
	err := g.zeroCopyWindows(v, op, d, k, peers, open, deadline)
	for _, p := range peers {
		raceRelease(p.mem)
	}
	s.publish(shmWroteOff, t+1)
	if err == nil {
		// The counters move on by the windows, as rounds of the staged
		// path would, so that the next collective's waits hold whichever
		// path it takes.
		w := s.pieceElems(v.elemSize()) * g.size
		end := t + uint32((n+w-1)/w)
		s.publish(shmFilledOff, end)
		s.publish(shmReducedOff, end)
		s.publish(shmGatheredOff, end)
		s.round = end
		err = s.awaitAll(shmGatheredOff, end, d, deadline)
		raceAcquire(own)
	}
	// Peers in other processes write into this rank's tensor (its Go
	// heap) by address, even those that went on after this rank failed;
	// goroutine ranks may still hold its address. What may yet be touched
	// stays referenced by the group instead of returning to the heap.
	if err != nil && flag == 0 {
		settled := true
		if slices.Contains(s.local, false) {
			settled = s.quiesce(t, err)
		}
		if !settled || !onlySelf(s.local, s.self) {
			s.held = append(s.held, own)
		}
	}
	return err
}

// onlySelf reports whether self is the only rank marked in local.
func onlySelf(local []bool, self int) bool {
	for j, l := range local {
		if l && j != self {
			return false
		}
	}
	return true
}

// pieceElems is how many elements of es bytes a rank reduces in a full
// window of an in-place all-reduce: a window is a whole number of equal
// pieces, so that the pieces of all ranks fit side by side in one slot
// of scratch.
func (s *shmGroup) pieceElems(es int) int { return s.slot / es / s.g.size }

// quiesce is the way out of an in-place all-reduce of round t that failed
// (err) once this rank had published its tensor, when peers in other
// processes write into it: the caller may free the tensor once it
// returns. It finds the peers that may still write (writers), aborts the
// group so that they stop at their next window, and waits, at most
// shmQuiesce, for them to leave their windows; settled reports that they
// all did.
func (s *shmGroup) quiesce(t uint32, err error) (settled bool) {
	ws := s.writers(t)
	s.g.abort(err)
	until := time.Now().Add(shmQuiesce)
	for j, w := range ws {
		for w && !reached(atomic.LoadUint32(s.word(j, shmWroteOff)), t+1) {
			if !time.Now().Before(until) {
				return false
			}
			time.Sleep(shmSpin)
		}
	}
	return true
}

// writers takes this rank's start of round t back, so that a peer yet to
// start waits for it instead of writing, and reports which peers may
// still write into its tensor: those whose connection is up and that had
// started (a peer publishes its start before it looks at this rank's).
func (s *shmGroup) writers(t uint32) []bool {
	ws := make([]bool, len(s.segs))
	for j := range ws {
		ws[j] = j != s.self && !s.g.peers[j].ended()
	}
	atomic.StoreUint32(s.word(s.self, shmFilledOff), t)
	for j := range ws {
		ws[j] = ws[j] && reached(atomic.LoadUint32(s.word(j, shmFilledOff)), t+1)
	}
	return ws
}

// zeroCopyWindows is zeroCopyAllReduce from its start barrier (round t =
// s.round, descriptor slot k, this rank's published) to the end of its
// windows: it checks the descriptors, opens the peers' tensors into peers
// and reduces and writes this rank's pieces.
func (g *TCPGroup) zeroCopyWindows(v vec, op ReduceOp, d shmDesc, k int, peers []peerTensor, open func(j int, where [2]uint64) (peerTensor, error), deadline time.Time) error {
	s, es, n, size := g.shm, v.elemSize(), v.len(), g.size
	t := s.round
	pw := s.pieceElems(es)
	w := pw * size
	windows := (n + w - 1) / w
	peerErr := func(j int, err error) error {
		return &PeerError{Op: opName(d.op), Seq: d.seq, Rank: s.g.peers[j].global, Reporter: -1, Err: err}
	}
	words := *s.desc(s.self, k)
	if err := s.awaitAll(shmFilledOff, t+1, d, deadline); err != nil {
		return err
	}
	if err := s.checkDescs(k, words, d); err != nil {
		return err
	}
	if s.pause != nil {
		s.pause()
	}
	for j := range peers {
		if j != s.self {
			var err error
			if peers[j], err = open(j, *s.descWhere(j, k)); err != nil {
				return peerErr(j, err)
			}
			raceAcquire(peers[j].mem)
		}
	}
	// Cross-memory attach fails when the peer is gone; its connection
	// usually tells first, and names the failure better.
	remoteErr := func(j int, err error) error {
		if cerr := s.check(j, d, deadline); cerr != nil {
			return cerr
		}
		return peerErr(j, err)
	}
	own := sliceBytes(v.data)
	// The one-pass float sums read every source at an element before they
	// write it, so this rank's piece may be both a source and the
	// destination when one pass takes all the sources (four at most);
	// otherwise the piece is copied aside first. The idle staging slot is
	// the scratch: rank j's piece of a window goes to its j-th part.
	inPlace := (op == Sum || op == Avg) && (v.dt == tensor.Float32 || v.dt == tensor.Float64) && size <= 4
	scratch := s.staging(s.self, k)
	part := func(j int) []byte { return scratch[j*pw*es : (j+1)*pw*es] }
	srcs := make([][]byte, size)
	for r := range windows {
		// A failed peer may have returned, its tensor no longer the
		// collective's: stop before reaching into it again.
		for j, p := range peers {
			if p.pid != 0 {
				if err := s.check(j, d, deadline); err != nil {
					return err
				}
			}
		}
		lo, hi := span(r, w, n)
		a, b := rankPiece(lo, hi, s.self, size)
		for j := range srcs {
			switch {
			case j != s.self:
				var err error
				if srcs[j], err = peers[j].read(a*es, b*es, part(j)); err != nil {
					return remoteErr(j, err)
				}
			case inPlace:
				srcs[j] = own[a*es : b*es]
			default:
				srcs[j] = part(j)[:(b-a)*es]
				copy(srcs[j], own[a*es:b*es])
			}
		}
		combineRanks(v, a, b, size, func(j int, use func(int, []byte)) { use(0, srcs[j]) }, op)
		for j, p := range peers {
			if j != s.self {
				if err := p.write(a*es, own[a*es:b*es]); err != nil {
					return remoteErr(j, err)
				}
			}
		}
	}
	return nil
}
