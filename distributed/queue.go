package distributed

import "sync"

// opQueue holds a group's queued operations in issue order for the one
// worker goroutine that runs them. The zero value is an open, empty queue.
type opQueue[T any] struct {
	mu     sync.Mutex
	cond   sync.Cond // cond.L is &mu, set on first use
	items  []T
	closed bool
}

// lock locks q (setting up cond on first use).
func (q *opQueue[T]) lock() {
	q.mu.Lock()
	if q.cond.L == nil {
		q.cond.L = &q.mu
	}
}

// push appends w and wakes the worker; it reports false, queueing nothing,
// once q is closed.
func (q *opQueue[T]) push(w T) bool {
	q.lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, w)
	q.cond.Signal()
	return true
}

// close marks q closed and wakes the worker; operations still queued are
// handed out by pop with closed set.
func (q *opQueue[T]) close() {
	q.lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// pop waits for the next operation and removes it. closed reports that q
// was closed by then (the worker fails the operation with ErrClosed); ok is
// false once q is closed and empty, when the worker should stop.
func (q *opQueue[T]) pop() (w T, closed, ok bool) {
	q.lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return w, true, false
	}
	w = q.items[0]
	var zero T
	q.items[0] = zero // drop the reference for the collector
	q.items = q.items[1:]
	return w, q.closed, true
}
