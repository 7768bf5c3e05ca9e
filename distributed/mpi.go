//go:build mpi && cgo

package distributed

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

// Open MPI's handles are macros over global objects; these helpers keep
// them on the C side and give Go small integer codes.

static MPI_Datatype ember_dtype(int d) {
	switch (d) {
	case 0: return MPI_FLOAT;
	case 1: return MPI_DOUBLE;
	case 2: return MPI_INT32_T;
	default: return MPI_INT64_T;
	}
}

static MPI_Op ember_op(int o) {
	switch (o) {
	case 0: return MPI_SUM;
	case 1: return MPI_MAX;
	case 2: return MPI_MIN;
	default: return MPI_PROD;
	}
}

static int ember_init(int *provided, int *already) {
	int flag = 0, fin = 0;
	MPI_Finalized(&fin);
	if (fin) return -1;
	MPI_Initialized(&flag);
	*already = flag;
	int rc = flag ? MPI_Query_thread(provided) : MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int ember_thread_funneled(void) { return MPI_THREAD_FUNNELED; }
static MPI_Comm ember_world(void) { return MPI_COMM_WORLD; }
static int ember_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int ember_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int ember_finalize(void) { return MPI_Finalize(); }
static void ember_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static int ember_allreduce(MPI_Comm comm, void *buf, int n, int d, int o) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, ember_dtype(d), ember_op(o), comm);
}
static int ember_bcast(MPI_Comm comm, void *buf, int n, int d, int root) {
	return MPI_Bcast(buf, n, ember_dtype(d), root, comm);
}
static int ember_reduce(MPI_Comm comm, void *buf, int n, int d, int o, int root, int isRoot) {
	if (isRoot) return MPI_Reduce(MPI_IN_PLACE, buf, n, ember_dtype(d), ember_op(o), root, comm);
	return MPI_Reduce(buf, NULL, n, ember_dtype(d), ember_op(o), root, comm);
}
static int ember_allgather(MPI_Comm comm, void *in, void *out, int n, int d) {
	return MPI_Allgather(in, n, ember_dtype(d), out, n, ember_dtype(d), comm);
}
static int ember_reduce_scatter(MPI_Comm comm, void *in, void *out, int n, int d, int o) {
	return MPI_Reduce_scatter_block(in, out, n, ember_dtype(d), ember_op(o), comm);
}
static int ember_gather(MPI_Comm comm, void *in, void *out, int n, int d, int root) {
	return MPI_Gather(in, n, ember_dtype(d), out, n, ember_dtype(d), root, comm);
}
static int ember_scatter(MPI_Comm comm, void *in, void *out, int n, int d, int root) {
	return MPI_Scatter(in, n, ember_dtype(d), out, n, ember_dtype(d), root, comm);
}
static int ember_barrier(MPI_Comm comm) { return MPI_Barrier(comm); }
static int ember_send(MPI_Comm comm, void *buf, int n, int d, int dst, int tag) {
	return MPI_Send(buf, n, ember_dtype(d), dst, tag, comm);
}
static int ember_isend(MPI_Comm comm, void *buf, int n, int d, int dst, int tag, MPI_Request *req) {
	return MPI_Isend(buf, n, ember_dtype(d), dst, tag, comm, req);
}
static int ember_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }
static int ember_recv(MPI_Comm comm, void *buf, int n, int d, int src, int tag) {
	return MPI_Recv(buf, n, ember_dtype(d), src, tag, comm, MPI_STATUS_IGNORE);
}
// ember_comm_create makes the communicator of parent's ranks ranks[0..n)
// (collective over those ranks only), with errors returned.
static int ember_comm_create(MPI_Comm parent, int *ranks, int n, int tag, MPI_Comm *out) {
	MPI_Group pg, sg;
	int rc = MPI_Comm_group(parent, &pg);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Group_incl(pg, n, ranks, &sg);
	MPI_Group_free(&pg);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_create_group(parent, sg, tag, out);
	MPI_Group_free(&sg);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}
static int ember_comm_free(MPI_Comm *c) { return MPI_Comm_free(c); }
static int ember_error_string(int code, char *s, int *len) { return MPI_Error_string(code, s, len); }
static int ember_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/emberml/ember/tensor"
)

// MPIGroup is a ProcessGroup over MPI's world communicator (build tag mpi,
// cgo against Open MPI). It runs under mpirun or Slurm's srun, which start
// the ranks; no rendezvous or token is involved, since the MPI launcher
// owns the job.
//
// Operations run one at a time, in issue order, on one goroutine locked to
// the OS thread that initialized MPI, so MPI is only ever called from that
// thread. Reductions use MPI's own (MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD;
// Avg is a sum divided by the size), so NaN handling in Max and Min is
// MPI's. MPI cannot cancel a collective: an operation that exceeds the
// timeout prints the rank, operation and elapsed time to stderr and aborts
// the whole job with MPI_Abort, which makes every rank exit, never hang.
// Errors MPI reports are returned, and leave the group unusable.
type MPIGroup struct {
	rank, size int
	timeout    atomic.Int64
	ownsInit   bool // MPI_Init_thread was called here, so Close finalizes

	// root is the world group, which owns the MPI thread, its queue and
	// the failure state; comm is this group's communicator.
	root    *MPIGroup
	comm    C.MPI_Comm
	members []int // world ranks of this group's ranks
	subMu   sync.Mutex
	nextSub int // subgroups created so far (world group only)

	qmu       sync.Mutex // world group's: guards queue, closed and every group's subClosed
	queue     chan *mpiWork
	closed    bool
	subClosed bool // a subgroup's own Close was called
	wdone     chan struct{}

	failMu sync.Mutex
	err    error

	sendTag, recvTag []int // point-to-point message counters by peer; worker only
	pending          []*mpiSend
}

// mpiSend is a started MPI_Isend whose Work completes when MPI reports the
// send buffer free; the buffer stays pinned until then.
type mpiSend struct {
	w      *mpiWork
	reqs   []C.MPI_Request
	pinner runtime.Pinner
	start  time.Time
}

var _ ProcessGroup = (*MPIGroup)(nil)

// mpiWork is the Work of one queued MPI operation.
type mpiWork struct {
	g    *MPIGroup
	op   string
	fn   func() error
	send func(w *mpiWork) (*mpiSend, error) // set instead of fn for SendAsync
	// cleanup runs even after a failure (a subgroup's MPI_Comm_free).
	cleanup bool
	done    chan struct{}
	err     error
}

// Wait implements Work. If ctx ends first the group is marked failed (MPI
// cannot cancel the operation) and Wait returns ctx's error.
func (w *mpiWork) Wait(ctx context.Context) error {
	return waitDone(ctx, w.done, &w.err, w.g.fail)
}

// Done implements Work.
func (w *mpiWork) Done() <-chan struct{} { return w.done }

// NewMPIGroup initializes MPI (MPI_Init_thread, asking for
// MPI_THREAD_SERIALIZED) unless the program already did, and returns the
// group of all the job's ranks. MPI can be initialized once per process:
// after Close finalizes it, NewMPIGroup returns an error.
func NewMPIGroup() (*MPIGroup, error) {
	g := &MPIGroup{queue: make(chan *mpiWork, 64), wdone: make(chan struct{})}
	g.root = g
	g.timeout.Store(int64(DefaultTimeout))
	ready := make(chan error, 1)
	go g.worker(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	g.sendTag = make([]int, g.size)
	g.recvTag = make([]int, g.size)
	g.members = make([]int, g.size)
	for i := range g.members {
		g.members[i] = i
	}
	return g, nil
}

// worker initializes MPI on its own locked OS thread, then runs the queued
// operations there; it finalizes MPI when the group closes.
func (g *MPIGroup) worker(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(g.wdone)
	var provided, already C.int
	if rc := C.ember_init(&provided, &already); rc != 0 {
		if rc < 0 {
			ready <- errors.New("distributed: NewMPIGroup: MPI was already finalized (it can be initialized once per process)")
		} else {
			ready <- fmt.Errorf("distributed: NewMPIGroup: MPI_Init_thread: %s", mpiErrorString(rc))
		}
		return
	}
	if provided < C.ember_thread_funneled() {
		ready <- fmt.Errorf("distributed: NewMPIGroup: MPI provides thread level %d, below MPI_THREAD_FUNNELED", int(provided))
		return
	}
	var r, s C.int
	if rc := C.ember_rank(&r); rc != 0 {
		ready <- fmt.Errorf("distributed: NewMPIGroup: MPI_Comm_rank: %s", mpiErrorString(rc))
		return
	}
	if rc := C.ember_size(&s); rc != 0 {
		ready <- fmt.Errorf("distributed: NewMPIGroup: MPI_Comm_size: %s", mpiErrorString(rc))
		return
	}
	g.rank, g.size, g.ownsInit = int(r), int(s), already == 0
	g.comm = C.ember_world()
	ready <- nil
	for {
		var w *mpiWork
		ok := true
		if len(g.pending) == 0 {
			w, ok = <-g.queue
		} else {
			select {
			case w, ok = <-g.queue:
			default:
				// Sends in flight: poll them while nothing is queued.
				g.progress()
				time.Sleep(20 * time.Microsecond)
				continue
			}
		}
		if !ok {
			break
		}
		g.run(w)
		g.progress()
	}
	for len(g.pending) > 0 {
		g.progress()
		time.Sleep(20 * time.Microsecond)
	}
	if g.ownsInit {
		C.ember_finalize()
	}
}

// run executes one queued operation (of this world group or one of its
// subgroups) on the MPI thread.
func (g *MPIGroup) run(w *mpiWork) {
	if err := g.failure(); err != nil && !w.cleanup {
		w.err = fmt.Errorf("distributed: process group unusable after an earlier failure: %w", err)
		close(w.done)
		return
	}
	if w.send != nil {
		p, err := w.send(w)
		if err != nil {
			g.fail(err)
			w.err = err
			close(w.done)
			return
		}
		p.w, p.start = w, time.Now()
		g.pending = append(g.pending, p)
		return
	}
	timeout := w.g.Timeout()
	start := time.Now()
	watchdog := time.AfterFunc(timeout, func() { g.abortJob(w.op, start, timeout) })
	err := w.fn()
	watchdog.Stop()
	if err != nil {
		g.fail(err)
	}
	w.err = err
	close(w.done)
}

// abortJob reports an operation past its timeout and aborts the MPI job.
func (g *MPIGroup) abortJob(op string, start time.Time, timeout time.Duration) {
	fmt.Fprintf(os.Stderr, "distributed: MPI rank %d: %s still running after %v (timeout %v); aborting the job\n", g.rank, op, time.Since(start).Round(time.Millisecond), timeout)
	C.ember_abort(1)
}

// progress completes the sends MPI has finished and aborts the job when
// one has waited longer than the timeout.
func (g *MPIGroup) progress() {
	kept := g.pending[:0]
	for _, p := range g.pending {
		var err error
		done := true
		for i := range p.reqs {
			var flag C.int
			if rc := C.ember_test(&p.reqs[i], &flag); rc != 0 {
				err = g.check("MPI_Test", rc)
				break
			}
			if flag == 0 {
				done = false
				break
			}
		}
		switch {
		case err != nil:
			g.fail(err)
		case !done:
			if timeout := p.w.g.Timeout(); time.Since(p.start) > timeout {
				g.abortJob(p.w.op, p.start, timeout)
			}
			kept = append(kept, p)
			continue
		}
		p.pinner.Unpin()
		p.w.err = err
		close(p.w.done)
	}
	clear(g.pending[len(kept):])
	g.pending = kept
}

// mpiErrorString returns MPI's text for an error code.
func mpiErrorString(rc C.int) string {
	buf := (*C.char)(C.malloc(C.size_t(C.ember_max_error_string())))
	defer C.free(unsafe.Pointer(buf))
	var n C.int
	if C.ember_error_string(rc, buf, &n) != 0 {
		return fmt.Sprintf("MPI error %d", int(rc))
	}
	return C.GoStringN(buf, n)
}

// check turns an MPI return code into an error naming the operation and
// this process's world rank.
func (g *MPIGroup) check(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("distributed: MPI rank %d: %s: %s", g.root.rank, op, mpiErrorString(rc))
}

// fail records the first failure of the world group and its subgroups.
func (g *MPIGroup) fail(err error) {
	g = g.root
	g.failMu.Lock()
	defer g.failMu.Unlock()
	if g.err == nil {
		g.err = err
	}
}

// failure returns the recorded failure, or nil.
func (g *MPIGroup) failure() error {
	g = g.root
	g.failMu.Lock()
	defer g.failMu.Unlock()
	return g.err
}

// submit queues fn as operation op.
func (g *MPIGroup) submit(op string, fn func() error) Work {
	return g.enqueue(&mpiWork{g: g, op: op, fn: fn, done: make(chan struct{})})
}

// enqueue queues w on the world group's MPI thread.
func (g *MPIGroup) enqueue(w *mpiWork) Work {
	root := g.root
	root.qmu.Lock()
	defer root.qmu.Unlock()
	if root.closed || g.subClosed {
		w.err = ErrClosed
		close(w.done)
		return w
	}
	root.queue <- w
	return w
}

// Rank implements ProcessGroup.
func (g *MPIGroup) Rank() int { return g.rank }

// Size implements ProcessGroup.
func (g *MPIGroup) Size() int { return g.size }

// Timeout implements ProcessGroup.
func (g *MPIGroup) Timeout() time.Duration { return time.Duration(g.timeout.Load()) }

// SetTimeout implements ProcessGroup.
func (g *MPIGroup) SetTimeout(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("distributed.SetTimeout: non-positive timeout %v", d))
	}
	g.timeout.Store(int64(d))
}

// Close implements ProcessGroup: it waits for queued operations, then
// finalizes MPI if NewMPIGroup initialized it. Later operations return
// ErrClosed. Closing the world group ends its subgroups too; closing a
// subgroup frees its communicator (MPI_Comm_free, which MPI defines as
// collective: every member closes it, in the same order relative to the
// other operations) and leaves the world group running.
func (g *MPIGroup) Close() error {
	if g.root != g {
		return g.closeSub()
	}
	g.qmu.Lock()
	if !g.closed {
		g.closed = true
		close(g.queue)
	}
	g.qmu.Unlock()
	<-g.wdone
	return nil
}

// mpiDType returns the C code of dtype dt.
func mpiDType(dt tensor.DType) C.int {
	switch dt {
	case tensor.Float32:
		return 0
	case tensor.Float64:
		return 1
	case tensor.Int32:
		return 2
	default:
		return 3
	}
}

// mpiOp returns the C code of op (Avg sums).
func mpiOp(op ReduceOp) C.int {
	switch op {
	case Max:
		return 1
	case Min:
		return 2
	case Prod:
		return 3
	default:
		return 0
	}
}

// ptr returns the address of v's first element (nil when empty).
func (v vec) ptr() unsafe.Pointer {
	b := sliceBytes(v.data)
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// maxCount is the largest element count one MPI call takes.
const maxCount = math.MaxInt32

// pieces calls fn on [lo, hi) ranges of at most maxCount elements covering
// n elements (once, with an empty range, when n is 0).
func pieces(n int, fn func(lo, hi int) C.int) C.int {
	if n == 0 {
		return fn(0, 0)
	}
	for lo := 0; lo < n; lo += maxCount {
		if rc := fn(lo, min(lo+maxCount, n)); rc != 0 {
			return rc
		}
	}
	return 0
}

// checkCount panics when one rank's share exceeds what a single MPI
// gather-type call can move.
func checkCount(op string, n int) {
	if n > maxCount {
		panic(fmt.Sprintf("distributed.%s: %d elements per rank exceed MPI's count limit %d", op, n, maxCount))
	}
}

// concat copies the tensors ts (one per rank) into one vec, rank after rank.
func concat(ts []*tensor.Tensor, dt tensor.DType, n int) vec {
	out := newVec(dt, n*len(ts))
	for j, t := range ts {
		copy(sliceBytes(out.slice(j*n, (j+1)*n)), sliceBytes(hostVec(t).data))
	}
	return out
}

// AllReduce implements ProcessGroup.
func (g *MPIGroup) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	return wait(g.AllReduceAsync(t, op))
}

// AllReduceAsync implements ProcessGroup.
func (g *MPIGroup) AllReduceAsync(t *tensor.Tensor, op ReduceOp) Work {
	checkDType("AllReduce", t)
	checkReduceOp("AllReduce", op, t)
	return g.submit("AllReduce", func() error {
		v := hostVec(t)
		es := v.elemSize()
		rc := pieces(v.len(), func(lo, hi int) C.int {
			return C.ember_allreduce(g.comm, unsafe.Add(v.ptr(), lo*es), C.int(hi-lo), mpiDType(v.dt), mpiOp(op))
		})
		if err := g.check("MPI_Allreduce", rc); err != nil {
			return err
		}
		if op == Avg {
			v.divide(g.size)
		}
		v.store(t)
		return nil
	})
}

// Broadcast implements ProcessGroup.
func (g *MPIGroup) Broadcast(t *tensor.Tensor, root int) error {
	return wait(g.BroadcastAsync(t, root))
}

// BroadcastAsync implements ProcessGroup.
func (g *MPIGroup) BroadcastAsync(t *tensor.Tensor, root int) Work {
	checkDType("Broadcast", t)
	g.checkRank("Broadcast", "root", root)
	return g.submit("Broadcast", func() error {
		v := hostVec(t)
		es := v.elemSize()
		rc := pieces(v.len(), func(lo, hi int) C.int {
			return C.ember_bcast(g.comm, unsafe.Add(v.ptr(), lo*es), C.int(hi-lo), mpiDType(v.dt), C.int(root))
		})
		if err := g.check("MPI_Bcast", rc); err != nil {
			return err
		}
		if g.rank != root {
			v.store(t)
		}
		return nil
	})
}

// Reduce implements ProcessGroup.
func (g *MPIGroup) Reduce(t *tensor.Tensor, root int, op ReduceOp) error {
	return wait(g.ReduceAsync(t, root, op))
}

// ReduceAsync implements ProcessGroup.
func (g *MPIGroup) ReduceAsync(t *tensor.Tensor, root int, op ReduceOp) Work {
	checkDType("Reduce", t)
	checkReduceOp("Reduce", op, t)
	g.checkRank("Reduce", "root", root)
	return g.submit("Reduce", func() error {
		v := hostVec(t)
		isRoot := C.int(0)
		if g.rank == root {
			isRoot = 1
		}
		es := v.elemSize()
		rc := pieces(v.len(), func(lo, hi int) C.int {
			return C.ember_reduce(g.comm, unsafe.Add(v.ptr(), lo*es), C.int(hi-lo), mpiDType(v.dt), mpiOp(op), C.int(root), isRoot)
		})
		if err := g.check("MPI_Reduce", rc); err != nil {
			return err
		}
		if g.rank == root {
			if op == Avg {
				v.divide(g.size)
			}
			v.store(t)
		}
		return nil
	})
}

// AllGather implements ProcessGroup.
func (g *MPIGroup) AllGather(outs []*tensor.Tensor, in *tensor.Tensor) error {
	return wait(g.AllGatherAsync(outs, in))
}

// AllGatherAsync implements ProcessGroup.
func (g *MPIGroup) AllGatherAsync(outs []*tensor.Tensor, in *tensor.Tensor) Work {
	checkDType("AllGather", in)
	g.checkList("AllGather", outs, in)
	n := in.Numel()
	checkCount("AllGather", n)
	return g.submit("AllGather", func() error {
		v := hostVec(in)
		all := newVec(v.dt, n*g.size)
		if err := g.check("MPI_Allgather", C.ember_allgather(g.comm, v.ptr(), all.ptr(), C.int(n), mpiDType(v.dt))); err != nil {
			return err
		}
		for j, o := range outs {
			vec{v.dt, all.slice(j*n, (j+1)*n)}.store(o)
		}
		return nil
	})
}

// ReduceScatter implements ProcessGroup.
func (g *MPIGroup) ReduceScatter(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error {
	return wait(g.ReduceScatterAsync(out, ins, op))
}

// ReduceScatterAsync implements ProcessGroup.
func (g *MPIGroup) ReduceScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) Work {
	checkDType("ReduceScatter", out)
	checkReduceOp("ReduceScatter", op, out)
	g.checkList("ReduceScatter", ins, out)
	n := out.Numel()
	checkCount("ReduceScatter", n)
	return g.submit("ReduceScatter", func() error {
		all := concat(ins, out.DType(), n)
		v := newVec(out.DType(), n)
		if err := g.check("MPI_Reduce_scatter_block", C.ember_reduce_scatter(g.comm, all.ptr(), v.ptr(), C.int(n), mpiDType(v.dt), mpiOp(op))); err != nil {
			return err
		}
		if op == Avg {
			v.divide(g.size)
		}
		v.store(out)
		return nil
	})
}

// Gather implements ProcessGroup.
func (g *MPIGroup) Gather(outs []*tensor.Tensor, in *tensor.Tensor, root int) error {
	return wait(g.GatherAsync(outs, in, root))
}

// GatherAsync implements ProcessGroup.
func (g *MPIGroup) GatherAsync(outs []*tensor.Tensor, in *tensor.Tensor, root int) Work {
	checkDType("Gather", in)
	g.checkRank("Gather", "root", root)
	if g.rank == root {
		g.checkList("Gather", outs, in)
	}
	n := in.Numel()
	checkCount("Gather", n)
	return g.submit("Gather", func() error {
		v := hostVec(in)
		var all vec
		if g.rank == root {
			all = newVec(v.dt, n*g.size)
		} else {
			all = newVec(v.dt, 0)
		}
		if err := g.check("MPI_Gather", C.ember_gather(g.comm, v.ptr(), all.ptr(), C.int(n), mpiDType(v.dt), C.int(root))); err != nil {
			return err
		}
		if g.rank == root {
			for j, o := range outs {
				vec{v.dt, all.slice(j*n, (j+1)*n)}.store(o)
			}
		}
		return nil
	})
}

// Scatter implements ProcessGroup.
func (g *MPIGroup) Scatter(out *tensor.Tensor, ins []*tensor.Tensor, root int) error {
	return wait(g.ScatterAsync(out, ins, root))
}

// ScatterAsync implements ProcessGroup.
func (g *MPIGroup) ScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, root int) Work {
	checkDType("Scatter", out)
	g.checkRank("Scatter", "root", root)
	if g.rank == root {
		g.checkList("Scatter", ins, out)
	}
	n := out.Numel()
	checkCount("Scatter", n)
	return g.submit("Scatter", func() error {
		all := newVec(out.DType(), 0)
		if g.rank == root {
			all = concat(ins, out.DType(), n)
		}
		v := newVec(out.DType(), n)
		if err := g.check("MPI_Scatter", C.ember_scatter(g.comm, all.ptr(), v.ptr(), C.int(n), mpiDType(v.dt), C.int(root))); err != nil {
			return err
		}
		v.store(out)
		return nil
	})
}

// Barrier implements ProcessGroup.
func (g *MPIGroup) Barrier() error { return wait(g.BarrierAsync()) }

// BarrierAsync implements ProcessGroup.
func (g *MPIGroup) BarrierAsync() Work {
	return g.submit("Barrier", func() error { return g.check("MPI_Barrier", C.ember_barrier(g.comm)) })
}

// Send implements ProcessGroup.
func (g *MPIGroup) Send(t *tensor.Tensor, dst int) error { return wait(g.SendAsync(t, dst)) }

// SendAsync implements ProcessGroup. The send is started with MPI_Isend
// (the tensor's memory is pinned and must not change until the Work
// completes) and completes when MPI reports it done, so the operations
// queued after it, such as the matching Recv of a ring exchange, run in
// the meantime.
func (g *MPIGroup) SendAsync(t *tensor.Tensor, dst int) Work {
	checkDType("Send", t)
	g.checkRank("Send", "destination", dst)
	if dst == g.rank {
		panic(fmt.Sprintf("distributed.Send: rank %d cannot send to itself", dst))
	}
	return g.enqueue(&mpiWork{g: g, op: "Send", done: make(chan struct{}), send: func(w *mpiWork) (*mpiSend, error) {
		v := hostVec(t)
		es := v.elemSize()
		p := &mpiSend{}
		if b := sliceBytes(v.data); len(b) > 0 {
			p.pinner.Pin(unsafe.SliceData(b))
		}
		nreq := max((v.len()+maxCount-1)/maxCount, 1)
		p.reqs = make([]C.MPI_Request, nreq)
		k := 0
		rc := pieces(v.len(), func(lo, hi int) C.int {
			tag := g.sendTag[dst] % (1 << 15) // MPI guarantees tags up to 32767
			g.sendTag[dst]++
			rc := C.ember_isend(g.comm, unsafe.Add(v.ptr(), lo*es), C.int(hi-lo), mpiDType(v.dt), C.int(dst), C.int(tag), &p.reqs[k])
			k++
			return rc
		})
		if err := g.check("MPI_Isend", rc); err != nil {
			p.pinner.Unpin()
			return nil, err
		}
		return p, nil
	}})
}

// Recv implements ProcessGroup.
func (g *MPIGroup) Recv(t *tensor.Tensor, src int) error { return wait(g.RecvAsync(t, src)) }

// RecvAsync implements ProcessGroup.
func (g *MPIGroup) RecvAsync(t *tensor.Tensor, src int) Work {
	checkDType("Recv", t)
	g.checkRank("Recv", "source", src)
	if src == g.rank {
		panic(fmt.Sprintf("distributed.Recv: rank %d cannot receive from itself", src))
	}
	return g.submit("Recv", func() error {
		v := hostVec(t)
		es := v.elemSize()
		rc := pieces(v.len(), func(lo, hi int) C.int {
			tag := g.recvTag[src] % (1 << 15)
			g.recvTag[src]++
			return C.ember_recv(g.comm, unsafe.Add(v.ptr(), lo*es), C.int(hi-lo), mpiDType(v.dt), C.int(src), C.int(tag))
		})
		if err := g.check("MPI_Recv", rc); err != nil {
			return err
		}
		v.store(t)
		return nil
	})
}

// checkRank panics unless r is a rank of the group.
func (g *MPIGroup) checkRank(op, what string, r int) {
	checkRankRange(op, what, r, g.size)
}

// checkList panics unless ts holds Size() tensors of ref's shape and dtype.
func (g *MPIGroup) checkList(op string, ts []*tensor.Tensor, ref *tensor.Tensor) {
	checkTensorList(op, g.size, ts, ref)
}

// NewSubgroup returns a process group of the given ranks of g, as
// PyTorch's new_group and TCPGroup.NewSubgroup: ranks[i] becomes rank i of
// the subgroup. Every rank of the world group must call NewSubgroup for
// every subgroup, members or not, in the same order; a rank outside ranks
// gets nil. It panics on a rank out of range or listed twice, or when
// called on a subgroup. The members create the communicator together
// (MPI_Comm_group, MPI_Group_incl, MPI_Comm_create_group tagged with the
// subgroup's number), so NewSubgroup blocks until every member has called
// it, bounded by the timeout like any operation.
//
// A subgroup starts with the world group's timeout and has its own
// SetTimeout; it shares the world group's MPI thread, operation queue and
// failure state: a failure in any group makes them all unusable, and
// closing the world group ends its subgroups. Since MPI is driven from one
// thread and its collectives block, the operations of the world group and
// of its subgroups run in one issue order per process, so ranks must issue
// the operations of groups they share in an order that does not deadlock
// (as with blocking MPI collectives on overlapping communicators).
func (g *MPIGroup) NewSubgroup(ranks []int) (*MPIGroup, error) {
	checkSubgroupRanks(g.root == g, g.size, ranks)
	g.subMu.Lock()
	g.nextSub++
	tag := g.nextSub % (1 << 15) // MPI guarantees tags up to 32767
	g.subMu.Unlock()
	me := slices.Index(ranks, g.rank)
	if me < 0 {
		return nil, nil
	}
	sub := &MPIGroup{
		rank: me, size: len(ranks),
		root: g, members: slices.Clone(ranks),
		sendTag: make([]int, len(ranks)), recvTag: make([]int, len(ranks)),
	}
	sub.timeout.Store(g.timeout.Load())
	cranks := (*C.int)(C.malloc(C.size_t(len(ranks)) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(cranks))
	for i, r := range ranks {
		*(*C.int)(unsafe.Add(unsafe.Pointer(cranks), i*int(unsafe.Sizeof(C.int(0))))) = C.int(r)
	}
	err := wait(g.submit("NewSubgroup", func() error {
		return g.check("MPI_Comm_create_group", C.ember_comm_create(g.comm, cranks, C.int(len(ranks)), C.int(tag), &sub.comm))
	}))
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// closeSub closes subgroup g: later operations return ErrClosed, and its
// communicator is freed on the MPI thread after the operations queued
// before. Nothing is freed when the world group is already closed (MPI
// then is finalized or about to be).
func (g *MPIGroup) closeSub() error {
	root := g.root
	root.qmu.Lock()
	if g.subClosed || root.closed {
		g.subClosed = true
		root.qmu.Unlock()
		return nil
	}
	w := &mpiWork{g: g, op: "Close", cleanup: true, done: make(chan struct{}), fn: func() error {
		return g.check("MPI_Comm_free", C.ember_comm_free(&g.comm))
	}}
	root.queue <- w
	g.subClosed = true
	root.qmu.Unlock()
	return wait(w)
}

// WorldRanks returns the world rank of each of the group's ranks.
func (g *MPIGroup) WorldRanks() []int { return slices.Clone(g.members) }
