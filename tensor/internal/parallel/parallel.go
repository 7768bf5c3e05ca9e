// Package parallel runs the parallel regions of the CPU kernels on
// persistent worker goroutines that spin for a moment after each region
// before they park.
//
// A batch-1 convolution splits work of a millisecond or less several
// times over (packing, transforms, products), and a network runs dozens
// of them back to back. Starting a goroutine per part costs little in
// itself, but the runtime must then wake a parked thread for it, and the
// tens of microseconds that takes, paid at every region, kept ResNet-18
// at two threads well short of twice its one-thread speed. A worker that
// is still spinning when the next region starts takes its part at once.
//
// The workers are a process-wide cache, like the runtime's own threads:
// created on first demand, at most GOMAXPROCS-1 of them (the caller of a
// region runs on the remaining P, and more spinning workers would only
// take Ps from one another), never exiting (a parked worker costs its
// stack and no CPU). Demand beyond them — several goroutines running
// kernels at once — gets plain goroutines.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinFor is how long an idle worker, and a caller waiting for its
// workers, polls before parking: longer than the gap between two parallel
// regions of one inference, short enough that an idle process gives its
// CPUs back at once.
const spinFor = 50 * time.Microsecond

// checkEvery is how many polls pass between two reads of the clock.
const checkEvery = 16

// The states of a worker.
const (
	idle   int32 = iota // between jobs, spinning
	parked              // between jobs, blocked on wake
	posted              // a job is waiting in f, i, g
)

// worker is one persistent goroutine.
type worker struct {
	state atomic.Int32
	wake  chan struct{} // receives once per post to a parked worker
	g     *group
}

// group is one Run: its parts are claimed in order by whichever of the
// caller and the helpers posted to comes first, so a helper that is slow
// to start (its thread parked, or descheduled on a busy machine) leaves
// its parts to the others instead of holding them up.
type group struct {
	f        func(int)
	n        int32
	next     atomic.Int32 // the next part to claim
	finished atomic.Int32 // parts done
	wg       sync.WaitGroup
}

// workers is the cache of idle workers and the count of all of them.
var workers struct {
	mu    sync.Mutex
	idle  []*worker
	total int
}

// threads is the count set by SetThreads; 0 means runtime.GOMAXPROCS.
var threads atomic.Int64

// SetThreads sets the count Threads reports: n goroutines, or
// runtime.GOMAXPROCS at each call for n <= 0. It is tensor.SetNumThreads,
// kept here so that kernels below package tensor read the same setting.
func SetThreads(n int) { threads.Store(int64(max(n, 0))) }

// Threads returns how many goroutines one kernel may split its work
// across: the count given to SetThreads, or runtime.GOMAXPROCS(0).
func Threads() int {
	if n := threads.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// Run calls f(0), ..., f(n-1) and returns once all have returned. The
// calls run on up to n goroutines at once — the calling one and up to
// n-1 workers — but any of them may run several parts, one after another,
// so the parts must not wait for one another. f may itself call Run.
func Run(n int, f func(i int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	g := &group{f: f, n: int32(n)}
	g.wg.Add(n)
	ws, short := take(n - 1)
	for _, w := range ws {
		w.post(g)
	}
	for range short {
		go g.work()
	}
	g.work()
	g.wait()
}

// take returns up to k idle workers, creating new ones while there are
// fewer than GOMAXPROCS-1 (at least one) in all, and how many of the k it
// could not provide.
func take(k int) (ws []*worker, short int) {
	limit := max(runtime.GOMAXPROCS(0)-1, 1)
	workers.mu.Lock()
	defer workers.mu.Unlock()
	from := max(len(workers.idle)-k, 0)
	ws = append([]*worker(nil), workers.idle[from:]...)
	clear(workers.idle[from:])
	workers.idle = workers.idle[:from]
	for len(ws) < k && workers.total < limit {
		w := &worker{wake: make(chan struct{}, 1)}
		workers.total++
		go w.loop()
		ws = append(ws, w)
	}
	return ws, k - len(ws)
}

// post hands g to w, which must be idle or parked.
func (w *worker) post(g *group) {
	w.g = g
	if w.state.Swap(posted) == parked {
		w.wake <- struct{}{}
	}
}

// loop runs w's jobs for ever.
func (w *worker) loop() {
	for {
		w.await()
		g := w.g
		w.g = nil
		g.work()
		w.state.Store(idle)
		workers.mu.Lock()
		workers.idle = append(workers.idle, w)
		workers.mu.Unlock()
	}
}

// await returns once a job is posted to w: it polls for spinFor, then
// parks until post wakes it.
func (w *worker) await() {
	start := time.Now()
	for n := 1; w.state.Load() != posted; n++ {
		if n%checkEvery == 0 && time.Since(start) > spinFor {
			if w.state.CompareAndSwap(idle, parked) {
				<-w.wake
			}
			return
		}
		runtime.Gosched()
	}
}

// work runs parts of g until none is left to claim.
func (g *group) work() {
	for {
		i := g.next.Add(1) - 1
		if i >= g.n {
			return
		}
		g.f(int(i))
		g.finished.Add(1)
		g.wg.Done()
	}
}

// wait returns once every part of g is finished: it polls for spinFor,
// then blocks.
func (g *group) wait() {
	start := time.Now()
	for n := 1; g.finished.Load() != g.n; n++ {
		if n%checkEvery == 0 && time.Since(start) > spinFor {
			g.wg.Wait()
			return
		}
		runtime.Gosched()
	}
}
