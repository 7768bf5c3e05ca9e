package alloc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

func TestRoundSize(t *testing.T) {
	tests := []struct{ in, want int }{
		{0, 512}, {1, 512}, {511, 512}, {512, 512}, {513, 1024},
		{1000, 1024}, {mib, mib}, {mib + 1, mib + 512}, {3*mib - 1, 3 * mib},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, roundSize(tt.in), "roundSize(%d)", tt.in)
	}
}

// TestAllocSizes checks the block and segment each request size gets from
// an empty allocator.
func TestAllocSizes(t *testing.T) {
	tests := []struct {
		name      string
		req       int
		wantSize  int   // Block.Size
		wantSeg   int64 // Reserved
		wantLarge bool
	}{
		{"zero", 0, 512, 2 * mib, false},
		{"one byte", 1, 512, 2 * mib, false},
		{"exact 512", 512, 512, 2 * mib, false},
		{"513", 513, 1024, 2 * mib, false},
		{"largest small", mib, mib, 2 * mib, false},
		// 1 MiB + 512: a 2 MiB large segment; the 1 MiB - 512 tail is too
		// small to split off in the large pool, so the block is 2 MiB.
		{"smallest large", mib + 1, 2 * mib, 2 * mib, true},
		// 3 MiB: a 4 MiB segment; the 1 MiB tail is not larger than 1 MiB.
		{"3 MiB", 3 * mib, 4 * mib, 4 * mib, true},
		// 5 MiB: a 6 MiB segment; again a 1 MiB tail, kept with the block.
		{"5 MiB", 5 * mib, 6 * mib, 6 * mib, true},
		{"exact 8 MiB", 8 * mib, 8 * mib, 8 * mib, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFakeDevice(0)
			a := New(dev, Options{})
			b, err := a.Alloc(tt.req, 7)
			require.NoError(t, err)
			assert.Equal(t, tt.wantSize, b.Size())
			assert.Equal(t, uint64(7), b.Stream())
			assert.Zero(t, b.Addr()%MinBlockSize)
			assert.Equal(t, tt.wantLarge, b.sp.seg.large)
			s := a.Stats()
			assert.Equal(t, tt.wantSeg, s.Reserved)
			assert.Equal(t, int64(tt.wantSize), s.Allocated)
			assert.Equal(t, int64(1), s.DeviceMallocs)
			checkInvariants(t, a, dev, []*Block{b})
			a.Free(b)
			checkInvariants(t, a, dev, []*Block{})
			requireNoLeak(t, a, dev)
		})
	}
}

func TestInvalidSize(t *testing.T) {
	a := New(newFakeDevice(4*mib), Options{})
	for _, n := range []int{-1, math.MinInt, math.MaxInt, maxRequest + 1} {
		_, err := a.Alloc(n, 0)
		require.ErrorContains(t, err, fmt.Sprintf("invalid allocation size %d", n))
		assert.NotErrorIs(t, err, ErrOutOfMemory)
	}
	// The largest accepted request rounds without overflow and fails
	// for lack of memory.
	_, err := a.Alloc(maxRequest, 0)
	require.ErrorIs(t, err, ErrOutOfMemory)
	var oom *OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.GreaterOrEqual(t, oom.Rounded, maxRequest)
	assert.GreaterOrEqual(t, oom.Segment, oom.Rounded)
}

// TestReuse checks that freed blocks come back from the cache without a
// device allocation, whole or split.
func TestReuse(t *testing.T) {
	tests := []struct {
		name       string
		first      int
		second     int
		wantSize   int
		wantSplit  bool // the second block is the head of the first's span
		wantMalloc int64
	}{
		{"same small size", 4 * kib, 4 * kib, 4 * kib, false, 1},
		{"smaller small size", 8 * kib, 1 * kib, 1 * kib, true, 1},
		{"same large size", 64 * mib, 64 * mib, 64 * mib, false, 1},
		{"large split", 64 * mib, 10 * mib, 10 * mib, true, 1},
		// 64 MiB cached, 63.5 MiB requested: the 0.5 MiB tail is not
		// split off in the large pool, so the whole block is reused.
		{"large no split", 64 * mib, 63*mib + 512*kib, 64 * mib, false, 1},
		// A small request never takes a large-pool block.
		{"pools separate", 4 * mib, 4 * kib, 4 * kib, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFakeDevice(0)
			a := New(dev, Options{})
			b1, err := a.Alloc(tt.first, 0)
			require.NoError(t, err)
			addr := b1.Addr()
			a.Free(b1)
			b2, err := a.Alloc(tt.second, 0)
			require.NoError(t, err)
			s := a.Stats()
			assert.Equal(t, tt.wantMalloc, s.DeviceMallocs)
			assert.Equal(t, 2-tt.wantMalloc, s.CacheHits)
			assert.Equal(t, tt.wantSize, b2.Size())
			if tt.wantMalloc == 1 {
				assert.Equal(t, addr, b2.Addr(), "cached block reused at its address")
			}
			if tt.wantSplit {
				require.NotNil(t, b2.sp.next)
				assert.False(t, b2.sp.next.allocated)
			}
			checkInvariants(t, a, dev, []*Block{b2})
			a.Free(b2)
			checkInvariants(t, a, dev, []*Block{})
			requireNoLeak(t, a, dev)
		})
	}
}

// TestBestFit checks that the smallest sufficient free block is chosen.
func TestBestFit(t *testing.T) {
	dev := newFakeDevice(0)
	a := New(dev, Options{})
	// Carve a segment into alternating blocks, free every other one to
	// leave holes of 8, 2 and 4 KiB separated by live blocks.
	var blocks []*Block
	for _, n := range []int{8 * kib, kib, 2 * kib, kib, 4 * kib, kib} {
		b, err := a.Alloc(n, 0)
		require.NoError(t, err)
		blocks = append(blocks, b)
	}
	a.Free(blocks[0])
	a.Free(blocks[2])
	a.Free(blocks[4])
	for _, tt := range []struct {
		req  int
		want *Block
	}{{3 * kib, blocks[4]}, {2 * kib, blocks[2]}, {5 * kib, blocks[0]}} {
		b, err := a.Alloc(tt.req, 0)
		require.NoError(t, err)
		assert.Equal(t, tt.want.Addr(), b.Addr(), "request of %d", tt.req)
		a.Free(b)
	}
	for _, i := range []int{1, 3, 5} {
		a.Free(blocks[i])
	}
	checkInvariants(t, a, dev, []*Block{})
	requireNoLeak(t, a, dev)
}

// TestSplitMerge frees three neighbouring blocks in every order: the
// segment ends as one free block that EmptyCache returns to the device,
// and before the last free no segment is released.
func TestSplitMerge(t *testing.T) {
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			dev := newFakeDevice(0)
			a := New(dev, Options{})
			var blocks []*Block
			for _, n := range []int{1000, 3000, 700 * kib} {
				b, err := a.Alloc(n, 1)
				require.NoError(t, err)
				blocks = append(blocks, b)
			}
			// Contiguous from the segment's start.
			require.Equal(t, blocks[0].Addr()+1024, blocks[1].Addr())
			require.Equal(t, blocks[1].Addr()+3072, blocks[2].Addr())
			require.Equal(t, int64(1), a.Stats().DeviceMallocs)
			live := append([]*Block(nil), blocks...)
			for k, i := range order {
				require.NoError(t, a.EmptyCache())
				require.Equal(t, int64(2*mib), a.Stats().Reserved, "segment with live blocks released")
				a.Free(blocks[i])
				live = deleteBlock(live, blocks[i])
				checkInvariants(t, a, dev, live)
				if k < 2 {
					continue
				}
				fl := a.pools[poolKey{stream: 1}]
				require.Len(t, *fl, 1, "segment merged back into one free block")
				assert.Equal(t, 2*mib, (*fl)[0].size)
			}
			require.NoError(t, a.EmptyCache())
			s := a.Stats()
			assert.Zero(t, s.Reserved)
			assert.Equal(t, int64(1), s.DeviceFrees)
			requireNoLeak(t, a, dev)
		})
	}
}

func deleteBlock(live []*Block, b *Block) []*Block {
	for i, x := range live {
		if x == b {
			return append(live[:i], live[i+1:]...)
		}
	}
	panic("block not live")
}

// TestStreams checks that a block freed on one stream is reused only on it.
func TestStreams(t *testing.T) {
	for _, size := range []int{4 * kib, 16 * mib} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dev := newFakeDevice(0)
			a := New(dev, Options{})
			b1, err := a.Alloc(size, 1)
			require.NoError(t, err)
			a.Free(b1)
			b2, err := a.Alloc(size, 2)
			require.NoError(t, err)
			assert.NotEqual(t, b1.Addr(), b2.Addr())
			assert.Equal(t, int64(2), a.Stats().DeviceMallocs, "other stream's cache not used")
			b3, err := a.Alloc(size, 1)
			require.NoError(t, err)
			assert.Equal(t, b1.Addr(), b3.Addr(), "own stream's cache used")
			assert.Equal(t, int64(1), a.Stats().CacheHits)
			checkInvariants(t, a, dev, []*Block{b2, b3})
			a.Free(b2)
			a.Free(b3)
			requireNoLeak(t, a, dev)
		})
	}
}

// TestOutOfMemory walks the out-of-memory path: release the cache and
// retry, then Reclaim and retry, then fail with the documented error.
func TestOutOfMemory(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		// setup makes live and cached blocks; it returns the blocks that
		// stay live and the one Reclaim frees (nil for none).
		setup       func(t *testing.T, a *Allocator) (live []*Block, reclaimable *Block)
		noReclaim   bool // Options.Reclaim left nil
		req         int
		wantErr     bool
		wantReclaim int
		wantRetries int64
		wantHit     bool // served from the cache after Reclaim
	}{
		{
			name:     "cache release suffices",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				b := mustAlloc(t, a, 4*kib, 0)
				a.Free(b) // a cached 2 MiB small segment
				return nil, nil
			},
			req: 3 * mib, wantRetries: 1,
		},
		{
			name:     "cache on another stream released",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				a.Free(mustAlloc(t, a, 2*mib, 5))
				return nil, nil
			},
			req: 4 * mib, wantRetries: 1,
		},
		{
			name:     "reclaim frees a live segment",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				return nil, mustAlloc(t, a, 2*mib, 0)
			},
			req: 3 * mib, wantReclaim: 1, wantRetries: 1,
		},
		{
			name:     "reclaim frees a block the cache then serves",
			capacity: 2 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				keep := mustAlloc(t, a, mib, 0)
				return []*Block{keep}, mustAlloc(t, a, mib, 0)
			},
			req: 512 * kib, wantReclaim: 1, wantHit: true,
		},
		{
			name:     "reclaim frees nothing",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				return []*Block{mustAlloc(t, a, 2*mib, 0)}, nil
			},
			req: 3 * mib, wantErr: true, wantReclaim: 1, wantRetries: 1,
		},
		{
			name:     "no reclaim, nothing cached",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				return []*Block{mustAlloc(t, a, 2*mib, 0)}, nil
			},
			noReclaim: true, req: 3 * mib, wantErr: true,
		},
		{
			name:     "larger than the device",
			capacity: 4 * mib,
			setup: func(t *testing.T, a *Allocator) ([]*Block, *Block) {
				a.Free(mustAlloc(t, a, 100, 0))
				return nil, nil
			},
			req: 5 * mib, wantErr: true, wantReclaim: 1, wantRetries: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFakeDevice(tt.capacity)
			var a *Allocator
			var reclaimable *Block
			reclaims := 0
			opts := Options{}
			if !tt.noReclaim {
				opts.Reclaim = func() {
					reclaims++
					// Called without the lock: freeing must not deadlock.
					if reclaimable != nil {
						a.Free(reclaimable)
						reclaimable = nil
					}
				}
			}
			a = New(dev, opts)
			live, r := tt.setup(t, a)
			reclaimable = r
			before := a.Stats()
			b, err := a.Alloc(tt.req, 0)
			after := a.Stats()
			assert.Equal(t, tt.wantReclaim, reclaims, "Reclaim calls")
			assert.Equal(t, tt.wantRetries, after.OOMRetries-before.OOMRetries, "OOMRetries")
			if tt.wantErr {
				require.Error(t, err)
				require.Nil(t, b)
				require.ErrorIs(t, err, ErrOutOfMemory)
				var oom *OutOfMemoryError
				require.ErrorAs(t, err, &oom)
				assert.Equal(t, tt.req, oom.Requested)
				assert.Equal(t, after.Allocated, oom.Allocated)
				assert.Equal(t, after.Reserved, oom.Reserved)
				assert.Equal(t, roundSize(tt.req), oom.Rounded)
				msg := err.Error()
				assert.Contains(t, msg, fmt.Sprintf("requested %d bytes", tt.req))
				assert.Contains(t, msg, fmt.Sprintf("%d bytes allocated", after.Allocated))
				assert.Contains(t, msg, fmt.Sprintf("%d reserved", after.Reserved))
				assert.Contains(t, msg, "CUDA_ERROR_OUT_OF_MEMORY", "device message kept")
				// Nothing is left cached that could have helped.
				for _, fl := range a.pools {
					for _, sp := range *fl {
						assert.False(t, sp.whole(), "a whole free segment stayed cached")
					}
				}
			} else {
				require.NoError(t, err)
				live = append(live, b)
				assert.GreaterOrEqual(t, b.Size(), tt.req)
				assert.Equal(t, tt.wantHit, after.CacheHits > before.CacheHits, "served from cache")
			}
			checkInvariants(t, a, dev, live)
			for _, b := range live {
				a.Free(b)
			}
			if reclaimable != nil {
				a.Free(reclaimable)
			}
			requireNoLeak(t, a, dev)
		})
	}
}

func mustAlloc(t testing.TB, a *Allocator, n int, stream uint64) *Block {
	t.Helper()
	b, err := a.Alloc(n, stream)
	require.NoError(t, err)
	return b
}

func TestDeviceErrors(t *testing.T) {
	t.Run("malloc failure is not retried", func(t *testing.T) {
		dev := newFakeDevice(0)
		reclaims := 0
		a := New(dev, Options{Reclaim: func() { reclaims++ }})
		a.Free(mustAlloc(t, a, kib, 3)) // cached, and must stay cached
		dev.mallocErr = errFake
		_, err := a.Alloc(8*mib, 0)
		require.ErrorIs(t, err, errFake)
		assert.NotErrorIs(t, err, ErrOutOfMemory)
		assert.ErrorContains(t, err, "device allocation of 8388608 bytes")
		assert.Zero(t, reclaims)
		assert.Equal(t, int64(2*mib), a.Stats().Reserved)
		assert.Zero(t, a.Stats().OOMRetries)
		dev.mallocErr = nil
		requireNoLeak(t, a, dev)
	})
	t.Run("free failure keeps the segment", func(t *testing.T) {
		dev := newFakeDevice(0)
		a := New(dev, Options{})
		a.Free(mustAlloc(t, a, kib, 0))
		a.Free(mustAlloc(t, a, 4*mib, 0))
		dev.freeErr = errFake
		err := a.EmptyCache()
		require.ErrorIs(t, err, errFake)
		assert.ErrorContains(t, err, "freeing device segment")
		s := a.Stats()
		assert.Equal(t, int64(6*mib), s.Reserved)
		assert.Zero(t, s.DeviceFrees)
		checkInvariants(t, a, dev, []*Block{})
		dev.freeErr = nil
		requireNoLeak(t, a, dev)
	})
}

func TestMemoryLimit(t *testing.T) {
	dev := newFakeDevice(0)
	a := New(dev, Options{MemoryLimit: 6 * mib})
	b1 := mustAlloc(t, a, 2*mib, 0)
	b2 := mustAlloc(t, a, 2*mib, 0)
	a.Free(mustAlloc(t, a, kib, 1)) // cached: released to make room
	b3 := mustAlloc(t, a, 2*mib, 0)
	assert.Equal(t, int64(1), a.Stats().OOMRetries)
	_, err := a.Alloc(kib, 0)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.ErrorContains(t, err, "memory limit of 6291456 bytes reached")
	assert.Equal(t, 4, dev.attempts, "the limit fails before calling the device")
	for _, b := range []*Block{b1, b2, b3} {
		a.Free(b)
	}
	requireNoLeak(t, a, dev)
}

func TestReleaseThreshold(t *testing.T) {
	dev := newFakeDevice(0)
	a := New(dev, Options{ReleaseThreshold: 8 * mib})
	// Cache 2 + 4 + 2 MiB of free segments on stream 1.
	x, y, z := mustAlloc(t, a, kib, 1), mustAlloc(t, a, 4*mib, 1), mustAlloc(t, a, 2*mib, 1)
	a.Free(x)
	a.Free(y)
	a.Free(z)
	require.Equal(t, int64(8*mib), a.Stats().Reserved)
	// A 4 MiB segment on stream 2 needs 4 MiB released: the 4 MiB
	// segment goes first (largest first) and suffices.
	b := mustAlloc(t, a, 4*mib, 2)
	s := a.Stats()
	assert.Equal(t, int64(8*mib), s.Reserved)
	assert.Equal(t, int64(1), s.DeviceFrees)
	assert.Zero(t, s.OOMRetries)
	checkInvariants(t, a, dev, []*Block{b})
	// Under the threshold nothing is released.
	a.Free(b)
	c := mustAlloc(t, a, 4*mib, 2)
	assert.Equal(t, int64(1), a.Stats().DeviceFrees)
	a.Free(c)
	requireNoLeak(t, a, dev)
}

func TestMaxSplitSize(t *testing.T) {
	tests := []struct {
		name     string
		waste    int
		req      int
		wantHit  bool
		wantSize int
	}{
		{"medium request skips the oversize block", 0, 4 * mib, false, 4 * mib},
		{"large request takes it whole", 0, 30 * mib, true, 32 * mib},
		{"too much waste", 1 * mib, 30 * mib, false, 30 * mib},
		{"waste within limit", 2 * mib, 30 * mib, true, 32 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFakeDevice(0)
			a := New(dev, Options{MaxSplitSize: 8 * mib, MaxSplitWaste: tt.waste})
			big := mustAlloc(t, a, 32*mib, 0)
			a.Free(big)
			b := mustAlloc(t, a, tt.req, 0)
			assert.Equal(t, tt.wantHit, a.Stats().CacheHits == 1)
			assert.Equal(t, tt.wantSize, b.Size())
			assert.Nil(t, b.sp.next, "no split")
			checkInvariants(t, a, dev, []*Block{b})
			a.Free(b)
			requireNoLeak(t, a, dev)
		})
	}
}

// TestStats checks the accounting after a fixed sequence.
func TestStats(t *testing.T) {
	dev := newFakeDevice(0)
	a := New(dev, Options{})
	assert.Equal(t, Stats{}, a.Stats())

	b1 := mustAlloc(t, a, 1000, 0)   // 1024 of a new 2 MiB segment
	b2 := mustAlloc(t, a, 10*mib, 0) // a new 10 MiB segment
	want := Stats{
		Allocated: 1024 + 10*mib, Reserved: 12 * mib, Peak: 1024 + 10*mib, PeakReserved: 12 * mib,
		Segments: 2, Allocs: 2, DeviceMallocs: 2,
	}
	assert.Equal(t, want, a.Stats())

	a.Free(b2)
	b3 := mustAlloc(t, a, 3000, 0) // 3072 from the small segment
	want.Allocated = 1024 + 3072
	want.Allocs, want.Frees, want.CacheHits = 3, 1, 1
	assert.Equal(t, want, a.Stats())

	a.ResetPeak()
	want.Peak = want.Allocated
	assert.Equal(t, want, a.Stats())

	b4 := mustAlloc(t, a, 2*mib+1, 0) // splits the cached 10 MiB block: 2 MiB + 512
	want.Allocated += 2*mib + 512
	want.Peak = want.Allocated
	want.Allocs, want.CacheHits = 4, 2
	assert.Equal(t, want, a.Stats())

	a.Free(b1)
	a.Free(b4)
	want.Allocated = 3072
	want.Frees = 3
	assert.Equal(t, want, a.Stats())

	require.NoError(t, a.EmptyCache()) // the 10 MiB segment goes; the small one holds b3
	want.Reserved, want.Segments, want.DeviceFrees = 2*mib, 1, 1
	assert.Equal(t, want, a.Stats())

	a.ResetPeak()
	want.Peak, want.PeakReserved = 3072, 2*mib
	assert.Equal(t, want, a.Stats())

	a.Free(b3)
	requireNoLeak(t, a, dev)
}

func TestFreeMisuse(t *testing.T) {
	dev := newFakeDevice(0)
	a := New(dev, Options{})
	assert.NotPanics(t, func() { a.Free(nil) })

	b := mustAlloc(t, a, 100, 4)
	a.Free(b)
	// The cached span is handed out again: the stale handle must still be
	// recognised as freed.
	c := mustAlloc(t, a, 100, 4)
	require.Equal(t, b.Addr(), c.Addr())
	assert.PanicsWithValue(t,
		fmt.Sprintf("alloc: double free of block 0x%x (512 bytes, stream 4)", b.Addr()),
		func() { a.Free(b) })

	other := New(newFakeDevice(0), Options{})
	d := mustAlloc(t, other, 100, 0)
	assert.PanicsWithValue(t,
		fmt.Sprintf("alloc: Free of block 0x%x (512 bytes) that belongs to another allocator", d.Addr()),
		func() { a.Free(d) })
	other.Free(d)

	// The panics left the allocator usable and consistent.
	checkInvariants(t, a, dev, []*Block{c})
	a.Free(c)
	requireNoLeak(t, a, dev)
}

// TestConcurrent runs Alloc and Free from many goroutines, under memory
// pressure so the out-of-memory path (which drops the lock for Reclaim)
// runs concurrently too, then checks the invariants.
func TestConcurrent(t *testing.T) {
	const goroutines = 16
	ops := 2000
	if testing.Short() {
		ops = 300
	}
	dev := newFakeDevice(96 * mib)
	var reclaims atomic.Int64
	a := New(dev, Options{Reclaim: func() {
		reclaims.Add(1)
		runtime.Gosched()
	}})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			var mine []*Block
			for range ops {
				if len(mine) > 0 && (len(mine) > 12 || rng.IntN(2) == 0) {
					i := rng.IntN(len(mine))
					a.Free(mine[i])
					mine[i] = mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					continue
				}
				b, err := a.Alloc(randomSize(rng), uint64(rng.IntN(3)))
				if err != nil {
					if !errors.Is(err, ErrOutOfMemory) {
						errs <- err
						return
					}
					continue
				}
				if b.Addr()%MinBlockSize != 0 {
					errs <- fmt.Errorf("misaligned block 0x%x", b.Addr())
					return
				}
				mine = append(mine, b)
				if rng.IntN(50) == 0 {
					_ = a.Stats()
					if err := a.EmptyCache(); err != nil {
						errs <- err
						return
					}
				}
			}
			for _, b := range mine {
				a.Free(b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	checkInvariants(t, a, dev, []*Block{})
	s := a.Stats()
	assert.Equal(t, s.Allocs, s.Frees)
	t.Logf("%d allocs, %d cache hits, %d device mallocs, %d OOM retries, %d reclaims",
		s.Allocs, s.CacheHits, s.DeviceMallocs, s.OOMRetries, reclaims.Load())
	requireNoLeak(t, a, dev)
}

// randomSize draws request sizes from a mix of small, medium and large.
func randomSize(rng *rand.Rand) int {
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4:
		return rng.IntN(16 * kib)
	case 5, 6:
		return rng.IntN(mib + 1)
	case 7, 8:
		return mib + rng.IntN(8*mib)
	default:
		return rng.IntN(40 * mib)
	}
}

// TestRandomModel drives the allocator with random operations and checks
// it against a simple model after each: the live blocks never overlap, the
// sum of their sizes is Allocated, the device's live bytes are Reserved,
// the counters match, and a failed request really could not fit.
func TestRandomModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			const capacity = 80 * mib
			dev := newFakeDevice(capacity)
			opts := Options{}
			if seed%2 == 1 {
				opts.MaxSplitSize = 16 * mib
				opts.ReleaseThreshold = 48 * mib
			}
			a := New(dev, opts)
			rng := rand.New(rand.NewPCG(seed, 7))
			type liveBlock struct {
				b   *Block
				req int
			}
			var live []liveBlock
			var allocs, frees, peak, allocated int64
			steps := 3000
			if testing.Short() {
				steps = 500
			}
			for step := range steps {
				switch r := rng.IntN(100); {
				case r < 55:
					req := randomSize(rng)
					stream := uint64(rng.IntN(3))
					b, err := a.Alloc(req, stream)
					if err != nil {
						require.ErrorIs(t, err, ErrOutOfMemory)
						// The cache was emptied before failing: whole free
						// segments are gone and the device lacks room.
						used, _ := dev.liveBytes()
						seg := segmentSize(roundSize(req))
						require.Greater(t, used+seg, capacity, "failed although the device had room")
						break
					}
					rounded := roundSize(req)
					require.Equal(t, stream, b.Stream())
					require.GreaterOrEqual(t, b.Size(), rounded)
					if rounded <= SmallSize {
						require.Equal(t, rounded, b.Size(), "small blocks are exact")
					} else if opts.MaxSplitSize == 0 || b.Size() < opts.MaxSplitSize {
						require.LessOrEqual(t, b.Size()-rounded, SmallSize, "large block over-allocation")
					} else {
						require.LessOrEqual(t, b.Size()-rounded, max(defaultMaxSplitWaste, LargeSegmentRound))
					}
					live = append(live, liveBlock{b, req})
					allocs++
					allocated += int64(b.Size())
					peak = max(peak, allocated)
				case r < 95:
					if len(live) == 0 {
						break
					}
					i := rng.IntN(len(live))
					a.Free(live[i].b)
					allocated -= int64(live[i].b.Size())
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
					frees++
				case r < 98:
					require.NoError(t, a.EmptyCache())
				default:
					a.ResetPeak()
					peak = allocated
				}
				s := a.Stats()
				require.Equal(t, allocated, s.Allocated, "step %d", step)
				require.Equal(t, peak, s.Peak, "step %d", step)
				require.Equal(t, allocs, s.Allocs)
				require.Equal(t, frees, s.Frees)
				used, n := dev.liveBytes()
				require.Equal(t, int64(used), s.Reserved)
				require.Equal(t, n, s.Segments)
				require.Equal(t, int64(dev.mallocs), s.DeviceMallocs)
				require.Equal(t, int64(dev.frees), s.DeviceFrees)
				if step%25 == 0 {
					blocks := make([]*Block, len(live))
					for i, l := range live {
						blocks[i] = l.b
					}
					checkInvariants(t, a, dev, blocks)
				}
			}
			for _, l := range live {
				a.Free(l.b)
			}
			checkInvariants(t, a, dev, []*Block{})
			requireNoLeak(t, a, dev)
		})
	}
}

func BenchmarkAllocFree(b *testing.B) {
	for _, size := range []int{4 * kib, 256 * kib, 16 * mib} {
		b.Run(fmt.Sprintf("%dKiB", size/kib), func(b *testing.B) {
			a := New(newFakeDevice(0), Options{})
			// Some live blocks, so the free list is not trivially short.
			var keep []*Block
			for i := range 64 {
				keep = append(keep, mustAlloc(b, a, (i+1)*1536, 0))
			}
			for i := 0; i < len(keep); i += 2 {
				a.Free(keep[i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				blk, err := a.Alloc(size, 0)
				if err != nil {
					b.Fatal(err)
				}
				a.Free(blk)
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		a := New(newFakeDevice(0), Options{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				blk, err := a.Alloc(8*kib, 0)
				if err != nil {
					b.Fatal(err)
				}
				a.Free(blk)
			}
		})
	})
}
