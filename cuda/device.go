//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/emberml/ember/cuda/internal/alloc"
	"github.com/emberml/ember/cuda/internal/cublas"
	"github.com/emberml/ember/cuda/internal/driver"
	"github.com/emberml/ember/internal/dl"
	"github.com/emberml/ember/tensor"
)

// Transfer tuning: host copies of at least pinnedThreshold bytes go through
// two page-locked staging halves of stagingHalf bytes each, so copying into
// one half overlaps the DMA of the other.
const (
	pinnedThreshold = 256 << 10
	stagingHalf     = 4 << 20
	threadsPerBlock = 256
	blocksPerSM     = 32
)

// noDeviceError reports that CUDA cannot be used; it wraps ErrNoDevice and
// the cause.
type noDeviceError struct{ err error }

func (e *noDeviceError) Error() string   { return "cuda: " + e.err.Error() }
func (e *noDeviceError) Unwrap() []error { return []error{ErrNoDevice, e.err} }

// wrapErr prefixes a driver error for the public API; errors meaning "no
// usable device" also wrap ErrNoDevice.
func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrNoDevice) || errors.Is(err, dl.ErrNotFound) {
		return &noDeviceError{err}
	}
	return fmt.Errorf("cuda: %w", err)
}

// loadDriver opens libcuda and initialises it.
func loadDriver() (*driver.Driver, error) {
	drv, err := driver.Load(dl.OSEnv())
	if err != nil {
		return nil, wrapErr(err)
	}
	if err := drv.Init(); err != nil {
		return nil, wrapErr(err)
	}
	return drv, nil
}

// deviceOf returns the CUdevice of ordinal i, checking the range.
func deviceOf(drv *driver.Driver, i int) (driver.Device, error) {
	n, err := drv.DeviceCount()
	if err != nil {
		return 0, wrapErr(err)
	}
	if i < 0 || i >= n {
		return 0, &noDeviceError{fmt.Errorf("device %d does not exist (%d CUDA devices)", i, n)}
	}
	dev, err := drv.DeviceGet(i)
	return dev, wrapErr(err)
}

// Backend is the CUDA implementation of tensor.Backend for one device. All
// its work is queued on one stream of the device's primary context; host
// copies wait for it. It is safe for concurrent use.
type Backend struct {
	index  int
	drv    *driver.Driver
	dev    driver.Device
	ctx    driver.Context
	stream driver.Stream
	mem    *alloc.Allocator
	// pacer runs the Go collector as device memory in use grows, so that
	// unreachable tensors give their blocks back between steps.
	pacer *alloc.Pacer
	// maxBlocks caps the grid of launch (grid-stride loops do the rest).
	maxBlocks int

	blas       *cublas.Library
	blasMu     sync.Mutex // guards the handle's math mode and calls
	blasHandle cublas.Handle
	blasTF32   bool // math mode currently set on the handle
	allowTF32  bool // guarded by blasMu

	kernelMu sync.Mutex
	entries  map[string]string // kernel name → PTX file
	modules  map[string]driver.Module
	funcs    map[string]driver.Function

	stagingMu sync.Mutex
	staging   [2][]byte // page-locked, allocated on first large copy
	stagingEv [2]driver.Event

	conv convState // cuDNN, opened on the first convolution (backend_conv.go)
}

// open is the tensor.BackendFactory of the "cuda" device kind.
func open(index int) (tensor.Backend, error) {
	b, err := newBackend(index)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// newBackend opens device index: driver, primary context, stream, cuBLAS,
// allocator and the kernel index. On failure everything acquired is
// released.
func newBackend(index int) (_ *Backend, err error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	dev, err := deviceOf(drv, index)
	if err != nil {
		return nil, err
	}
	b := &Backend{index: index, drv: drv, dev: dev}
	var undo []func()
	defer func() {
		if err == nil {
			return
		}
		// Undo in reverse order, with the context current for the calls
		// that need it.
		if b.ctx != 0 {
			if unbind, e := drv.Bind(b.ctx); e == nil {
				defer unbind()
			}
		}
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}()
	if b.ctx, err = drv.PrimaryCtxRetain(dev); err != nil {
		return nil, wrapErr(err)
	}
	undo = append(undo, func() { _ = drv.PrimaryCtxRelease(dev) })
	unbind, err := drv.Bind(b.ctx)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer unbind()
	if b.stream, err = drv.StreamCreate(driver.StreamNonBlocking); err != nil {
		return nil, wrapErr(err)
	}
	undo = append(undo, func() { _ = drv.StreamDestroy(b.stream) })
	sms, err := drv.DeviceAttribute(dev, driver.AttrMultiprocessorCount)
	if err != nil {
		return nil, wrapErr(err)
	}
	b.maxBlocks = max(sms, 1) * blocksPerSM
	if b.blas, err = cublas.Load(driver.Opener(), dl.OSEnv()); err != nil {
		return nil, wrapErr(err)
	}
	if b.blasHandle, err = b.blas.Create(); err != nil {
		return nil, wrapErr(err)
	}
	undo = append(undo, func() { _ = b.blas.Destroy(b.blasHandle) })
	if err = b.blas.SetStream(b.blasHandle, uintptr(b.stream)); err != nil {
		return nil, wrapErr(err)
	}
	if err = b.blas.SetMathMode(b.blasHandle, cublas.DefaultMath); err != nil {
		return nil, wrapErr(err)
	}
	if b.entries, err = kernelIndex(); err != nil {
		return nil, fmt.Errorf("cuda: embedded kernels: %w", err)
	}
	b.modules = map[string]driver.Module{}
	b.funcs = map[string]driver.Function{}
	b.mem = alloc.New(memDevice{b}, alloc.Options{Reclaim: b.collect})
	b.pacer = alloc.NewPacer(gcFloor, defaultGCPercent, b.collect, func() int64 { return b.mem.Stats().Allocated })
	return b, nil
}

// Device-memory pacing (see alloc.Pacer): a collection runs whenever the
// bytes in use pass max(gcFloor, live × (1 + percent/100)); SetGCPercent
// changes the percentage.
const (
	gcFloor          = 256 << 20
	defaultGCPercent = 50
)

// collect runs the garbage collector so that unreachable tensors return
// their device blocks through their cleanups, and waits for the cleanup
// goroutine to run them: first for a sentinel cleanup queued by the same
// collection, then until frees stop arriving (bounded, as the runtime gives
// no completion signal).
func (b *Backend) collect() {
	done := make(chan struct{})
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(ch chan struct{}) { close(ch) }, done)
	sentinel = nil
	runtime.GC()
	select {
	case <-done:
	case <-time.After(50 * time.Millisecond):
	}
	frees := b.mem.Stats().Frees
	for range 50 {
		time.Sleep(100 * time.Microsecond)
		f := b.mem.Stats().Frees
		if f == frees {
			return
		}
		frees = f
	}
}

// memDevice is the allocator's view of the device.
type memDevice struct{ b *Backend }

// Malloc implements alloc.Device; out-of-memory errors wrap
// alloc.ErrOutOfMemory.
func (m memDevice) Malloc(bytes int) (uint64, error) {
	unbind, err := m.b.drv.Bind(m.b.ctx)
	if err != nil {
		return 0, err
	}
	defer unbind()
	p, err := m.b.drv.MemAlloc(bytes)
	if errors.Is(err, driver.ErrOutOfMemory) {
		return 0, fmt.Errorf("%w: %w", alloc.ErrOutOfMemory, err)
	}
	return p, err
}

// Free implements alloc.Device. The allocator frees only segments without
// live blocks, but kernels queued before the blocks were freed may still
// use them, so the stream is drained first.
func (m memDevice) Free(addr uint64) error {
	unbind, err := m.b.drv.Bind(m.b.ctx)
	if err != nil {
		return err
	}
	defer unbind()
	if err := m.b.drv.StreamSynchronize(m.b.stream); err != nil {
		return err
	}
	return m.b.drv.MemFree(addr)
}

// enter makes the backend's context current on a locked OS thread; the
// returned function undoes the lock. It panics if the context cannot be
// made current.
func (b *Backend) enter() func() {
	unbind, err := b.drv.Bind(b.ctx)
	if err != nil {
		panic(fmt.Sprintf("cuda: device %d: %v", b.index, err))
	}
	return unbind
}

// must panics with the CUDA error text of a failed call inside a contract
// method that cannot return an error.
func (b *Backend) must(err error) {
	if err != nil {
		panic(fmt.Sprintf("cuda: device %d: %v", b.index, err))
	}
}

// Device implements tensor.Backend.
func (b *Backend) Device() tensor.Device { return tensor.CUDA(b.index) }

// asBuffer returns buf as device memory of this package.
func asBuffer(buf tensor.Buffer) *buffer {
	cb, ok := buf.(*buffer)
	if !ok {
		panic(fmt.Sprintf("cuda: buffer of type %T is not CUDA device memory", buf))
	}
	return cb
}

// ptr returns the device address of element off of buf.
func (b *Backend) ptr(buf tensor.Buffer, off int) uint64 {
	cb := asBuffer(buf)
	return cb.ptr + uint64(off)*uint64(cb.dt.Size())
}

// newBuffer returns uninitialised device memory for n elements of dt. The
// block returns to the allocator when the buffer becomes unreachable.
func (b *Backend) newBuffer(dt tensor.DType, n int) *buffer {
	checkDType(dt)
	if n < 0 {
		panic(fmt.Sprintf("cuda: negative buffer length %d", n))
	}
	blk, err := b.mem.Alloc(n*dt.Size(), uint64(b.stream))
	if err != nil {
		panic(fmt.Sprintf("cuda: device %d: allocating %d %s elements: %v", b.index, n, dt, err))
	}
	buf := &buffer{dt: dt, n: n, ptr: blk.Addr(), owner: blk}
	mem := b.mem
	runtime.AddCleanup(buf, func(blk *alloc.Block) { mem.Free(blk) }, blk)
	b.pacer.Observe(mem.Stats().Allocated)
	return buf
}

// scratch returns temporary device memory, valid for work queued on the
// backend's stream until release (reuse is stream-ordered, so release may
// be called as soon as the work using it is queued).
func (b *Backend) scratch(bytes int) (addr uint64, release func()) {
	blk, err := b.mem.Alloc(bytes, uint64(b.stream))
	if err != nil {
		panic(fmt.Sprintf("cuda: device %d: allocating %d bytes of scratch: %v", b.index, bytes, err))
	}
	return blk.Addr(), func() { b.mem.Free(blk) }
}

// sync waits for the backend's stream; it panics with the CUDA error (for
// example of a kernel that faulted) on failure.
func (b *Backend) sync() {
	defer b.enter()()
	b.must(b.drv.StreamSynchronize(b.stream))
}

// launch runs kernel over n threads: a 1-d grid of 256-thread blocks,
// capped at blocksPerSM blocks per multiprocessor (kernels use grid-stride
// loops). n ≤ 0 launches nothing.
func (b *Backend) launch(kernel string, n int, args ...any) {
	if n <= 0 {
		return
	}
	blocks := min((n+threadsPerBlock-1)/threadsPerBlock, b.maxBlocks)
	b.launchGrid(kernel, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{threadsPerBlock, 1, 1}, 0, args...)
}

// launchGrid runs kernel with an explicit geometry on the backend's stream.
// A grid or block with a zero dimension launches nothing.
func (b *Backend) launchGrid(kernel string, grid, block [3]uint32, sharedBytes uint32, args ...any) {
	for i := range 3 {
		if grid[i] == 0 || block[i] == 0 {
			return
		}
	}
	f := b.function(kernel)
	defer b.enter()()
	if err := b.drv.LaunchKernel(f, grid, block, sharedBytes, b.stream, args...); err != nil {
		panic(fmt.Sprintf("cuda: device %d: launching %s (grid %v, block %v, %d shared bytes): %v", b.index, kernel, grid, block, sharedBytes, err))
	}
}

// function returns the kernel named name, JIT-loading its module on first
// use.
func (b *Backend) function(name string) driver.Function {
	b.kernelMu.Lock()
	defer b.kernelMu.Unlock()
	if f, ok := b.funcs[name]; ok {
		return f
	}
	file, ok := b.entries[name]
	if !ok {
		panic(fmt.Sprintf("cuda: kernel %q is not an entry of any embedded PTX module", name))
	}
	defer b.enter()()
	m, ok := b.modules[file]
	if !ok {
		src, err := ptxSource(file)
		b.must(err)
		m, err = b.drv.ModuleLoadData(src)
		if err != nil {
			panic(fmt.Sprintf("cuda: device %d: loading %s: %v", b.index, file, err))
		}
		b.modules[file] = m
	}
	f, err := b.drv.ModuleGetFunction(m, name)
	b.must(err)
	b.funcs[name] = f
	return f
}

// stagingBuffers returns the page-locked staging halves and their events,
// allocating them on first use. The caller holds stagingMu and a bound
// context.
func (b *Backend) stagingBuffers() ([2][]byte, [2]driver.Event) {
	if b.staging[0] == nil {
		for i := range b.staging {
			buf, err := b.drv.MemHostAlloc(stagingHalf)
			b.must(err)
			ev, err := b.drv.EventCreate(driver.EventDisableTiming)
			if err != nil {
				_ = b.drv.MemFreeHost(buf)
				b.must(err)
			}
			b.staging[i], b.stagingEv[i] = buf, ev
		}
	}
	return b.staging, b.stagingEv
}

// fromHostBytes copies src to device address addr, in order with the
// stream's earlier work; src may be reused when it returns.
func (b *Backend) fromHostBytes(addr uint64, src []byte) {
	if len(src) == 0 {
		return
	}
	defer b.enter()()
	if len(src) < pinnedThreshold {
		var pin runtime.Pinner
		pin.Pin(&src[0])
		defer pin.Unpin()
		b.must(b.drv.MemcpyHtoDAsync(addr, unsafe.Pointer(&src[0]), len(src), b.stream))
		// A pageable source may be read after the call returns; wait so
		// the caller may reuse it.
		b.must(b.drv.StreamSynchronize(b.stream))
		return
	}
	b.stagingMu.Lock()
	defer b.stagingMu.Unlock()
	stage, evs := b.stagingBuffers()
	for i, off := 0, 0; off < len(src); i, off = i+1, off+stagingHalf {
		h := i % 2
		n := min(stagingHalf, len(src)-off)
		b.must(b.drv.EventSynchronize(evs[h])) // the half's previous copy is done
		copy(stage[h], src[off:off+n])
		b.must(b.drv.MemcpyHtoDAsync(addr+uint64(off), unsafe.Pointer(&stage[h][0]), n, b.stream))
		b.must(b.drv.EventRecord(evs[h], b.stream))
	}
}

// toHostBytes copies len(dst) bytes from device address addr into dst once
// the stream's earlier work is done.
func (b *Backend) toHostBytes(addr uint64, dst []byte) {
	if len(dst) == 0 {
		b.sync()
		return
	}
	defer b.enter()()
	if len(dst) < pinnedThreshold {
		var pin runtime.Pinner
		pin.Pin(&dst[0])
		defer pin.Unpin()
		b.must(b.drv.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), addr, len(dst), b.stream))
		b.must(b.drv.StreamSynchronize(b.stream))
		return
	}
	b.stagingMu.Lock()
	defer b.stagingMu.Unlock()
	stage, evs := b.stagingBuffers()
	// Chunk i goes to half i%2; chunk i-1 is copied out while chunk i is
	// in flight.
	prevOff, prevN := -1, 0
	for i, off := 0, 0; off < len(dst); i, off = i+1, off+stagingHalf {
		h := i % 2
		n := min(stagingHalf, len(dst)-off)
		b.must(b.drv.MemcpyDtoHAsync(unsafe.Pointer(&stage[h][0]), addr+uint64(off), n, b.stream))
		b.must(b.drv.EventRecord(evs[h], b.stream))
		if prevOff >= 0 {
			ph := 1 - h
			b.must(b.drv.EventSynchronize(evs[ph]))
			copy(dst[prevOff:prevOff+prevN], stage[ph][:prevN])
		}
		prevOff, prevN = off, n
	}
	last := (len(dst)+stagingHalf-1)/stagingHalf - 1
	b.must(b.drv.EventSynchronize(evs[last%2]))
	copy(dst[prevOff:prevOff+prevN], stage[last%2][:prevN])
}

// hostBytes returns the bytes of a host slice of dt's Go type (uint16 bits
// for Float16 and BFloat16) and its length in elements.
func hostBytes(dt tensor.DType, data any) ([]byte, int) {
	checkDType(dt)
	bs := func(p unsafe.Pointer, n, size int) []byte {
		if n == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(p), n*size)
	}
	switch d := data.(type) {
	case []float32:
		if dt == tensor.Float32 {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 4), len(d)
		}
	case []float64:
		if dt == tensor.Float64 {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 8), len(d)
		}
	case []int64:
		if dt == tensor.Int64 {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 8), len(d)
		}
	case []int32:
		if dt == tensor.Int32 {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 4), len(d)
		}
	case []bool:
		if dt == tensor.Bool {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 1), len(d)
		}
	case []uint16:
		if dt == tensor.Float16 || dt == tensor.BFloat16 {
			return bs(unsafe.Pointer(unsafe.SliceData(d)), len(d), 2), len(d)
		}
	}
	panic(fmt.Sprintf("cuda: host data of type %T does not hold %s elements", data, dt))
}

// checkDType panics for the dtypes the device has no kernels for (the
// narrow and the unsigned integers), so that they fail where they enter the
// device rather than in some kernel picked by element size.
func checkDType(dt tensor.DType) {
	switch dt {
	case tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16, tensor.Uint32, tensor.Uint64:
		panic(fmt.Sprintf("cuda: dtype %s not supported on cuda; keep the tensor on the CPU or convert it with To first", dt))
	}
}

// makeHost returns a new host slice of n elements of dt's Go type.
func makeHost(dt tensor.DType, n int) any {
	switch dt {
	case tensor.Float32:
		return make([]float32, n)
	case tensor.Float64:
		return make([]float64, n)
	case tensor.Int64:
		return make([]int64, n)
	case tensor.Int32:
		return make([]int32, n)
	case tensor.Bool:
		return make([]bool, n)
	case tensor.Float16, tensor.BFloat16:
		return make([]uint16, n)
	}
	panic(fmt.Sprintf("cuda: unknown dtype %s", dt))
}

// Alloc implements tensor.Backend: n zeroed elements.
func (b *Backend) Alloc(dt tensor.DType, n int) tensor.Buffer {
	buf := b.newBuffer(dt, n)
	if bytes := n * dt.Size(); bytes > 0 {
		defer b.enter()()
		b.must(b.drv.MemsetD8Async(buf.ptr, 0, bytes, b.stream))
	}
	return buf
}

// FromHost implements tensor.Backend.
func (b *Backend) FromHost(dt tensor.DType, data any) tensor.Buffer {
	src, n := hostBytes(dt, data)
	buf := b.newBuffer(dt, n)
	b.fromHostBytes(buf.ptr, src)
	runtime.KeepAlive(data)
	return buf
}

// ToHost implements tensor.Backend. A contiguous view is copied directly;
// another view is first gathered into contiguous scratch memory by Copy.
func (b *Backend) ToHost(src tensor.Buffer, l tensor.Layout) any {
	dt := src.DType()
	n := 1
	for _, s := range l.Shape {
		n *= s
	}
	out := makeHost(dt, n)
	dst, _ := hostBytes(dt, out)
	if n == 0 {
		return out
	}
	if v := view(l); v.Rank == 0 || (v.Rank == 1 && v.Strides[0] == 1) {
		b.toHostBytes(b.ptr(src, l.Offset), dst)
		return out
	}
	addr, release := b.scratch(n * dt.Size())
	defer release()
	tmp := &buffer{dt: dt, n: n, ptr: addr}
	b.Copy(tmp, src, l)
	b.toHostBytes(addr, dst)
	return out
}

// view converts a tensor layout to the kernel argument: size-1 axes are
// dropped and neighbouring axes that step through memory as one are
// merged. It panics if more than maxRank axes remain. A layout with no
// elements becomes a rank-1 view of length 0.
func view(l tensor.Layout) strided {
	var v strided
	v.Offset = int64(l.Offset)
	var shape, strides []int64
	for i, s := range l.Shape {
		if s == 0 {
			v.Rank = 1
			return v
		}
		if s == 1 {
			continue
		}
		st := int64(l.Strides[i])
		if k := len(shape) - 1; k >= 0 && strides[k] == st*int64(s) {
			shape[k] *= int64(s)
			strides[k] = st
			continue
		}
		shape = append(shape, int64(s))
		strides = append(strides, st)
	}
	if len(shape) > maxRank {
		panic(fmt.Sprintf("cuda: a view of shape %v and strides %v has %d axes after merging; kernels take at most %d", l.Shape, l.Strides, len(shape), maxRank))
	}
	copy(v.Shape[:], shape)
	copy(v.Strides[:], strides)
	v.Rank = int32(len(shape))
	return v
}

// Kernel names of the integer matrix products (internal/kernels/core.cu).
const (
	kMatMulI64 = "matmul_i64"
	kMatMulI32 = "matmul_i32"
)

// uploadInt64s copies vs into scratch device memory.
func (b *Backend) uploadInt64s(vs []int64) (uint64, func()) {
	addr, release := b.scratch(8 * len(vs))
	b.fromHostBytes(addr, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), 8*len(vs)))
	return addr, release
}

// MatMul implements tensor.Backend. Float32 and Float64 run on cuBLAS (one
// GEMM, or a pointer-array batched GEMM for several products, with TF32
// tensor-core math for Float32 when SetAllowTF32 enabled it); Int64 and
// Int32 run a kernel of their own.
func (b *Backend) MatMul(dst, a, bb tensor.Buffer, p tensor.MatMulParams) {
	batch := len(p.AOffsets)
	if len(p.BOffsets) != batch {
		panic(fmt.Sprintf("cuda: MatMul with %d A offsets and %d B offsets", batch, len(p.BOffsets)))
	}
	dt := dst.DType()
	if a.DType() != dt || bb.DType() != dt {
		panic(fmt.Sprintf("cuda: MatMul of %s and %s into %s", a.DType(), bb.DType(), dt))
	}
	if batch == 0 || p.M == 0 || p.N == 0 {
		return
	}
	if p.K == 0 {
		defer b.enter()()
		b.must(b.drv.MemsetD8Async(b.ptr(dst, 0), 0, batch*p.M*p.N*dt.Size(), b.stream))
		return
	}
	switch dt {
	case tensor.Float32, tensor.Float64:
		b.gemm(dst, a, bb, p)
	case tensor.Int64, tensor.Int32:
		b.matmulInt(dst, a, bb, p)
	default:
		panic("cuda: MatMul on " + dt.String())
	}
}

// gemm runs a float product on cuBLAS through the row-major mapping.
func (b *Backend) gemm(dst, a, bb tensor.Buffer, p tensor.MatMulParams) {
	batch := len(p.AOffsets)
	dt := dst.DType()
	g := cublas.RowMajor(p.TransA, p.TransB, p.M, p.N, p.K, p.LDA, p.LDB)
	var arrays uint64
	if batch > 1 {
		// Pointer arrays: cuBLAS's first operand is the row-major B, its
		// second the row-major A.
		ptrs := make([]int64, 3*batch)
		mn := p.M * p.N
		for i := range batch {
			ptrs[i] = int64(b.ptr(bb, p.BOffsets[i]))
			ptrs[batch+i] = int64(b.ptr(a, p.AOffsets[i]))
			ptrs[2*batch+i] = int64(b.ptr(dst, i*mn))
		}
		addr, release := b.uploadInt64s(ptrs)
		defer release() // stream-ordered reuse: safe once the GEMM is queued
		arrays = addr
	}
	defer b.enter()()
	b.blasMu.Lock()
	defer b.blasMu.Unlock()
	tf32 := dt == tensor.Float32 && b.allowTF32
	if tf32 != b.blasTF32 {
		mode := cublas.DefaultMath
		if tf32 {
			mode = cublas.TF32TensorOpMath
		}
		b.must(b.blas.SetMathMode(b.blasHandle, mode))
		b.blasTF32 = tf32
	}
	h := b.blasHandle
	switch {
	case batch == 1 && dt == tensor.Float32:
		b.must(b.blas.Sgemm(h, g, 1, b.ptr(bb, p.BOffsets[0]), b.ptr(a, p.AOffsets[0]), 0, b.ptr(dst, 0)))
	case batch == 1:
		b.must(b.blas.Dgemm(h, g, 1, b.ptr(bb, p.BOffsets[0]), b.ptr(a, p.AOffsets[0]), 0, b.ptr(dst, 0)))
	case dt == tensor.Float32:
		b.must(b.blas.SgemmBatched(h, g, 1, arrays, arrays+8*uint64(batch), 0, arrays+16*uint64(batch), batch))
	default:
		b.must(b.blas.DgemmBatched(h, g, 1, arrays, arrays+8*uint64(batch), 0, arrays+16*uint64(batch), batch))
	}
}

// matmulInt runs the integer product kernel of core.cu.
func (b *Backend) matmulInt(dst, a, bb tensor.Buffer, p tensor.MatMulParams) {
	batch := len(p.AOffsets)
	offs := make([]int64, 2*batch)
	for i := range batch {
		offs[i] = int64(p.AOffsets[i])
		offs[batch+i] = int64(p.BOffsets[i])
	}
	addr, release := b.uploadInt64s(offs)
	defer release()
	kernel := kMatMulI64
	if dst.DType() == tensor.Int32 {
		kernel = kMatMulI32
	}
	const bx, by = 32, 8
	grid := [3]uint32{
		uint32(min((p.N+bx-1)/bx, 65535)),
		uint32(min((p.M+by-1)/by, 65535)),
		uint32(min(batch, 65535)),
	}
	b.launchGrid(kernel, grid, [3]uint32{bx, by, 1}, 0,
		b.ptr(dst, 0), b.ptr(a, 0), b.ptr(bb, 0), int64(batch), int64(p.M), int64(p.N), int64(p.K),
		int64(p.LDA), int64(p.LDB), p.TransA, p.TransB, addr, addr+8*uint64(batch))
}
