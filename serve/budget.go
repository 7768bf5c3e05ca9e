package serve

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// budget is a byte budget shared by every request of a Server: a weighted
// semaphore whose waiters are served first come, first served, so a large
// request is not starved by a stream of small ones.
type budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiters list.List // of *budgetWaiter
}

// budgetWaiter is a request waiting for n bytes; ready is closed once
// they are granted.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// acquire reserves n bytes, waiting up to wait (and no longer than ctx
// allows) while the budget is exhausted. It fails with an *OverloadError
// when n alone exceeds the budget or the wait runs out, and with ctx's
// error when ctx ends first.
func (b *budget) acquire(ctx context.Context, model string, n int64, wait, retryAfter time.Duration) error {
	if n < 0 {
		n = 0
	}
	b.mu.Lock()
	if n > b.limit {
		b.mu.Unlock()
		return &OverloadError{Model: model, RetryAfter: retryAfter,
			Reason: fmt.Sprintf("request needs %d bytes, more than the server's whole budget of %d bytes (Options.MaxBytesInFlight)", n, b.limit)}
	}
	if b.waiters.Len() == 0 && b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return err
	}
	if wait <= 0 {
		used := b.used
		b.mu.Unlock()
		return &OverloadError{Model: model, RetryAfter: retryAfter,
			Reason: fmt.Sprintf("memory budget exhausted (%d of %d bytes in flight, %d more asked)", used, b.limit, n)}
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var fail error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		fail = ctx.Err()
	case <-timer.C:
		fail = &OverloadError{Model: model, RetryAfter: retryAfter,
			Reason: fmt.Sprintf("memory budget of %d bytes stayed exhausted for %v (%d bytes asked)", b.limit, wait, n)}
	}
	b.mu.Lock()
	select {
	case <-w.ready:
		// Granted while we gave up: hand the bytes back.
		b.used -= n
		b.grantLocked()
	default:
		front := b.waiters.Front() == elem
		b.waiters.Remove(elem)
		if front {
			b.grantLocked() // the waiters behind may fit now
		}
	}
	b.mu.Unlock()
	return fail
}

// release returns n bytes and wakes the waiters that now fit.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		panic("serve: budget released more bytes than were reserved")
	}
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked grants waiting requests in order while they fit.
func (b *budget) grantLocked() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if b.used+w.n > b.limit {
			return
		}
		b.used += w.n
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// inFlight returns the bytes reserved now.
func (b *budget) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
