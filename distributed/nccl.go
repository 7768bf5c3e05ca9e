//go:build cuda

package distributed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/emberml/ember/cuda"
	"github.com/emberml/ember/internal/dl"
	"github.com/emberml/ember/tensor"
)

// NCCLGroup is a ProcessGroup over NVIDIA's NCCL (build tag cuda): the
// collectives run on the GPU, on tensors of the group's CUDA device
// (cuda:LOCAL_RANK). libnccl.so.2 is opened at run time (see NewNCCLGroup
// for where it is looked for); nothing is linked at build time.
//
// Supported dtypes are float32, float64, int32, int64, float16 and
// bfloat16. Tensors may be non-contiguous (they are copied to contiguous
// device memory and back); tensors on another device, the CPU included,
// make the operation return an error. Max and Min follow NCCL's
// comparison, so NaN does not necessarily win as it does in TCPGroup.
//
// Operations run one at a time in issue order on one goroutine locked to
// an OS thread, on a stream of their own: each waits for the device's
// pending kernels, launches NCCL's, and completes when they have finished.
// While waiting it polls NCCL's asynchronous error state; an operation
// that exceeds the timeout, or fails, aborts the communicator
// (ncclCommAbort), so a dead peer gives an error naming the operation
// rather than a hang, and the group is unusable afterwards.
//
// Send and Recv complete only once NCCL has moved the data, so a cycle in
// which every rank first sends and then receives (a ring of SendAsync then
// Recv) waits until the timeout: order such exchanges (even ranks send
// first, odd ranks receive first) or use SendRecv, which runs a send and a
// receive as one NCCL group.
type NCCLGroup struct {
	rank, size int
	dev        tensor.Device
	ordinal    int
	lib        *ncclLib
	drv        *cuDriver
	timeout    atomic.Int64

	root    *NCCLGroup // the world group: failure state, subgroups
	ctrl    *TCPGroup  // world group only: the TCP group that exchanges ids
	members []int      // world ranks of this group's ranks

	subMu sync.Mutex
	subs  []*NCCLGroup // world group only

	failMu sync.Mutex
	err    error
	done   chan struct{} // closed on the first failure or Close (root)

	commMu    sync.Mutex
	comm      uintptr // 0 once destroyed or aborted
	stream    uintptr
	cuCtx     uintptr // the device's primary context, retained
	cuDev     int32
	callState atomic.Int32 // callIdle, callBusy (inside an NCCL host call) or callAborting
	barrier   *tensor.Tensor

	queue opQueue[*ncclWork]
	wdone chan struct{}
	seq   uint64 // worker only
}

var _ ProcessGroup = (*NCCLGroup)(nil)

// NCCLError is an error reported by NCCL or by the CUDA driver during an
// operation of an NCCLGroup.
type NCCLError struct {
	// Op is the operation ("AllReduce", "init", ...).
	Op string
	// Seq is the operation's sequence number in its group (0 outside
	// collectives).
	Seq uint64
	// Msg describes the failure.
	Msg string
}

// Error describes the failure, naming the operation.
func (e *NCCLError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("distributed: NCCL %s #%d: %s", e.Op, e.Seq, e.Msg)
	}
	return fmt.Sprintf("distributed: NCCL %s: %s", e.Op, e.Msg)
}

// callState values.
const (
	callIdle = iota
	callBusy
	callAborting
)

// NCCL's enums (nccl.h).
const (
	ncclSuccess    = 0
	ncclInProgress = 7

	ncclInt32    = 2
	ncclInt64    = 4
	ncclFloat16  = 6
	ncclFloat32  = 7
	ncclFloat64  = 8
	ncclBfloat16 = 9

	ncclSum  = 0
	ncclProd = 1
	ncclMax  = 2
	ncclMin  = 3
	ncclAvg  = 4

	ncclUniqueIDBytes = 128
)

// ncclDType returns NCCL's code for dt.
func ncclDType(dt tensor.DType) (uintptr, bool) {
	switch dt {
	case tensor.Float32:
		return ncclFloat32, true
	case tensor.Float64:
		return ncclFloat64, true
	case tensor.Int32:
		return ncclInt32, true
	case tensor.Int64:
		return ncclInt64, true
	case tensor.Float16:
		return ncclFloat16, true
	case tensor.BFloat16:
		return ncclBfloat16, true
	}
	return 0, false
}

// ncclRedOp returns NCCL's code for op; Avg needs NCCL 2.10 (withAvg),
// else it is a sum the caller divides.
func ncclRedOp(op ReduceOp, withAvg bool) uintptr {
	switch op {
	case Avg:
		if withAvg {
			return ncclAvg
		}
		return ncclSum
	case Max:
		return ncclMax
	case Min:
		return ncclMin
	case Prod:
		return ncclProd
	}
	return ncclSum
}

// ncclLibName is the soname opened.
const ncclLibName = "libnccl.so.2"

// ncclSpec describes libnccl for the dl search: LD_LIBRARY_PATH, the CUDA
// folders, the lib folders of NVIDIA's pip wheels (nvidia/nccl/lib among
// them), then the system loader.
var ncclSpec = dl.Spec{Name: "NCCL", Sonames: []string{ncclLibName}}

// dlopen opens a library for symbol lookup.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// ncclLib holds NCCL's entry points.
type ncclLib struct {
	path    string
	version int // NCCL_VERSION_CODE

	getVersion, getUniqueID, initRankScalable, initRank, commDestroy, commAbort,
	getAsyncError, getErrorString, allReduce, broadcast, reduce, allGather,
	reduceScatter, send, recv, groupStart, groupEnd uintptr
}

var (
	ncclOnce   sync.Once
	ncclLoaded *ncclLib
	ncclErr    error
)

// loadNCCL opens NCCL once per process.
func loadNCCL() (*ncclLib, error) {
	ncclOnce.Do(func() { ncclLoaded, ncclErr = openNCCL(dl.OSEnv(), dl.OpenerFunc(dlopen)) })
	return ncclLoaded, ncclErr
}

// openNCCL finds libnccl.so.2 and resolves its symbols. When it is not
// found the error wraps a *dl.Error listing every folder searched and
// every attempt.
func openNCCL(env dl.Env, o dl.Opener) (*ncclLib, error) {
	lib, err := dl.Open(o, env, ncclSpec)
	if err != nil {
		return nil, fmt.Errorf("distributed: %w; install NCCL (pip install nvidia-nccl-cu12 or the libnccl2 package) or add its folder to LD_LIBRARY_PATH", err)
	}
	h, path := lib.Handle, lib.Path
	l := &ncclLib{path: path}
	syms := []struct {
		name     string
		p        *uintptr
		optional bool
	}{
		{"ncclGetVersion", &l.getVersion, false},
		{"ncclGetUniqueId", &l.getUniqueID, false},
		{"ncclCommInitRankScalable", &l.initRankScalable, true},
		{"ncclCommInitRank", &l.initRank, false},
		{"ncclCommDestroy", &l.commDestroy, false},
		{"ncclCommAbort", &l.commAbort, false},
		{"ncclCommGetAsyncError", &l.getAsyncError, false},
		{"ncclGetErrorString", &l.getErrorString, false},
		{"ncclAllReduce", &l.allReduce, false},
		{"ncclBroadcast", &l.broadcast, false},
		{"ncclReduce", &l.reduce, false},
		{"ncclAllGather", &l.allGather, false},
		{"ncclReduceScatter", &l.reduceScatter, false},
		{"ncclSend", &l.send, false},
		{"ncclRecv", &l.recv, false},
		{"ncclGroupStart", &l.groupStart, false},
		{"ncclGroupEnd", &l.groupEnd, false},
	}
	for _, s := range syms {
		p, err := purego.Dlsym(h, s.name)
		if err != nil && !s.optional {
			return nil, fmt.Errorf("distributed: %s (%s) lacks %s: NCCL 2.7 or newer is needed", ncclLibName, path, s.name)
		}
		*s.p = p
	}
	var v int32
	if r := l.call(l.getVersion, uintptr(unsafe.Pointer(&v))); r != ncclSuccess {
		return nil, fmt.Errorf("distributed: ncclGetVersion: %s", l.errorString(r))
	}
	l.version = int(v)
	if l.initRankScalable == 0 && runtime.GOARCH != "arm64" {
		// ncclCommInitRank takes the 128-byte id by value, which purego
		// cannot pass on the stack; ncclCommInitRankScalable takes a
		// pointer.
		return nil, fmt.Errorf("distributed: %s (%s) is NCCL %s; NCCL 2.23 or newer is needed (ncclCommInitRankScalable)", ncclLibName, path, ncclVersionString(l.version))
	}
	return l, nil
}

// ncclVersionString formats NCCL_VERSION_CODE (major*10000+minor*100+patch
// since 2.9, major*1000+minor*100+patch before).
func ncclVersionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// hasAvg reports whether ncclAvg exists (NCCL 2.10).
func (l *ncclLib) hasAvg() bool { return l.version >= 21000 }

// call runs an NCCL function and returns its ncclResult_t.
//
//go:uintptrescapes
func (l *ncclLib) call(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// errorString returns NCCL's description of r.
func (l *ncclLib) errorString(r int32) string {
	p, _, _ := purego.SyscallN(l.getErrorString, uintptr(r))
	return fmt.Sprintf("%s (ncclResult %d)", cString(p), r)
}

// cString copies a NUL-terminated C string.
func cString(p uintptr) string {
	if p == 0 {
		return "unknown error"
	}
	base := *(*unsafe.Pointer)(unsafe.Pointer(&p)) // C memory, outside Go's heap
	var b []byte
	for i := range 4096 {
		c := *(*byte)(unsafe.Add(base, i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cuDriver is the part of the CUDA driver API the NCCL group needs: the
// device's primary context (the one the cuda backend allocates in), and a
// stream of its own to run NCCL's kernels on and poll.
type cuDriver struct {
	init, deviceGet, primaryRetain, primaryRelease, ctxSetCurrent,
	streamCreate, streamQuery, streamDestroy, getErrorName uintptr
}

// CUDA driver results.
const (
	cudaSuccess       = 0
	cudaErrorNotReady = 600
)

var (
	cuOnce   sync.Once
	cuLoaded *cuDriver
	cuErr    error
)

// loadDriver opens libcuda.so.1 (already loaded by the cuda backend) once.
func loadDriver() (*cuDriver, error) {
	cuOnce.Do(func() {
		h, err := dlopen("libcuda.so.1")
		if err != nil {
			cuErr = fmt.Errorf("distributed: opening libcuda.so.1: %w: %w", cuda.ErrNoDevice, err)
			return
		}
		d := &cuDriver{}
		for _, s := range []struct {
			name string
			p    *uintptr
		}{
			{"cuInit", &d.init}, {"cuDeviceGet", &d.deviceGet},
			{"cuDevicePrimaryCtxRetain", &d.primaryRetain}, {"cuDevicePrimaryCtxRelease_v2", &d.primaryRelease},
			{"cuCtxSetCurrent", &d.ctxSetCurrent},
			{"cuStreamCreate", &d.streamCreate}, {"cuStreamQuery", &d.streamQuery},
			{"cuStreamDestroy_v2", &d.streamDestroy}, {"cuGetErrorName", &d.getErrorName},
		} {
			if *s.p, err = purego.Dlsym(h, s.name); err != nil {
				cuErr = fmt.Errorf("distributed: libcuda.so.1 lacks %s: %w", s.name, err)
				return
			}
		}
		if r := d.call(d.init, 0); r != cudaSuccess {
			cuErr = fmt.Errorf("distributed: cuInit: %s: %w", d.errorName(r), cuda.ErrNoDevice)
			return
		}
		cuLoaded = d
	})
	return cuLoaded, cuErr
}

// call runs a driver function and returns its CUresult.
//
//go:uintptrescapes
func (d *cuDriver) call(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// errorName returns the CUresult's name.
func (d *cuDriver) errorName(r int32) string {
	var p uintptr
	if d.call(d.getErrorName, uintptr(r), uintptr(unsafe.Pointer(&p))) != cudaSuccess {
		return fmt.Sprintf("CUresult %d", r)
	}
	return fmt.Sprintf("%s (CUresult %d)", cString(p), r)
}

// primaryContext retains device ordinal's primary context.
func (d *cuDriver) primaryContext(ordinal int) (ctx uintptr, dev int32, err error) {
	if r := d.call(d.deviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); r != cudaSuccess {
		return 0, 0, fmt.Errorf("cuDeviceGet(%d): %s: %w", ordinal, d.errorName(r), cuda.ErrNoDevice)
	}
	if r := d.call(d.primaryRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(dev)); r != cudaSuccess {
		return 0, 0, fmt.Errorf("cuDevicePrimaryCtxRetain(%d): %s", ordinal, d.errorName(r))
	}
	return ctx, dev, nil
}

// NewNCCLGroupFromEnv is ConfigFromEnv followed by NewNCCLGroup.
func NewNCCLGroupFromEnv(ctx context.Context) (*NCCLGroup, error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	return NewNCCLGroup(ctx, c)
}

// NewNCCLGroup joins the NCCL group described by cfg (the fields mean what
// they do for NewTCPGroup; LocalRank picks the device cuda:LocalRank). It
// opens the device and libnccl.so.2, looked for in each LD_LIBRARY_PATH
// folder, in the lib folder of NVIDIA's nccl pip wheel
// (site-packages/nvidia/nccl/lib) and then by the system loader; NCCL 2.23
// or newer is needed on amd64. The ranks then meet over TCP as NewTCPGroup
// does (authenticated with cfg.Token), rank 0 creates NCCL's unique id and
// sends it to the others, and every rank creates its communicator. A build
// or machine without a usable GPU gives an error wrapping cuda.ErrNoDevice.
func NewNCCLGroup(ctx context.Context, cfg Config) (*NCCLGroup, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if _, err := cuda.Device(cfg.LocalRank); err != nil {
		if errors.Is(err, cuda.ErrNoDevice) {
			return nil, fmt.Errorf("distributed: NewNCCLGroup: rank %d: %w", cfg.Rank, err)
		}
		return nil, fmt.Errorf("distributed: NewNCCLGroup: rank %d: %w: %w", cfg.Rank, cuda.ErrNoDevice, err)
	}
	lib, err := loadNCCL()
	if err != nil {
		return nil, err
	}
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	ctrl, err := NewTCPGroup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	world := make([]int, cfg.WorldSize)
	for i := range world {
		world[i] = i
	}
	g, err := joinComm(ctx, lib, drv, ctrl, nil, world, cfg.Rank, cfg.LocalRank)
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	return g, nil
}

// exchangeID has ctrl's rank root create an NCCL unique id and broadcast
// it; a failure to create it is broadcast too, so that every rank fails.
func exchangeID(lib *ncclLib, ctrl *TCPGroup, root int) ([ncclUniqueIDBytes]byte, error) {
	var id [ncclUniqueIDBytes]byte
	msg := make([]int64, 1+ncclUniqueIDBytes/8)
	if ctrl.Rank() == root {
		if r := lib.call(lib.getUniqueID, uintptr(unsafe.Pointer(&id))); r != ncclSuccess {
			msg[0] = int64(r)
		}
		for i := range ncclUniqueIDBytes / 8 {
			msg[1+i] = int64(binary.LittleEndian.Uint64(id[8*i:]))
		}
	}
	t := tensor.FromSlice(msg, len(msg))
	if err := ctrl.Broadcast(t, root); err != nil {
		return id, err
	}
	got := t.Int64s()
	if got[0] != 0 {
		return id, &NCCLError{Op: "init", Msg: fmt.Sprintf("rank %d could not create the unique id: %s", root, lib.errorString(int32(got[0])))}
	}
	for i := range ncclUniqueIDBytes / 8 {
		binary.LittleEndian.PutUint64(id[8*i:], uint64(got[1+i]))
	}
	return id, nil
}

// joinComm exchanges an id over ctrl from the first of members (world
// ranks) and, when worldRank is a member, creates the communicator of
// members on device cuda:ordinal. Non-members get nil.
func joinComm(ctx context.Context, lib *ncclLib, drv *cuDriver, ctrl *TCPGroup, root *NCCLGroup, members []int, worldRank, ordinal int) (*NCCLGroup, error) {
	id, err := exchangeID(lib, ctrl, members[0])
	if err != nil {
		return nil, err
	}
	me := slices.Index(members, worldRank)
	if me < 0 {
		return nil, nil
	}
	g := &NCCLGroup{
		rank: me, size: len(members), dev: tensor.CUDA(ordinal), ordinal: ordinal,
		lib: lib, drv: drv, members: slices.Clone(members),
		done: make(chan struct{}), wdone: make(chan struct{}),
	}
	g.timeout.Store(int64(ctrl.Timeout()))
	if root == nil {
		g.root, g.ctrl = g, ctrl
	} else {
		g.root = root
	}
	ready := make(chan error)
	abandon := make(chan struct{})
	go g.worker(id, ready, abandon)
	timer := time.NewTimer(g.Timeout())
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			return nil, err
		}
		return g, nil
	case <-timer.C:
		err = &NCCLError{Op: "init", Msg: fmt.Sprintf("the communicator of %d ranks was not created within %v (is every rank running?)", g.size, g.Timeout())}
	case <-ctx.Done():
		err = &NCCLError{Op: "init", Msg: ctx.Err().Error()}
	}
	close(abandon)
	return nil, err
}

// worker creates the communicator on its own locked OS thread, reports
// the result on ready (or, when the caller gave up, frees it), then runs
// the queued operations there, and frees the communicator at the end.
func (g *NCCLGroup) worker(id [ncclUniqueIDBytes]byte, ready chan<- error, abandon <-chan struct{}) {
	// The thread keeps the CUDA context current; it ends with the worker.
	runtime.LockOSThread()
	defer close(g.wdone)
	err := g.initComm(&id)
	select {
	case ready <- err:
	case <-abandon:
		if err == nil {
			g.release(false)
		}
		return
	}
	if err != nil {
		return
	}
	defer func() { g.release(g.failure() != nil) }()
	for {
		w, closed, ok := g.queue.pop()
		if !ok {
			return
		}
		if closed {
			w.finish(ErrClosed)
			continue
		}
		if err := g.failure(); err != nil {
			w.finish(fmt.Errorf("distributed: NCCL group unusable after an earlier failure: %w", err))
			continue
		}
		g.seq++
		err := w.fn(g.seq, time.Now().Add(g.Timeout()))
		if err != nil {
			g.fail(err)
		}
		w.finish(err)
	}
}

// initComm makes the device current on this thread, creates the stream
// and the communicator.
func (g *NCCLGroup) initComm(id *[ncclUniqueIDBytes]byte) error {
	d, l := g.drv, g.lib
	ctx, dev, err := d.primaryContext(g.ordinal)
	if err != nil {
		return &NCCLError{Op: "init", Msg: err.Error()}
	}
	g.cuCtx, g.cuDev = ctx, dev
	if r := d.call(d.ctxSetCurrent, ctx); r != cudaSuccess {
		d.call(d.primaryRelease, uintptr(dev))
		return &NCCLError{Op: "init", Msg: "cuCtxSetCurrent: " + d.errorName(r)}
	}
	const nonBlocking = 1 // CU_STREAM_NON_BLOCKING
	if r := d.call(d.streamCreate, uintptr(unsafe.Pointer(&g.stream)), nonBlocking); r != cudaSuccess {
		d.call(d.primaryRelease, uintptr(dev))
		return &NCCLError{Op: "init", Msg: "cuStreamCreate: " + d.errorName(r)}
	}
	var comm uintptr
	var r int32
	if l.initRankScalable != 0 {
		r = l.call(l.initRankScalable, uintptr(unsafe.Pointer(&comm)), uintptr(g.size), uintptr(g.rank), 1, uintptr(unsafe.Pointer(id)), 0)
	} else {
		// arm64 passes a struct of more than 16 bytes by reference.
		r = l.call(l.initRank, uintptr(unsafe.Pointer(&comm)), uintptr(g.size), uintptr(unsafe.Pointer(id)), uintptr(g.rank))
	}
	if r != ncclSuccess {
		d.call(d.streamDestroy, g.stream)
		d.call(d.primaryRelease, uintptr(dev))
		return &NCCLError{Op: "init", Msg: fmt.Sprintf("creating the communicator of %d ranks on %s: %s", g.size, g.dev, l.errorString(r))}
	}
	g.commMu.Lock()
	g.comm = comm
	g.commMu.Unlock()
	return nil
}

// release frees the communicator (aborting it when the group failed) and
// the stream; worker thread only.
func (g *NCCLGroup) release(abort bool) {
	g.commMu.Lock()
	comm := g.comm
	g.comm = 0
	g.commMu.Unlock()
	if comm != 0 {
		if abort {
			g.lib.call(g.lib.commAbort, comm)
		} else {
			g.lib.call(g.lib.commDestroy, comm)
		}
	}
	g.drv.call(g.drv.streamDestroy, g.stream)
	g.drv.call(g.drv.primaryRelease, uintptr(g.cuDev))
}

// abortComm aborts the communicator now, from any goroutine; it is used
// when the worker is stuck inside an NCCL call.
func (g *NCCLGroup) abortComm() {
	g.commMu.Lock()
	defer g.commMu.Unlock() // held until NCCL has finished aborting
	if g.comm != 0 {
		g.lib.call(g.lib.commAbort, g.comm)
		g.comm = 0
	}
}

// Rank implements ProcessGroup.
func (g *NCCLGroup) Rank() int { return g.rank }

// Size implements ProcessGroup.
func (g *NCCLGroup) Size() int { return g.size }

// Device returns the CUDA device the group's tensors must be on.
func (g *NCCLGroup) Device() tensor.Device { return g.dev }

// WorldRanks returns the world rank of each of the group's ranks.
func (g *NCCLGroup) WorldRanks() []int { return slices.Clone(g.members) }

// NCCLVersion returns the version of the NCCL library in use
// ("2.27.3") and the path it was opened by.
func (g *NCCLGroup) NCCLVersion() (version, path string) {
	return ncclVersionString(g.lib.version), g.lib.path
}

// Timeout implements ProcessGroup.
func (g *NCCLGroup) Timeout() time.Duration { return time.Duration(g.timeout.Load()) }

// SetTimeout implements ProcessGroup; it panics if d is not positive.
func (g *NCCLGroup) SetTimeout(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("distributed.SetTimeout: timeout %v must be positive", d))
	}
	g.timeout.Store(int64(d))
}

// NewSubgroup returns an NCCL group of the given world ranks, as
// TCPGroup.NewSubgroup does: every rank of the world group must call it
// for every subgroup, in the same order, and ranks outside ranks get nil.
// The first listed rank creates a unique id and sends it over the world's
// TCP connections; the members create a communicator of their own. It
// panics on a rank out of range or listed twice, or when called on a
// subgroup. A failure in any group of the world aborts them all, and
// closing the world group closes its subgroups.
func (g *NCCLGroup) NewSubgroup(ranks []int) (*NCCLGroup, error) {
	checkSubgroupRanks(g.root == g, g.size, ranks)
	g.subMu.Lock()
	defer g.subMu.Unlock()
	if err := g.failure(); err != nil {
		return nil, err
	}
	sub, err := joinComm(context.Background(), g.lib, g.drv, g.ctrl, g, ranks, g.rank, g.ordinal)
	if err != nil || sub == nil {
		return nil, err
	}
	sub.timeout.Store(g.timeout.Load())
	g.subs = append(g.subs, sub)
	return sub, nil
}

// failure returns the error that stopped the group's world, or nil.
func (g *NCCLGroup) failure() error {
	r := g.root
	r.failMu.Lock()
	defer r.failMu.Unlock()
	return r.err
}

// fail records err as the world's failure; each group's worker aborts its
// communicator when it sees it.
func (g *NCCLGroup) fail(err error) {
	r := g.root
	r.failMu.Lock()
	defer r.failMu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.done)
	}
}

// Close implements ProcessGroup: pending operations fail with ErrClosed
// and the communicator is destroyed. Closing the world group closes its
// subgroups and the TCP connections too.
func (g *NCCLGroup) Close() error {
	if g.root == g {
		g.subMu.Lock()
		subs := g.subs
		g.subs = nil
		g.subMu.Unlock()
		for _, s := range subs {
			s.Close()
		}
	}
	g.queue.close()
	<-g.wdone
	if g.root == g {
		g.failMu.Lock()
		if g.err == nil {
			g.err = ErrClosed
			close(g.done)
		}
		g.failMu.Unlock()
		return g.ctrl.Close()
	}
	return nil
}

// ncclWork is the Work of one queued operation.
type ncclWork struct {
	g    *NCCLGroup
	fn   func(seq uint64, deadline time.Time) error
	once sync.Once
	done chan struct{}
	err  error
}

// Wait implements Work. If ctx ends first the group's world is marked
// failed (its communicators are aborted) and Wait returns ctx's error.
func (w *ncclWork) Wait(ctx context.Context) error {
	return waitDone(ctx, w.done, &w.err, w.g.fail)
}

// Done implements Work.
func (w *ncclWork) Done() <-chan struct{} { return w.done }

// finish records err and releases waiters (once).
func (w *ncclWork) finish(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.done)
	})
}

// failed returns a Work that has already failed with err.
func (g *NCCLGroup) failed(err error) Work {
	w := &ncclWork{g: g, done: make(chan struct{})}
	w.finish(err)
	return w
}

// submit queues fn and returns its Work.
func (g *NCCLGroup) submit(fn func(seq uint64, deadline time.Time) error) Work {
	w := &ncclWork{g: g, fn: fn, done: make(chan struct{})}
	if !g.queue.push(w) {
		w.finish(ErrClosed)
	}
	return w
}

// submitOn is submit for an operation on the tensors ts: it fails at once
// (without queueing) unless they are all on the group's device, and an
// operation moving no elements (numel 0) completes in its turn without
// running fn.
func (g *NCCLGroup) submitOn(op string, ts []*tensor.Tensor, numel int, fn func(seq uint64, deadline time.Time) error) Work {
	if err := g.onDevice(op, ts...); err != nil {
		return g.failed(err)
	}
	return g.submit(func(seq uint64, deadline time.Time) error {
		if numel == 0 {
			return nil
		}
		return fn(seq, deadline)
	})
}

// checkRank panics unless r is a rank of the group.
func (g *NCCLGroup) checkRank(op, what string, r int) {
	checkRankRange(op, what, r, g.size)
}

// checkNCCLDType panics unless NCCL moves t's dtype.
func checkNCCLDType(op string, t *tensor.Tensor) {
	if t == nil {
		panic(fmt.Sprintf("distributed.%s: nil tensor", op))
	}
	if _, ok := ncclDType(t.DType()); !ok {
		panic(fmt.Sprintf("distributed.%s: dtype %s of tensor %v is not supported by NCCL; use float32, float64, float16, bfloat16, int32 or int64 (convert with To)", op, t.DType(), t.Shape()))
	}
}

// checkList panics unless ts holds Size() tensors of ref's shape and dtype.
func (g *NCCLGroup) checkList(op string, ts []*tensor.Tensor, ref *tensor.Tensor) {
	if len(ts) != g.size {
		panic(fmt.Sprintf("distributed.%s: %d tensors, want one per rank (%d)", op, len(ts), g.size))
	}
	for j, t := range ts {
		checkNCCLDType(op, t)
		if t.DType() != ref.DType() || !sameShape(t.Shape(), ref.Shape()) {
			panic(fmt.Sprintf("distributed.%s: tensor %d is %s%v, want %s%v like the others", op, j, t.DType(), t.Shape(), ref.DType(), ref.Shape()))
		}
	}
}

// onDevice returns an error unless every tensor is on the group's device.
func (g *NCCLGroup) onDevice(op string, ts ...*tensor.Tensor) error {
	for _, t := range ts {
		if d := t.Device(); d != g.dev {
			return fmt.Errorf("distributed.%s: the %s tensor %v is on %s, but this NCCL group works on %s tensors (move it with ToDevice)", op, t.DType(), t.Shape(), d, g.dev)
		}
	}
	return nil
}

// ptr returns the device address of the contiguous device tensor t.
func ptr(t *tensor.Tensor) uintptr {
	p, err := cuda.DevicePointer(t)
	if err != nil {
		panic(err) // callers pass contiguous tensors of the group's device
	}
	return uintptr(p)
}

// writeBack records that NCCL wrote c, a contiguous version of t, and
// copies it into t when it is a copy.
func writeBack(t, c *tensor.Tensor) {
	if c == t {
		tensor.MarkWritten(t)
		return
	}
	t.CopyFrom(c)
}

// scratch returns a contiguous device tensor of shape [n, like's shape...].
func scratch(like *tensor.Tensor, n int) *tensor.Tensor {
	shape := append([]int{n}, like.Shape()...)
	return tensor.ZerosLike(like).Unsqueeze(0).Expand(shape...).Contiguous()
}

// launch makes the device current, waits for the kernels already queued
// on it (the inputs), runs enqueue (NCCL calls on the group's stream) and
// waits for the stream, polling NCCL's error state, until deadline.
func (g *NCCLGroup) launch(op string, seq uint64, deadline time.Time, enqueue func(comm, stream uintptr) int32) error {
	d, l := g.drv, g.lib
	// The inputs are ready once the backend's stream has run the kernels
	// queued before this operation.
	if err := cuda.Synchronize(g.ordinal); err != nil {
		return &NCCLError{Op: op, Seq: seq, Msg: "waiting for the device's pending work: " + err.Error()}
	}
	// Other code on this thread (the backend) may have changed the
	// current context.
	if r := d.call(d.ctxSetCurrent, g.cuCtx); r != cudaSuccess {
		return &NCCLError{Op: op, Seq: seq, Msg: "cuCtxSetCurrent: " + d.errorName(r)}
	}
	g.commMu.Lock()
	comm := g.comm
	g.commMu.Unlock()
	if comm == 0 {
		return g.failureOr(&NCCLError{Op: op, Seq: seq, Msg: "the communicator was aborted"})
	}
	// A watchdog aborts the communicator if NCCL's host call itself blocks
	// past the deadline (e.g. connecting to a dead peer).
	// The worker and the watchdog race for callState: whoever leaves
	// callBusy first decides whether the communicator is aborted.
	g.callState.Store(callBusy)
	stuck := time.AfterFunc(time.Until(deadline), func() {
		if g.callState.CompareAndSwap(callBusy, callAborting) {
			g.fail(&NCCLError{Op: op, Seq: seq, Msg: fmt.Sprintf("NCCL did not return within %v; the communicator was aborted", g.Timeout())})
			g.abortComm()
		}
	})
	r := enqueue(comm, g.stream)
	stuck.Stop()
	if !g.callState.CompareAndSwap(callBusy, callIdle) {
		// The watchdog is aborting the communicator: wait for it.
		g.commMu.Lock() // held by abortComm until the abort is done
		g.commMu.Unlock()
		g.callState.Store(callIdle)
		return g.failureOr(&NCCLError{Op: op, Seq: seq, Msg: "the communicator was aborted"})
	}
	if r != ncclSuccess && r != ncclInProgress {
		return g.failureOr(&NCCLError{Op: op, Seq: seq, Msg: l.errorString(r)})
	}
	return g.waitStream(op, seq, comm, deadline)
}

// failureOr returns the world's recorded failure, else err.
func (g *NCCLGroup) failureOr(err error) error {
	if f := g.failure(); f != nil {
		return f
	}
	return err
}

// waitStream polls the stream until NCCL's kernels finish, NCCL reports
// an error, another group fails or deadline passes; in the last three
// cases it aborts the communicator.
func (g *NCCLGroup) waitStream(op string, seq uint64, comm uintptr, deadline time.Time) error {
	d, l := g.drv, g.lib
	pause := 5 * time.Microsecond
	for {
		r := d.call(d.streamQuery, g.stream)
		if r == cudaSuccess {
			return nil
		}
		var err error
		switch {
		case r != cudaErrorNotReady:
			err = &NCCLError{Op: op, Seq: seq, Msg: "waiting for NCCL's kernels: " + d.errorName(r)}
		default:
			var async int32
			if ar := l.call(l.getAsyncError, comm, uintptr(unsafe.Pointer(&async))); ar != ncclSuccess {
				async = ar
			}
			switch {
			case async != ncclSuccess && async != ncclInProgress:
				err = &NCCLError{Op: op, Seq: seq, Msg: l.errorString(async)}
			case g.failure() != nil:
				err = g.failure()
			case time.Now().After(deadline):
				err = &NCCLError{Op: op, Seq: seq, Msg: fmt.Sprintf("did not complete within %v on %s (is every rank running the same collectives?); the communicator was aborted", g.Timeout(), g.dev)}
			}
		}
		if err != nil {
			g.fail(err)
			g.abortComm()
			return g.failureOr(err)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// AllReduce implements ProcessGroup.
func (g *NCCLGroup) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	return wait(g.AllReduceAsync(t, op))
}

// AllReduceAsync implements ProcessGroup.
func (g *NCCLGroup) AllReduceAsync(t *tensor.Tensor, op ReduceOp) Work {
	checkNCCLDType("AllReduce", t)
	checkReduceOp("AllReduce", op, t)
	n := t.Numel()
	return g.submitOn("AllReduce", []*tensor.Tensor{t}, n, func(seq uint64, deadline time.Time) error {
		c := t.Contiguous()
		dt, _ := ncclDType(t.DType())
		err := g.launch("AllReduce", seq, deadline, func(comm, stream uintptr) int32 {
			p := ptr(c)
			return g.lib.call(g.lib.allReduce, p, p, uintptr(n), dt, ncclRedOp(op, g.lib.hasAvg()), comm, stream)
		})
		runtime.KeepAlive(c)
		if err != nil {
			return err
		}
		if op == Avg && !g.lib.hasAvg() {
			c.CopyFrom(c.DivScalar(float64(g.size)))
		}
		writeBack(t, c)
		return nil
	})
}

// Broadcast implements ProcessGroup.
func (g *NCCLGroup) Broadcast(t *tensor.Tensor, root int) error {
	return wait(g.BroadcastAsync(t, root))
}

// BroadcastAsync implements ProcessGroup.
func (g *NCCLGroup) BroadcastAsync(t *tensor.Tensor, root int) Work {
	checkNCCLDType("Broadcast", t)
	g.checkRank("Broadcast", "root", root)
	n := t.Numel()
	return g.submitOn("Broadcast", []*tensor.Tensor{t}, n, func(seq uint64, deadline time.Time) error {
		c := t.Contiguous()
		dt, _ := ncclDType(t.DType())
		err := g.launch("Broadcast", seq, deadline, func(comm, stream uintptr) int32 {
			p := ptr(c)
			return g.lib.call(g.lib.broadcast, p, p, uintptr(n), dt, uintptr(root), comm, stream)
		})
		runtime.KeepAlive(c)
		if err != nil {
			return err
		}
		if g.rank != root {
			writeBack(t, c)
		}
		return nil
	})
}

// Reduce implements ProcessGroup.
func (g *NCCLGroup) Reduce(t *tensor.Tensor, root int, op ReduceOp) error {
	return wait(g.ReduceAsync(t, root, op))
}

// ReduceAsync implements ProcessGroup.
func (g *NCCLGroup) ReduceAsync(t *tensor.Tensor, root int, op ReduceOp) Work {
	checkNCCLDType("Reduce", t)
	checkReduceOp("Reduce", op, t)
	g.checkRank("Reduce", "root", root)
	n := t.Numel()
	return g.submitOn("Reduce", []*tensor.Tensor{t}, n, func(seq uint64, deadline time.Time) error {
		c := t.Contiguous()
		dt, _ := ncclDType(t.DType())
		err := g.launch("Reduce", seq, deadline, func(comm, stream uintptr) int32 {
			// recvbuff is only written on root.
			p := ptr(c)
			return g.lib.call(g.lib.reduce, p, p, uintptr(n), dt, ncclRedOp(op, g.lib.hasAvg()), uintptr(root), comm, stream)
		})
		runtime.KeepAlive(c)
		if err != nil || g.rank != root {
			return err
		}
		if op == Avg && !g.lib.hasAvg() {
			c.CopyFrom(c.DivScalar(float64(g.size)))
		}
		writeBack(t, c)
		return nil
	})
}

// AllGather implements ProcessGroup.
func (g *NCCLGroup) AllGather(outs []*tensor.Tensor, in *tensor.Tensor) error {
	return wait(g.AllGatherAsync(outs, in))
}

// AllGatherAsync implements ProcessGroup. The ranks' tensors are gathered
// into one contiguous device buffer, then copied into outs.
func (g *NCCLGroup) AllGatherAsync(outs []*tensor.Tensor, in *tensor.Tensor) Work {
	checkNCCLDType("AllGather", in)
	g.checkList("AllGather", outs, in)
	n := in.Numel()
	return g.submitOn("AllGather", append([]*tensor.Tensor{in}, outs...), n, func(seq uint64, deadline time.Time) error {
		c := in.Contiguous()
		all := scratch(in, g.size)
		dt, _ := ncclDType(in.DType())
		err := g.launch("AllGather", seq, deadline, func(comm, stream uintptr) int32 {
			return g.lib.call(g.lib.allGather, ptr(c), ptr(all), uintptr(n), dt, comm, stream)
		})
		runtime.KeepAlive(c) // NCCL read it until launch returned
		if err != nil {
			return err
		}
		for j, o := range outs {
			o.CopyFrom(all.Select(0, j))
		}
		return nil
	})
}

// ReduceScatter implements ProcessGroup.
func (g *NCCLGroup) ReduceScatter(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error {
	return wait(g.ReduceScatterAsync(out, ins, op))
}

// ReduceScatterAsync implements ProcessGroup. ins are stacked into one
// contiguous device buffer first.
func (g *NCCLGroup) ReduceScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) Work {
	checkNCCLDType("ReduceScatter", out)
	checkReduceOp("ReduceScatter", op, out)
	g.checkList("ReduceScatter", ins, out)
	n := out.Numel()
	return g.submitOn("ReduceScatter", append([]*tensor.Tensor{out}, ins...), n, func(seq uint64, deadline time.Time) error {
		send := tensor.Stack(ins, 0)
		c := out.Contiguous()
		if c.SharesStorage(send) {
			c = out.Clone()
		}
		dt, _ := ncclDType(out.DType())
		err := g.launch("ReduceScatter", seq, deadline, func(comm, stream uintptr) int32 {
			return g.lib.call(g.lib.reduceScatter, ptr(send), ptr(c), uintptr(n), dt, ncclRedOp(op, g.lib.hasAvg()), comm, stream)
		})
		runtime.KeepAlive(send) // NCCL read it until launch returned
		if err != nil {
			return err
		}
		if op == Avg && !g.lib.hasAvg() {
			c.CopyFrom(c.DivScalar(float64(g.size)))
		}
		writeBack(out, c)
		return nil
	})
}

// p2p is one grouped point-to-point transfer: send t to peer, or receive
// into t from peer.
type p2p struct {
	send bool
	t    *tensor.Tensor
	peer int
}

// runP2P launches transfers as one NCCL group.
func (g *NCCLGroup) runP2P(op string, seq uint64, deadline time.Time, xs []p2p) error {
	defer runtime.KeepAlive(xs) // the device memory stays allocated until NCCL is done
	return g.launch(op, seq, deadline, func(comm, stream uintptr) int32 {
		l := g.lib
		if r := l.call(l.groupStart); r != ncclSuccess {
			return r
		}
		var first int32
		for _, x := range xs {
			dt, _ := ncclDType(x.t.DType())
			fn := l.recv
			if x.send {
				fn = l.send
			}
			if r := l.call(fn, ptr(x.t), uintptr(x.t.Numel()), dt, uintptr(x.peer), comm, stream); r != ncclSuccess && first == ncclSuccess {
				first = r
			}
		}
		if r := l.call(l.groupEnd); r != ncclSuccess && first == ncclSuccess {
			first = r
		}
		return first
	})
}

// Gather implements ProcessGroup.
func (g *NCCLGroup) Gather(outs []*tensor.Tensor, in *tensor.Tensor, root int) error {
	return wait(g.GatherAsync(outs, in, root))
}

// GatherAsync implements ProcessGroup: grouped sends to root and receives
// there into one contiguous device buffer, then copied into outs.
func (g *NCCLGroup) GatherAsync(outs []*tensor.Tensor, in *tensor.Tensor, root int) Work {
	checkNCCLDType("Gather", in)
	g.checkRank("Gather", "root", root)
	ts := []*tensor.Tensor{in}
	if g.rank == root {
		g.checkList("Gather", outs, in)
		ts = append(ts, outs...)
	}
	return g.submitOn("Gather", ts, in.Numel(), func(seq uint64, deadline time.Time) error {
		if g.rank != root {
			return g.runP2P("Gather", seq, deadline, []p2p{{send: true, t: in.Contiguous(), peer: root}})
		}
		all := scratch(in, g.size)
		all.Select(0, root).CopyFrom(in)
		var xs []p2p
		for j := range g.size {
			if j != root {
				xs = append(xs, p2p{t: all.Select(0, j), peer: j})
			}
		}
		if err := g.runP2P("Gather", seq, deadline, xs); err != nil {
			return err
		}
		for j, o := range outs {
			o.CopyFrom(all.Select(0, j))
		}
		return nil
	})
}

// Scatter implements ProcessGroup.
func (g *NCCLGroup) Scatter(out *tensor.Tensor, ins []*tensor.Tensor, root int) error {
	return wait(g.ScatterAsync(out, ins, root))
}

// ScatterAsync implements ProcessGroup: root stacks ins into one device
// buffer and sends each rank its part in one NCCL group.
func (g *NCCLGroup) ScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, root int) Work {
	checkNCCLDType("Scatter", out)
	g.checkRank("Scatter", "root", root)
	ts := []*tensor.Tensor{out}
	if g.rank == root {
		g.checkList("Scatter", ins, out)
		ts = append(ts, ins...)
	}
	return g.submitOn("Scatter", ts, out.Numel(), func(seq uint64, deadline time.Time) error {
		if g.rank != root {
			c := out.Contiguous()
			if err := g.runP2P("Scatter", seq, deadline, []p2p{{t: c, peer: root}}); err != nil {
				return err
			}
			writeBack(out, c)
			return nil
		}
		all := tensor.Stack(ins, 0)
		var xs []p2p
		for j := range g.size {
			if j != root {
				xs = append(xs, p2p{send: true, t: all.Select(0, j), peer: j})
			}
		}
		if err := g.runP2P("Scatter", seq, deadline, xs); err != nil {
			return err
		}
		out.CopyFrom(all.Select(0, root))
		return nil
	})
}

// Barrier implements ProcessGroup.
func (g *NCCLGroup) Barrier() error { return wait(g.BarrierAsync()) }

// BarrierAsync implements ProcessGroup: an all-reduce of one element,
// complete on this rank once every rank's kernels have joined it.
func (g *NCCLGroup) BarrierAsync() Work {
	return g.submit(func(seq uint64, deadline time.Time) error {
		if g.barrier == nil {
			b, err := tensor.Zeros([]int{1}, tensor.Float32).ToDevice(g.dev)
			if err != nil {
				return &NCCLError{Op: "Barrier", Seq: seq, Msg: err.Error()}
			}
			g.barrier = b
		}
		return g.launch("Barrier", seq, deadline, func(comm, stream uintptr) int32 {
			p := ptr(g.barrier)
			return g.lib.call(g.lib.allReduce, p, p, 1, ncclFloat32, ncclSum, comm, stream)
		})
	})
}

// Send implements ProcessGroup.
func (g *NCCLGroup) Send(t *tensor.Tensor, dst int) error { return wait(g.SendAsync(t, dst)) }

// SendAsync implements ProcessGroup.
func (g *NCCLGroup) SendAsync(t *tensor.Tensor, dst int) Work {
	checkNCCLDType("Send", t)
	g.checkRank("Send", "destination", dst)
	if dst == g.rank {
		panic(fmt.Sprintf("distributed.Send: rank %d cannot send to itself", dst))
	}
	return g.submitOn("Send", []*tensor.Tensor{t}, t.Numel(), func(seq uint64, deadline time.Time) error {
		return g.runP2P("Send", seq, deadline, []p2p{{send: true, t: t.Contiguous(), peer: dst}})
	})
}

// SendRecv sends send to rank dst and receives into recv from rank src as
// one NCCL group, so that ranks exchanging in a cycle (each sending to the
// next and receiving from the previous) do not wait for each other. send
// and recv must not share storage.
func (g *NCCLGroup) SendRecv(send *tensor.Tensor, dst int, recv *tensor.Tensor, src int) error {
	return wait(g.SendRecvAsync(send, dst, recv, src))
}

// SendRecvAsync is SendRecv without waiting.
func (g *NCCLGroup) SendRecvAsync(send *tensor.Tensor, dst int, recv *tensor.Tensor, src int) Work {
	checkNCCLDType("SendRecv", send)
	checkNCCLDType("SendRecv", recv)
	g.checkRank("SendRecv", "destination", dst)
	g.checkRank("SendRecv", "source", src)
	if dst == g.rank || src == g.rank {
		panic(fmt.Sprintf("distributed.SendRecv: rank %d cannot send to or receive from itself (dst %d, src %d)", g.rank, dst, src))
	}
	return g.submitOn("SendRecv", []*tensor.Tensor{send, recv}, send.Numel()+recv.Numel(), func(seq uint64, deadline time.Time) error {
		var xs []p2p
		if send.Numel() > 0 {
			xs = append(xs, p2p{send: true, t: send.Contiguous(), peer: dst})
		}
		c := recv.Contiguous()
		if recv.Numel() > 0 {
			xs = append(xs, p2p{t: c, peer: src})
		}
		if err := g.runP2P("SendRecv", seq, deadline, xs); err != nil {
			return err
		}
		if recv.Numel() > 0 {
			writeBack(recv, c)
		}
		return nil
	})
}

// Recv implements ProcessGroup.
func (g *NCCLGroup) Recv(t *tensor.Tensor, src int) error { return wait(g.RecvAsync(t, src)) }

// RecvAsync implements ProcessGroup.
func (g *NCCLGroup) RecvAsync(t *tensor.Tensor, src int) Work {
	checkNCCLDType("Recv", t)
	g.checkRank("Recv", "source", src)
	if src == g.rank {
		panic(fmt.Sprintf("distributed.Recv: rank %d cannot receive from itself", src))
	}
	return g.submitOn("Recv", []*tensor.Tensor{t}, t.Numel(), func(seq uint64, deadline time.Time) error {
		c := t.Contiguous()
		if err := g.runP2P("Recv", seq, deadline, []p2p{{t: c, peer: src}}); err != nil {
			return err
		}
		writeBack(t, c)
		return nil
	})
}
