// Package alloc is the caching device-memory allocator of the CUDA backend.
//
// Asking the driver for memory (cuMemAlloc) is slow and synchronising, and
// returning it (cuMemFree) waits for the whole device, so the backend asks
// for memory in large segments and carves blocks out of them, keeping freed
// blocks cached for the next request. The policy follows PyTorch's CUDA
// caching allocator:
//
//   - Every request is rounded up to a multiple of [MinBlockSize] (512
//     bytes); a zero-byte request gets a 512-byte block, so every block has
//     its own address.
//   - Requests of at most [SmallSize] (1 MiB) are served from the small
//     pool, whose segments are [SmallSegmentSize] (2 MiB). Larger requests
//     are served from the large pool, whose segments are the request rounded
//     up to [LargeSegmentRound] (2 MiB). The pools never lend to each other,
//     which keeps many short-lived small tensors from fragmenting the
//     segments that hold big ones.
//   - A request takes the best-fitting cached free block of its pool and
//     stream (the smallest one at least as large; lowest address on ties),
//     found by binary search in a size-ordered free list. If the block is
//     larger than needed it is split and the tail stays cached: in the small
//     pool whenever the tail is at least 512 bytes, in the large pool only
//     when the tail is larger than 1 MiB (a smaller tail is handed out with
//     the block, so [Block.Size] may exceed the rounded request by up to
//     1 MiB). Options.MaxSplitSize can forbid splitting of very large
//     blocks altogether.
//   - A freed block goes back to the cache of the stream it was allocated
//     on and is merged with its free neighbours in the same segment, so a
//     segment whose blocks are all free becomes one free block again, which
//     [Allocator.EmptyCache] can return to the device. Blocks are reused
//     only on their own stream: work queued on a stream runs in order, so
//     memory freed by the host while a kernel on that stream may still read
//     it is safe to hand to the next kernel on the same stream, but not to
//     another stream.
//   - When the device is out of memory, the allocator returns every cached
//     segment that holds no live block to the device and retries; if that
//     fails too, it calls Options.Reclaim (the backend runs the Go garbage
//     collector there, so that tensors nobody references give back their
//     blocks through their cleanups), looks in the cache again, releases the
//     cached segments again and retries a last time. If that fails the
//     error is an [*OutOfMemoryError] reporting the request and the
//     allocator's state; it satisfies errors.Is(err, ErrOutOfMemory).
//
// An Allocator is safe for concurrent use: one mutex guards its state.
// Device calls are made with the mutex held (the Device must not call back
// into the allocator); Options.Reclaim is called without it, since the
// cleanups it waits for call [Allocator.Free] from other goroutines.
package alloc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Size classes of the allocation policy (see the package documentation).
const (
	// MinBlockSize is the allocation granularity: every block size and
	// every block address offset within its segment is a multiple of it.
	MinBlockSize = 512
	// SmallSize is the largest rounded request served from the small pool.
	SmallSize = 1 << 20
	// SmallSegmentSize is the size of every small-pool segment.
	SmallSegmentSize = 2 << 20
	// LargeSegmentRound is the granularity of large-pool segments.
	LargeSegmentRound = 2 << 20
)

// ErrOutOfMemory reports that device memory is exhausted. Device
// implementations return errors satisfying errors.Is(err, ErrOutOfMemory)
// when an allocation fails for lack of memory; the allocator's own
// out-of-memory errors satisfy it too.
var ErrOutOfMemory = errors.New("out of device memory")

// Device is the memory the allocator draws from: the CUDA driver's
// cuMemAlloc and cuMemFree in the backend, a fake in tests.
type Device interface {
	// Malloc reserves bytes of device memory and returns its address.
	// Out-of-memory errors satisfy errors.Is(err, ErrOutOfMemory).
	Malloc(bytes int) (uint64, error)
	// Free returns memory obtained from Malloc.
	Free(addr uint64) error
}

// Options tunes an Allocator. The zero value is a sensible default.
type Options struct {
	// Reclaim, if set, is called once when a request fails for lack of
	// device memory even after the cache was emptied, before the last
	// retry. It is called without the allocator's lock held, so it may
	// (and typically does, through runtime cleanups) free blocks.
	Reclaim func()
	// MemoryLimit, if positive, caps Reserved: a request that would need
	// the allocator to hold more device memory than this fails like a
	// device out-of-memory (after the same release-and-retry steps).
	MemoryLimit int64
	// ReleaseThreshold, if positive, limits the cache: before asking the
	// device for a new segment that would bring Reserved above this many
	// bytes, the allocator first returns cached whole free segments to the
	// device, largest first, until the new segment fits under the
	// threshold or none is left. It trades allocation speed for a smaller
	// footprint, like PyTorch's garbage_collection_threshold.
	ReleaseThreshold int64
	// MaxSplitSize, if positive, stops large free blocks from being split:
	// a cached block of at least MaxSplitSize bytes serves only requests
	// of at least MaxSplitSize bytes, whole, and only when it exceeds the
	// request by at most MaxSplitWaste. This keeps huge segments from
	// being nibbled away by medium requests (PyTorch's max_split_size_mb).
	MaxSplitSize int
	// MaxSplitWaste is the most bytes by which an unsplittable block (see
	// MaxSplitSize) may exceed the request it serves. Zero means 20 MiB.
	MaxSplitWaste int
}

// defaultMaxSplitWaste is MaxSplitWaste's zero-value meaning.
const defaultMaxSplitWaste = 20 << 20

// Stats is a snapshot of an Allocator's accounting. Byte counts are of
// rounded block sizes, as reserved.
type Stats struct {
	// Allocated is the bytes held by live (not yet freed) blocks.
	Allocated int64
	// Reserved is the bytes of device memory held by the allocator: live
	// blocks plus the cache.
	Reserved int64
	// Peak is the largest Allocated since creation or the last ResetPeak.
	Peak int64
	// PeakReserved is the largest Reserved since creation or the last
	// ResetPeak.
	PeakReserved int64
	// Segments is the number of device allocations held.
	Segments int
	// Allocs and Frees count successful Alloc and Free calls.
	Allocs, Frees int64
	// CacheHits counts Allocs served from the cache, without a device
	// allocation.
	CacheHits int64
	// DeviceMallocs and DeviceFrees count successful device calls.
	DeviceMallocs, DeviceFrees int64
	// OOMRetries counts device allocations retried after an out-of-memory
	// failure.
	OOMRetries int64
}

// OutOfMemoryError is the error Alloc returns when device memory is
// exhausted even after the cache was emptied and Options.Reclaim ran. It
// satisfies errors.Is(err, ErrOutOfMemory) and unwraps to the device's
// error.
type OutOfMemoryError struct {
	// Requested is the size asked for, Rounded the block size it needed
	// and Segment the device allocation that failed.
	Requested, Rounded, Segment int
	// Stream is the stream the request was made on.
	Stream uint64
	// Allocated and Reserved are the allocator's Stats at the failure.
	Allocated, Reserved int64
	// Err is the device's (or the memory limit's) error.
	Err error
}

// Error implements error.
func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("alloc: out of device memory: requested %d bytes (block %d, segment %d) on stream %d "+
		"with %d bytes allocated and %d reserved (cache emptied, retried): %v",
		e.Requested, e.Rounded, e.Segment, e.Stream, e.Allocated, e.Reserved, e.Err)
}

// Is reports whether target is ErrOutOfMemory.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// Unwrap returns the device's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// segment is one device allocation, carved into a list of spans.
type segment struct {
	base   uint64
	size   int
	stream uint64
	large  bool
	head   *span // the span at base; it stays the head for the segment's life
}

// span is a piece of a segment: a live block or a cached free one. The
// spans of a segment tile it in address order through prev and next.
type span struct {
	addr       uint64
	size       int
	seg        *segment
	prev, next *span
	allocated  bool
}

// whole reports whether the span covers its entire segment.
func (s *span) whole() bool { return s.prev == nil && s.next == nil }

// poolKey names a free list: the cached blocks of one pool of one stream.
// A stream's lists are kept once created, even when empty.
type poolKey struct {
	stream uint64
	large  bool
}

// freeList holds free spans ordered by (size, addr).
type freeList []*span

// spanLess is the free-list order.
func spanLess(a *span, size int, addr uint64) bool {
	return a.size < size || (a.size == size && a.addr < addr)
}

// search returns the index of the first span not less than (size, addr).
func (l freeList) search(size int, addr uint64) int {
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if spanLess(l[m], size, addr) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insert adds s in order.
func (l *freeList) insert(s *span) {
	*l = slices.Insert(*l, l.search(s.size, s.addr), s)
}

// remove deletes s, which must be present with its current size.
func (l *freeList) remove(s *span) {
	i := l.search(s.size, s.addr)
	if i == len(*l) || (*l)[i] != s {
		panic(fmt.Sprintf("alloc: internal error: free block 0x%x (%d bytes) missing from its free list", s.addr, s.size))
	}
	*l = slices.Delete(*l, i, i+1)
}

// Block is a piece of device memory returned by Alloc. Its address and
// size never change; after Free the Block must not be used.
type Block struct {
	owner  *Allocator
	sp     *span // nil once freed
	addr   uint64
	size   int
	stream uint64
}

// Addr returns the device address of the block.
func (b *Block) Addr() uint64 { return b.addr }

// Size returns the bytes reserved for the block: the request rounded up
// to MinBlockSize, or more when the block could not be split (see the
// package documentation).
func (b *Block) Size() int { return b.size }

// Stream returns the stream the block was allocated on, whose cache it
// returns to when freed.
func (b *Block) Stream() uint64 { return b.stream }

// Allocator is a caching allocator over one Device. Create it with New.
type Allocator struct {
	dev  Device
	opts Options

	mu       sync.Mutex
	pools    map[poolKey]*freeList
	segments map[uint64]*segment // by base address
	spare    []*span             // unused span structs, to spare the GC
	stats    Stats
}

// New returns an Allocator drawing from dev.
func New(dev Device, opts Options) *Allocator {
	if opts.MaxSplitWaste <= 0 {
		opts.MaxSplitWaste = defaultMaxSplitWaste
	}
	return &Allocator{
		dev:      dev,
		opts:     opts,
		pools:    make(map[poolKey]*freeList),
		segments: make(map[uint64]*segment),
	}
}

// roundSize is the block size a request of n bytes needs.
func roundSize(n int) int {
	if n <= 0 {
		return MinBlockSize
	}
	return (n + MinBlockSize - 1) / MinBlockSize * MinBlockSize
}

// segmentSize is the device allocation that serves a block of size bytes.
func segmentSize(size int) int {
	if size <= SmallSize {
		return SmallSegmentSize
	}
	return (size + LargeSegmentRound - 1) / LargeSegmentRound * LargeSegmentRound
}

// maxRequest is the largest request accepted; it keeps the rounding to
// blocks and segments from overflowing int.
const maxRequest = math.MaxInt - 2*LargeSegmentRound

// Alloc returns a block of at least bytes bytes of device memory for use
// on stream. The memory is uninitialised. Errors: a negative size, a
// device failure, or an [*OutOfMemoryError].
func (a *Allocator) Alloc(bytes int, stream uint64) (*Block, error) {
	if bytes < 0 || bytes > maxRequest {
		return nil, fmt.Errorf("alloc: invalid allocation size %d bytes", bytes)
	}
	size := roundSize(bytes)
	key := poolKey{stream: stream, large: size > SmallSize}
	segSize := segmentSize(size)

	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.fromCache(key, size); b != nil {
		return b, nil
	}
	sp, err := a.grow(key, segSize)
	if err != nil && errors.Is(err, ErrOutOfMemory) {
		// Give back every cached segment and retry.
		if a.releaseCached(0) > 0 {
			a.stats.OOMRetries++
			sp, err = a.grow(key, segSize)
		}
	}
	if err != nil && errors.Is(err, ErrOutOfMemory) && a.opts.Reclaim != nil {
		a.reclaim()
		if b := a.fromCache(key, size); b != nil {
			return b, nil
		}
		a.releaseCached(0)
		a.stats.OOMRetries++
		sp, err = a.grow(key, segSize)
	}
	if err != nil {
		if errors.Is(err, ErrOutOfMemory) {
			return nil, &OutOfMemoryError{
				Requested: bytes, Rounded: size, Segment: segSize, Stream: stream,
				Allocated: a.stats.Allocated, Reserved: a.stats.Reserved, Err: err,
			}
		}
		return nil, fmt.Errorf("alloc: device allocation of %d bytes for a %d-byte request: %w", segSize, bytes, err)
	}
	return a.handOut(sp, size), nil
}

// reclaim runs Options.Reclaim without a.mu, which is held on entry and
// on return (even if Reclaim panics).
func (a *Allocator) reclaim() {
	a.mu.Unlock()
	defer a.mu.Lock()
	a.opts.Reclaim()
}

// fromCache takes a cached block for a request of size bytes, or returns
// nil. a.mu is held.
func (a *Allocator) fromCache(key poolKey, size int) *Block {
	fl := a.pools[key]
	if fl == nil {
		return nil
	}
	i := fl.search(size, 0)
	if i == len(*fl) {
		return nil
	}
	sp := (*fl)[i]
	if m := a.opts.MaxSplitSize; m > 0 && sp.size >= m {
		if size < m || sp.size-size > a.opts.MaxSplitWaste {
			return nil
		}
	}
	fl.remove(sp)
	a.stats.CacheHits++
	return a.handOut(sp, size)
}

// grow allocates a new segment for key and returns its single span, not in
// any free list. a.mu is held.
func (a *Allocator) grow(key poolKey, segSize int) (*span, error) {
	if t := a.opts.ReleaseThreshold; t > 0 && a.stats.Reserved+int64(segSize) > t {
		a.releaseCached(a.stats.Reserved + int64(segSize) - t)
	}
	if l := a.opts.MemoryLimit; l > 0 && a.stats.Reserved+int64(segSize) > l {
		return nil, fmt.Errorf("memory limit of %d bytes reached (%d reserved): %w", l, a.stats.Reserved, ErrOutOfMemory)
	}
	addr, err := a.dev.Malloc(segSize)
	if err != nil {
		return nil, err
	}
	if _, dup := a.segments[addr]; dup {
		panic(fmt.Sprintf("alloc: device returned address 0x%x, which is already allocated", addr))
	}
	seg := &segment{base: addr, size: segSize, stream: key.stream, large: key.large}
	seg.head = a.newSpan()
	*seg.head = span{addr: addr, size: segSize, seg: seg}
	a.segments[addr] = seg
	a.stats.DeviceMallocs++
	a.stats.Segments++
	a.stats.Reserved += int64(segSize)
	a.stats.PeakReserved = max(a.stats.PeakReserved, a.stats.Reserved)
	return seg.head, nil
}

// handOut splits sp down to size if the policy allows, marks it allocated
// and returns its Block. sp is in no free list. a.mu is held.
func (a *Allocator) handOut(sp *span, size int) *Block {
	if rest := sp.size - size; a.shouldSplit(sp, rest) {
		tail := a.newSpan()
		*tail = span{addr: sp.addr + uint64(size), size: rest, seg: sp.seg, prev: sp, next: sp.next}
		if sp.next != nil {
			sp.next.prev = tail
		}
		sp.next = tail
		sp.size = size
		a.pool(sp.seg).insert(tail)
	}
	sp.allocated = true
	a.stats.Allocs++
	a.stats.Allocated += int64(sp.size)
	a.stats.Peak = max(a.stats.Peak, a.stats.Allocated)
	return &Block{owner: a, sp: sp, addr: sp.addr, size: sp.size, stream: sp.seg.stream}
}

// shouldSplit reports whether a free tail of rest bytes is cut off sp.
func (a *Allocator) shouldSplit(sp *span, rest int) bool {
	if m := a.opts.MaxSplitSize; m > 0 && sp.size >= m {
		return false
	}
	if sp.seg.large {
		return rest > SmallSize
	}
	return rest >= MinBlockSize
}

// maxSpare bounds the recycled span structs kept.
const maxSpare = 256

// newSpan returns a span struct, recycled if one is spare. a.mu is held.
func (a *Allocator) newSpan() *span {
	if n := len(a.spare); n > 0 {
		sp := a.spare[n-1]
		a.spare[n-1] = nil
		a.spare = a.spare[:n-1]
		return sp
	}
	return new(span)
}

// recycle keeps sp, which is linked from nowhere any more, for newSpan.
// a.mu is held.
func (a *Allocator) recycle(sp *span) {
	if len(a.spare) < maxSpare {
		*sp = span{}
		a.spare = append(a.spare, sp)
	}
}

// pool returns the free list of seg's pool and stream, creating it.
func (a *Allocator) pool(seg *segment) *freeList {
	key := poolKey{stream: seg.stream, large: seg.large}
	fl := a.pools[key]
	if fl == nil {
		fl = new(freeList)
		a.pools[key] = fl
	}
	return fl
}

// Free returns b to the cache of its stream, merging it with free
// neighbours. Free(nil) does nothing; freeing a block twice, or a block of
// another Allocator, panics.
func (a *Allocator) Free(b *Block) {
	if b == nil {
		return
	}
	if b.owner != a {
		panic(fmt.Sprintf("alloc: Free of block 0x%x (%d bytes) that belongs to another allocator", b.addr, b.size))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sp := b.sp
	if sp == nil {
		panic(fmt.Sprintf("alloc: double free of block 0x%x (%d bytes, stream %d)", b.addr, b.size, b.stream))
	}
	b.sp = nil
	sp.allocated = false
	a.stats.Frees++
	a.stats.Allocated -= int64(sp.size)
	fl := a.pool(sp.seg)
	if p := sp.prev; p != nil && !p.allocated {
		fl.remove(p)
		p.size += sp.size
		p.next = sp.next
		if sp.next != nil {
			sp.next.prev = p
		}
		a.recycle(sp)
		sp = p
	}
	if n := sp.next; n != nil && !n.allocated {
		fl.remove(n)
		sp.size += n.size
		sp.next = n.next
		if n.next != nil {
			n.next.prev = sp
		}
		a.recycle(n)
	}
	fl.insert(sp)
}

// EmptyCache returns every cached segment that holds no live block to the
// device. Segments the device fails to free stay cached; their errors are
// joined into the result.
func (a *Allocator) EmptyCache() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err := a.release(0)
	return err
}

// releaseCached returns whole free segments to the device, largest first,
// until at least need bytes were released (all of them when need is 0),
// and returns the bytes released. Device errors are dropped: the segments
// stay cached and a later EmptyCache reports them. a.mu is held.
func (a *Allocator) releaseCached(need int64) int64 {
	n, _ := a.release(need)
	return n
}

// release is releaseCached returning the device errors too.
func (a *Allocator) release(need int64) (int64, error) {
	var whole []*span
	for _, fl := range a.pools {
		for _, sp := range *fl {
			if sp.whole() {
				whole = append(whole, sp)
			}
		}
	}
	// Largest first, then by address, so the order is deterministic.
	slices.SortFunc(whole, func(x, y *span) int {
		if x.size != y.size {
			return y.size - x.size
		}
		if x.addr < y.addr {
			return -1
		}
		return 1
	})
	var released int64
	var errs []error
	for _, sp := range whole {
		if need > 0 && released >= need {
			break
		}
		seg := sp.seg
		if err := a.dev.Free(seg.base); err != nil {
			errs = append(errs, fmt.Errorf("alloc: freeing device segment 0x%x (%d bytes): %w", seg.base, seg.size, err))
			continue
		}
		key := poolKey{stream: seg.stream, large: seg.large}
		a.pools[key].remove(sp)
		a.recycle(sp)
		delete(a.segments, seg.base)
		a.stats.DeviceFrees++
		a.stats.Segments--
		a.stats.Reserved -= int64(seg.size)
		released += int64(seg.size)
	}
	return released, errors.Join(errs...)
}

// Stats returns a snapshot of the allocator's accounting.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// ResetPeak sets Peak to the current Allocated and PeakReserved to the
// current Reserved, to measure the peak of what follows.
func (a *Allocator) ResetPeak() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.Peak = a.stats.Allocated
	a.stats.PeakReserved = a.stats.Reserved
}
