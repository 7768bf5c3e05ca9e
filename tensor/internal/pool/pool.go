// Package pool caches host slices by size class (powers of two) for scratch
// buffers with one owner that knows when the buffer dies: a kernel's packing
// buffers, a temporary copy made and dropped inside one operation.
//
// It is not a general allocator for tensor storage: a tensor's buffer may be
// referenced by any number of views, by autograd's saved tensors and by user
// code, and Go gives no reference count to tell when the last one is gone.
// Returning such a buffer to a pool while a view still reads it would be a
// use-after-free. Only code that created a slice and never let it escape may
// Put it.
package pool

import (
	"math/bits"
	"sync"
)

const (
	// minShift is the smallest class: requests below 64 elements get 64.
	minShift = 6
	// maxShift is the largest class; bigger requests are not pooled.
	maxShift = 30
	// perClass bounds the free slices kept per class, so a burst of
	// concurrent users does not pin memory for ever.
	perClass = 8
)

// Pool is a cache of []T by size class. Unlike a sync.Pool it is not
// emptied by garbage collections (a training step makes enough garbage to
// run one every step, which would leave a sync.Pool empty exactly when it is
// needed); it keeps at most 8 free slices per class instead. The zero value
// is ready to use; a Pool is safe for concurrent use.
type Pool[T any] struct {
	mu   sync.Mutex
	free [maxShift + 1][]*[]T
}

// Get returns a slice of length n with arbitrary contents, whose capacity is
// n rounded up to its size class.
func (p *Pool[T]) Get(n int) *[]T {
	c := class(n)
	if c < 0 {
		s := make([]T, n)
		return &s
	}
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		s := p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.mu.Unlock()
		*s = (*s)[:n]
		return s
	}
	p.mu.Unlock()
	s := make([]T, n, 1<<c)
	return &s
}

// Put makes s available to later Gets. The caller must hold the only
// reference to the slice's memory and must not use it afterwards. Slices
// whose capacity is not a size class (not from Get) are dropped.
func (p *Pool[T]) Put(s *[]T) {
	if s == nil {
		return
	}
	n := cap(*s)
	c := bits.TrailingZeros(uint(n))
	if n == 0 || n != 1<<c || c < minShift || c > maxShift {
		return
	}
	p.mu.Lock()
	if len(p.free[c]) < perClass {
		p.free[c] = append(p.free[c], s)
	}
	p.mu.Unlock()
}

// class returns the size class of n elements, or -1 for none.
func class(n int) int {
	if n <= 0 || n > 1<<maxShift {
		return -1
	}
	return max(bits.Len(uint(n-1)), minShift)
}
