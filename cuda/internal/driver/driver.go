//go:build cuda

package driver

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/emberml/ember/internal/dl"
)

// Handles of driver objects.
type (
	// Device is a CUdevice.
	Device int32
	// Context is a CUcontext.
	Context uintptr
	// Stream is a CUstream; 0 is the legacy default stream.
	Stream uintptr
	// Module is a CUmodule.
	Module uintptr
	// Function is a CUfunction.
	Function uintptr
	// Event is a CUevent.
	Event uintptr
)

// Device attributes (CUdevice_attribute) used by the backend.
const (
	AttrMaxThreadsPerBlock  int32 = 1
	AttrMaxGridDimX         int32 = 5
	AttrMaxSharedPerBlock   int32 = 8
	AttrMultiprocessorCount int32 = 16
	AttrComputeCapMajor     int32 = 75
	AttrComputeCapMinor     int32 = 76
)

// Flags.
const (
	StreamNonBlocking       uint32 = 0x1 // CU_STREAM_NON_BLOCKING
	EventDisableTiming      uint32 = 0x2 // CU_EVENT_DISABLE_TIMING
	MemHostAllocPortable    uint32 = 0x1 // CU_MEMHOSTALLOC_PORTABLE
	jitErrorLogBuffer       int32  = 5   // CU_JIT_ERROR_LOG_BUFFER
	jitErrorLogBufferSize   int32  = 6   // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	jitErrorLogBufferLength        = 16 << 10
)

// Opener returns the dl.Opener that dlopens with RTLD_NOW|RTLD_GLOBAL, so
// libraries opened first satisfy the dependencies of those opened later.
func Opener() dl.Opener {
	return dl.OpenerFunc(func(path string) (uintptr, error) {
		return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	})
}

// Driver is libcuda.so.1 with its functions bound. It holds no state of
// its own beyond the bindings: it is safe for concurrent use, and loading
// it twice (dlopen is reference counted) is harmless.
type Driver struct {
	// Path is where libcuda was opened from.
	Path string

	cuInit                    func(flags uint32) Result
	cuDriverGetVersion        func(v *int32) Result
	cuDeviceGetCount          func(n *int32) Result
	cuDeviceGet               func(dev *Device, ordinal int32) Result
	cuDeviceGetName           func(name *byte, n int32, dev Device) Result
	cuDeviceTotalMem          func(bytes *uint64, dev Device) Result
	cuDeviceGetAttribute      func(v *int32, attr int32, dev Device) Result
	cuDevicePrimaryCtxRetain  func(ctx *Context, dev Device) Result
	cuDevicePrimaryCtxRelease func(dev Device) Result
	cuCtxSetCurrent           func(ctx Context) Result
	cuCtxSynchronize          func() Result
	cuMemAlloc                func(p *uint64, bytes uint64) Result
	cuMemFree                 func(p uint64) Result
	cuMemGetInfo              func(free, total *uint64) Result
	cuMemHostAlloc            func(p *unsafe.Pointer, bytes uint64, flags uint32) Result
	cuMemFreeHost             func(p unsafe.Pointer) Result
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uint64, s Stream) Result
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uint64, s Stream) Result
	cuMemcpyDtoDAsync         func(dst, src uint64, n uint64, s Stream) Result
	cuMemsetD8Async           func(dst uint64, v uint8, n uint64, s Stream) Result
	cuMemsetD32Async          func(dst uint64, v uint32, n uint64, s Stream) Result
	cuStreamCreate            func(s *Stream, flags uint32) Result
	cuStreamDestroy           func(s Stream) Result
	cuStreamSynchronize       func(s Stream) Result
	cuModuleLoadDataEx        func(m *Module, image unsafe.Pointer, nopts uint32, opts *int32, vals *uintptr) Result
	cuModuleUnload            func(m Module) Result
	cuModuleGetFunction       func(f *Function, m Module, name string) Result
	cuLaunchKernel            func(f Function, gx, gy, gz, bx, by, bz, shared uint32, s Stream, params *unsafe.Pointer, extra *unsafe.Pointer) Result
	cuGetErrorName            func(r Result, s **byte) Result
	cuGetErrorString          func(r Result, s **byte) Result
	cuEventCreate             func(e *Event, flags uint32) Result
	cuEventRecord             func(e Event, s Stream) Result
	cuEventSynchronize        func(e Event) Result
	cuEventElapsedTime        func(ms *float32, start, end Event) Result
	cuEventDestroy            func(e Event) Result
}

// symbol is one function to bind: the first of names the library exports.
type symbol struct {
	fptr  any
	names []string
}

func (d *Driver) symbols() []symbol {
	return []symbol{
		{&d.cuInit, []string{"cuInit"}},
		{&d.cuDriverGetVersion, []string{"cuDriverGetVersion"}},
		{&d.cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&d.cuDeviceGet, []string{"cuDeviceGet"}},
		{&d.cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&d.cuDeviceTotalMem, []string{"cuDeviceTotalMem_v2"}},
		{&d.cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&d.cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&d.cuDevicePrimaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&d.cuCtxSynchronize, []string{"cuCtxSynchronize"}},
		{&d.cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&d.cuMemFree, []string{"cuMemFree_v2"}},
		{&d.cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.cuMemHostAlloc, []string{"cuMemHostAlloc"}},
		{&d.cuMemFreeHost, []string{"cuMemFreeHost"}},
		{&d.cuMemcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&d.cuMemcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&d.cuMemcpyDtoDAsync, []string{"cuMemcpyDtoDAsync_v2"}},
		{&d.cuMemsetD8Async, []string{"cuMemsetD8Async"}},
		{&d.cuMemsetD32Async, []string{"cuMemsetD32Async"}},
		{&d.cuStreamCreate, []string{"cuStreamCreate"}},
		{&d.cuStreamDestroy, []string{"cuStreamDestroy_v2"}},
		{&d.cuStreamSynchronize, []string{"cuStreamSynchronize"}},
		{&d.cuModuleLoadDataEx, []string{"cuModuleLoadDataEx"}},
		{&d.cuModuleUnload, []string{"cuModuleUnload"}},
		{&d.cuModuleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.cuLaunchKernel, []string{"cuLaunchKernel"}},
		{&d.cuGetErrorName, []string{"cuGetErrorName"}},
		{&d.cuGetErrorString, []string{"cuGetErrorString"}},
		{&d.cuEventCreate, []string{"cuEventCreate"}},
		{&d.cuEventRecord, []string{"cuEventRecord"}},
		{&d.cuEventSynchronize, []string{"cuEventSynchronize"}},
		{&d.cuEventElapsedTime, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{&d.cuEventDestroy, []string{"cuEventDestroy_v2"}},
	}
}

// bindSymbols resolves every symbol with lookup and binds it; the error
// names every symbol missing.
func bindSymbols(syms []symbol, lookup func(name string) (uintptr, error)) error {
	var missing []string
	for _, s := range syms {
		var addr uintptr
		for _, n := range s.names {
			if a, err := lookup(n); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			missing = append(missing, strings.Join(s.names, "/"))
			continue
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing symbols %s", strings.Join(missing, ", "))
	}
	return nil
}

// Load opens libcuda.so.1 (searched as dl describes) and binds its
// functions. It never panics or exits: a missing library or symbol gives an
// error wrapping ErrNoDevice. It does not call cuInit.
func Load(env dl.Env) (*Driver, error) { return load(Opener(), env) }

func load(o dl.Opener, env dl.Env) (*Driver, error) {
	lib, err := dl.Open(o, env, dl.Spec{Name: "the CUDA driver (libcuda)", Sonames: []string{"libcuda.so.1", "libcuda.so"}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
	}
	d := &Driver{Path: lib.Path}
	if err := bindSymbols(d.symbols(), func(name string) (uintptr, error) { return purego.Dlsym(lib.Handle, name) }); err != nil {
		return nil, fmt.Errorf("%w: %s is too old for Ember: %w", ErrNoDevice, lib.Path, err)
	}
	return d, nil
}

// cString reads the NUL-terminated C string at p.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b.WriteByte(*(*byte)(q))
	}
	return b.String()
}

// check turns the result of call into an error (nil on success), naming the
// code and describing it with libcuda's own strings.
func (d *Driver) check(call string, r Result) error {
	if r == Success {
		return nil
	}
	e := newError(call, r)
	var s *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(r, &s) == Success && s != nil {
		e.Name = cString(s)
	}
	s = nil
	if d.cuGetErrorString != nil && d.cuGetErrorString(r, &s) == Success && s != nil {
		e.Message = cString(s)
	}
	return e
}

// Init calls cuInit(0).
func (d *Driver) Init() error { return d.check("cuInit", d.cuInit(0)) }

// Version returns the driver's CUDA version (1000*major + 10*minor).
func (d *Driver) Version() (int, error) {
	var v int32
	err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v))
	return int(v), err
}

// DeviceCount returns the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n))
	return int(n), err
}

// DeviceGet returns the device of an ordinal.
func (d *Driver) DeviceGet(ordinal int) (Device, error) {
	var dev Device
	err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal)))
	return dev, err
}

// DeviceName returns the device's product name.
func (d *Driver) DeviceName(dev Device) (string, error) {
	buf := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&buf[0], int32(len(buf)), dev)); err != nil {
		return "", err
	}
	if i := strings.IndexByte(string(buf), 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}

// DeviceTotalMem returns the device's memory size in bytes.
func (d *Driver) DeviceTotalMem(dev Device) (uint64, error) {
	var n uint64
	err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&n, dev))
	return n, err
}

// DeviceAttribute returns a device attribute (the Attr constants).
func (d *Driver) DeviceAttribute(dev Device, attr int32) (int, error) {
	var v int32
	err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, attr, dev))
	return int(v), err
}

// PrimaryCtxRetain retains the device's primary context.
func (d *Driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c Context
	err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c, dev))
	return c, err
}

// PrimaryCtxRelease releases a PrimaryCtxRetain.
func (d *Driver) PrimaryCtxRelease(dev Device) error {
	return d.check("cuDevicePrimaryCtxRelease", d.cuDevicePrimaryCtxRelease(dev))
}

// Bind locks the calling goroutine to its OS thread and makes ctx current
// there; unbind undoes the lock. A context is current per OS thread, so
// every sequence of calls needing one runs between Bind and unbind. Binds
// nest.
func (d *Driver) Bind(ctx Context) (unbind func(), err error) {
	runtime.LockOSThread()
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(ctx)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// CtxSynchronize waits for all work of the current context.
func (d *Driver) CtxSynchronize() error {
	return d.check("cuCtxSynchronize", d.cuCtxSynchronize())
}

// MemAlloc allocates device memory in the current context. Out-of-memory
// errors match errors.Is(err, ErrOutOfMemory).
func (d *Driver) MemAlloc(bytes int) (uint64, error) {
	var p uint64
	err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&p, uint64(bytes)))
	return p, err
}

// MemFree frees MemAlloc memory.
func (d *Driver) MemFree(p uint64) error { return d.check("cuMemFree_v2", d.cuMemFree(p)) }

// MemGetInfo returns the free and total memory of the current context's
// device.
func (d *Driver) MemGetInfo() (free, total uint64, err error) {
	err = d.check("cuMemGetInfo_v2", d.cuMemGetInfo(&free, &total))
	return free, total, err
}

// MemHostAlloc allocates page-locked host memory (C memory, not seen by
// the Go garbage collector) and returns it as a slice.
func (d *Driver) MemHostAlloc(bytes int) ([]byte, error) {
	var p unsafe.Pointer
	if err := d.check("cuMemHostAlloc", d.cuMemHostAlloc(&p, uint64(bytes), MemHostAllocPortable)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), bytes), nil
}

// MemFreeHost frees MemHostAlloc memory.
func (d *Driver) MemFreeHost(b []byte) error {
	return d.check("cuMemFreeHost", d.cuMemFreeHost(unsafe.Pointer(unsafe.SliceData(b))))
}

// MemcpyHtoDAsync enqueues a copy of n bytes from host memory src to dst.
// From pageable (Go) memory the driver returns once src has been staged, so
// src may be reused afterwards; from page-locked memory src must stay
// untouched until the stream reaches the copy.
func (d *Driver) MemcpyHtoDAsync(dst uint64, src unsafe.Pointer, n int, s Stream) error {
	return d.check("cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync(dst, src, uint64(n), s))
}

// MemcpyDtoHAsync enqueues a copy of n bytes from dst to host memory. Into
// pageable (Go) memory it returns only when the copy is done.
func (d *Driver) MemcpyDtoHAsync(dst unsafe.Pointer, src uint64, n int, s Stream) error {
	return d.check("cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync(dst, src, uint64(n), s))
}

// MemcpyDtoDAsync enqueues a device-to-device copy of n bytes.
func (d *Driver) MemcpyDtoDAsync(dst, src uint64, n int, s Stream) error {
	return d.check("cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync(dst, src, uint64(n), s))
}

// MemsetD8Async enqueues setting n bytes at dst to v.
func (d *Driver) MemsetD8Async(dst uint64, v uint8, n int, s Stream) error {
	return d.check("cuMemsetD8Async", d.cuMemsetD8Async(dst, v, uint64(n), s))
}

// MemsetD32Async enqueues setting n 32-bit words at dst (4-byte aligned)
// to v.
func (d *Driver) MemsetD32Async(dst uint64, v uint32, n int, s Stream) error {
	return d.check("cuMemsetD32Async", d.cuMemsetD32Async(dst, v, uint64(n), s))
}

// StreamCreate creates a stream (flags: StreamNonBlocking or 0).
func (d *Driver) StreamCreate(flags uint32) (Stream, error) {
	var s Stream
	err := d.check("cuStreamCreate", d.cuStreamCreate(&s, flags))
	return s, err
}

// StreamDestroy destroys a stream.
func (d *Driver) StreamDestroy(s Stream) error {
	return d.check("cuStreamDestroy_v2", d.cuStreamDestroy(s))
}

// StreamSynchronize waits for the work of a stream. Errors of kernels that
// faulted asynchronously surface here.
func (d *Driver) StreamSynchronize(s Stream) error {
	return d.check("cuStreamSynchronize", d.cuStreamSynchronize(s))
}

// ModuleLoadData JIT-compiles PTX (or loads a cubin) in the current
// context. A failed compilation's error carries the JIT error log.
func (d *Driver) ModuleLoadData(image []byte) (Module, error) {
	img := make([]byte, len(image)+1) // NUL-terminated copy
	copy(img, image)
	log := make([]byte, jitErrorLogBufferLength)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize}
	vals := []uintptr{uintptr(unsafe.Pointer(&log[0])), uintptr(len(log))}
	var pin runtime.Pinner
	pin.Pin(&img[0])
	pin.Pin(&log[0])
	pin.Pin(&opts[0])
	pin.Pin(&vals[0])
	defer pin.Unpin()
	var m Module
	r := d.cuModuleLoadDataEx(&m, unsafe.Pointer(&img[0]), uint32(len(opts)), &opts[0], &vals[0])
	if err := d.check("cuModuleLoadDataEx", r); err != nil {
		n := min(int(vals[1]), len(log))
		if i := strings.IndexByte(string(log[:n]), 0); i >= 0 {
			n = i
		}
		if msg := strings.TrimSpace(string(log[:n])); msg != "" {
			return 0, fmt.Errorf("%w\nJIT log:\n%s", err, msg)
		}
		return 0, err
	}
	return m, nil
}

// ModuleUnload unloads a module.
func (d *Driver) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", d.cuModuleUnload(m))
}

// ModuleGetFunction returns the kernel of a module by its entry name. An
// unknown name gives CUDA_ERROR_NOT_FOUND.
func (d *Driver) ModuleGetFunction(m Module, name string) (Function, error) {
	var f Function
	if err := d.check("cuModuleGetFunction", d.cuModuleGetFunction(&f, m, name)); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// LaunchKernel enqueues kernel f with the given geometry; args are packed
// as PackArgs describes and pinned for the call.
func (d *Driver) LaunchKernel(f Function, grid, block [3]uint32, shared uint32, s Stream, args ...any) error {
	ps, err := PackArgs(args...)
	if err != nil {
		return err
	}
	var pin runtime.Pinner
	ps.Pin(&pin)
	defer pin.Unpin()
	var params *unsafe.Pointer
	if len(ps.Ptrs) > 0 {
		params = &ps.Ptrs[0]
	}
	return d.check("cuLaunchKernel", d.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, s, params, nil))
}

// EventCreate creates an event (flags: EventDisableTiming or 0).
func (d *Driver) EventCreate(flags uint32) (Event, error) {
	var e Event
	err := d.check("cuEventCreate", d.cuEventCreate(&e, flags))
	return e, err
}

// EventRecord records e on stream s.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return d.check("cuEventRecord", d.cuEventRecord(e, s))
}

// EventSynchronize waits for e.
func (d *Driver) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", d.cuEventSynchronize(e))
}

// EventElapsedTime returns the milliseconds between two recorded events.
func (d *Driver) EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	err := d.check("cuEventElapsedTime", d.cuEventElapsedTime(&ms, start, end))
	return ms, err
}

// EventDestroy destroys an event.
func (d *Driver) EventDestroy(e Event) error {
	return d.check("cuEventDestroy_v2", d.cuEventDestroy(e))
}

// IsNoDevice reports whether err means that CUDA cannot be used here.
func IsNoDevice(err error) bool { return errors.Is(err, ErrNoDevice) }
