package alloc

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeBase is where the fake device's address space starts.
const fakeBase = 0x7f00_0000_0000

// fakeDevice is a Device with a capacity: it hands out addresses from a
// bump pointer (never reusing one, so a stale address cannot alias), keeps
// the live allocations, and fails with an out-of-memory error when the
// capacity would be exceeded.
type fakeDevice struct {
	mu       sync.Mutex
	capacity int // bytes; 0 means unlimited
	used     int
	next     uint64
	live     map[uint64]int
	mallocs  int // successful calls
	frees    int
	attempts int // every Malloc call, failed ones included

	// mallocErr, if set, is returned by Malloc instead of allocating.
	mallocErr error
	// freeErr, if set, is returned by Free, which then keeps the memory.
	freeErr error
}

func newFakeDevice(capacity int) *fakeDevice {
	return &fakeDevice{capacity: capacity, next: fakeBase, live: make(map[uint64]int)}
}

func (d *fakeDevice) Malloc(n int) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempts++
	if d.mallocErr != nil {
		return 0, d.mallocErr
	}
	if n <= 0 {
		return 0, fmt.Errorf("fake: CUDA_ERROR_INVALID_VALUE: malloc of %d bytes", n)
	}
	if d.capacity > 0 && d.used+n > d.capacity {
		return 0, fmt.Errorf("fake: CUDA_ERROR_OUT_OF_MEMORY: %d bytes requested, %d of %d used: %w",
			n, d.used, d.capacity, ErrOutOfMemory)
	}
	addr := d.next
	// Leave a 4 KiB gap so that blocks of different segments never touch.
	d.next += uint64(n) + 4096
	d.live[addr] = n
	d.used += n
	d.mallocs++
	return addr, nil
}

func (d *fakeDevice) Free(addr uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.freeErr != nil {
		return d.freeErr
	}
	n, ok := d.live[addr]
	if !ok {
		return fmt.Errorf("fake: CUDA_ERROR_INVALID_VALUE: free of 0x%x, which is not allocated", addr)
	}
	delete(d.live, addr)
	d.used -= n
	d.frees++
	return nil
}

// liveBytes returns the device's live bytes and allocation count.
func (d *fakeDevice) liveBytes() (int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used, len(d.live)
}

// checkInvariants verifies the allocator's internal structure against
// itself and the fake device:
//   - each segment is a live device allocation of its size, tiled exactly
//     by its spans in address order with consistent links;
//   - no two neighbouring spans are both free (free blocks are merged);
//   - every free span is in its pool's free list, the lists hold nothing
//     else, and each list is sorted by (size, addr);
//   - Allocated, Reserved and Segments equal the sums they count;
//   - when live is given, its blocks are exactly the allocated spans and
//     do not overlap.
func checkInvariants(t testing.TB, a *Allocator, dev *fakeDevice, live []*Block) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	dev.mu.Lock()
	defer dev.mu.Unlock()

	require.Len(t, a.segments, len(dev.live), "segments vs device allocations")
	require.Equal(t, len(a.segments), a.stats.Segments, "Stats.Segments")
	var reserved, allocated int64
	freeSpans := map[*span]bool{}
	allocatedSpans := map[*span]bool{}
	for base, seg := range a.segments {
		require.Equal(t, base, seg.base)
		require.Equal(t, dev.live[base], seg.size, "segment 0x%x size vs device", base)
		reserved += int64(seg.size)
		sp := seg.head
		require.Nil(t, sp.prev, "head of segment 0x%x has a prev", base)
		addr := seg.base
		for ; sp != nil; sp = sp.next {
			require.Same(t, seg, sp.seg)
			require.Equal(t, addr, sp.addr, "spans of segment 0x%x do not tile it", base)
			require.Positive(t, sp.size)
			require.Zero(t, sp.size%MinBlockSize, "span size %d", sp.size)
			if sp.next != nil {
				require.Same(t, sp, sp.next.prev, "broken back link")
				require.False(t, !sp.allocated && !sp.next.allocated,
					"neighbouring free spans at 0x%x and 0x%x were not merged", sp.addr, sp.next.addr)
			}
			if sp.allocated {
				allocatedSpans[sp] = true
				allocated += int64(sp.size)
			} else {
				freeSpans[sp] = true
			}
			addr += uint64(sp.size)
		}
		require.Equal(t, seg.base+uint64(seg.size), addr, "spans of segment 0x%x do not cover it", base)
	}
	require.Equal(t, reserved, a.stats.Reserved, "Reserved")
	require.Equal(t, int64(dev.used), a.stats.Reserved, "Reserved vs device")
	require.Equal(t, allocated, a.stats.Allocated, "Allocated")
	require.LessOrEqual(t, a.stats.Allocated, a.stats.Peak, "Peak")
	require.LessOrEqual(t, a.stats.Reserved, a.stats.PeakReserved, "PeakReserved")

	listed := 0
	for key, fl := range a.pools {
		for i, sp := range *fl {
			require.True(t, freeSpans[sp], "free list %+v holds a span that is not a free span of a segment", key)
			require.Equal(t, key, poolKey{stream: sp.seg.stream, large: sp.seg.large}, "span in the wrong free list")
			if i > 0 {
				prev := (*fl)[i-1]
				require.True(t, spanLess(prev, sp.size, sp.addr), "free list %+v out of order at %d", key, i)
			}
			listed++
		}
	}
	require.Equal(t, len(freeSpans), listed, "free spans vs free-list entries")

	if live == nil {
		return
	}
	require.Len(t, live, len(allocatedSpans), "live blocks vs allocated spans")
	sorted := slices.Clone(live)
	slices.SortFunc(sorted, func(x, y *Block) int {
		if x.addr < y.addr {
			return -1
		}
		if x.addr > y.addr {
			return 1
		}
		return 0
	})
	for i, b := range sorted {
		require.NotNil(t, b.sp, "live block 0x%x marked freed", b.addr)
		require.True(t, allocatedSpans[b.sp], "live block 0x%x has no allocated span", b.addr)
		require.Equal(t, b.addr, b.sp.addr)
		require.Equal(t, b.size, b.sp.size)
		if i > 0 {
			p := sorted[i-1]
			require.LessOrEqual(t, p.addr+uint64(p.size), b.addr,
				"blocks [0x%x,+%d) and [0x%x,+%d) overlap", p.addr, p.size, b.addr, b.size)
		}
	}
}

// requireNoLeak frees nothing itself: it checks that after every block was
// freed, EmptyCache returns all device memory.
func requireNoLeak(t testing.TB, a *Allocator, dev *fakeDevice) {
	t.Helper()
	require.NoError(t, a.EmptyCache())
	used, n := dev.liveBytes()
	require.Zero(t, used, "device bytes leaked")
	require.Zero(t, n, "device allocations leaked")
	s := a.Stats()
	require.Zero(t, s.Allocated)
	require.Zero(t, s.Reserved)
	require.Zero(t, s.Segments)
	require.Equal(t, s.Allocs, s.Frees)
	require.Equal(t, s.DeviceMallocs, s.DeviceFrees)
}

// errFake is a non-memory device failure.
var errFake = errors.New("fake: CUDA_ERROR_ILLEGAL_ADDRESS")
