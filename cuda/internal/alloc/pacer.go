package alloc

import (
	"math"
	"sync"
	"sync/atomic"
)

// Pacer runs the Go garbage collector when the device memory in use has
// grown by Percent since the last collection, the way GOGC paces the Go
// heap. Go's collector does not see device memory: a training step that
// leaves gigabytes of unreachable activations on the GPU looks like a few
// kilobytes of tensor headers to it, so without pacing those blocks return
// to the allocator only when a device allocation fails. With pacing, memory
// in use stays within (1 + Percent/100) × the live set (or Floor).
type Pacer struct {
	floor   int64
	collect func()
	inUse   func() int64

	percent atomic.Int64
	next    atomic.Int64
	running sync.Mutex // one collection at a time
}

// NewPacer returns a pacer that calls collect (which runs the collector and
// waits for the cleanups it queues) once inUse, reported through Observe,
// passes the goal; the goal is then max(floor, live × (1 + percent/100))
// with live = inUse() after the collection. A negative percent disables
// pacing.
func NewPacer(floor int64, percent int, collect func(), inUse func() int64) *Pacer {
	p := &Pacer{floor: floor, collect: collect, inUse: inUse}
	p.SetPercent(percent)
	return p
}

// SetPercent changes the growth allowed between collections; a negative
// value disables pacing. The goal takes effect at once.
func (p *Pacer) SetPercent(percent int) {
	p.percent.Store(int64(percent))
	p.next.Store(p.goal(p.inUse()))
}

// Percent returns the growth allowed between collections.
func (p *Pacer) Percent() int { return int(p.percent.Load()) }

// Goal returns the bytes in use at which the next collection runs.
func (p *Pacer) Goal() int64 { return p.next.Load() }

func (p *Pacer) goal(live int64) int64 {
	pct := p.percent.Load()
	if pct < 0 {
		return math.MaxInt64
	}
	g := float64(live) * (1 + float64(pct)/100)
	if g >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(p.floor, int64(g))
}

// Observe is called after each allocation with the bytes now in use. It
// collects when they pass the goal and reports whether it did; a call that
// finds another collection running returns at once.
func (p *Pacer) Observe(inUse int64) bool {
	if inUse < p.next.Load() || !p.running.TryLock() {
		return false
	}
	defer p.running.Unlock()
	p.collect()
	p.next.Store(p.goal(p.inUse()))
	return true
}
