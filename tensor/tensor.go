// Package tensor is Ember's n-dimensional array. Use it to create arrays
// (FromSlice, Zeros, Arange, a seeded Generator's Randn), compute with them
// (broadcasting arithmetic, reductions, MatMul, indexing, views), read and
// write NumPy .npy files (LoadNpy, SaveNpy), exchange them with gonum
// (FromDense, ToDense) and move them between devices (ToDevice). The
// runnable examples ExampleTensor_Add, ExampleTensor_MatMul,
// ExampleTensor_Slice and ExampleGenerator show the basics.
//
// A Tensor is a handle onto shared storage plus a layout (dtype, shape,
// strides, offset) and a device. View operations (Reshape, Permute, Slice,
// Expand, Select, ...) return new handles over the same storage; compute
// operations return new contiguous tensors. Operations accept
// non-contiguous inputs. Random numbers come only from an explicit
// *Generator: the package keeps no global random state. The one
// process-wide setting is SetNumThreads, the number of goroutines a large
// kernel may be split across (like GOMAXPROCS); it changes no result
// beyond the float rounding of matrix products.
//
// Mistakes in the program (mismatched shapes, bad axes, operands on
// different devices) panic with a message naming the op, the shapes and
// the rule broken, as Go slices and gonum/mat do. Data from outside
// (files, byte slices) is read through functions that return errors.
//
// # Devices
//
// The CPU backend is built in; other devices (the cuda package, behind its
// build tag) implement the Backend interface and register with
// RegisterBackend. A device that is not available is an error from
// ToDevice and BackendFor, never a crash.
//
// # Kernel-level API
//
// Besides the user API, the package exports the kernels that autograd, nn,
// optim and onnx build on; users seldom need them. They include the
// backward kernels (Conv2dBackwardInput, MaxPool2dBackward,
// LayerNormBackward, GRUSequenceBackward, SoftmaxBackward, ReluGrad, ...),
// fused optimizer updates (AdamUpdate, SGDUpdate, FusedSupported), packed
// convolution weights (PackConv2dWeight, Conv2dPacked, ConvGeom), the
// Philox counter-based generator (Philox4x32, PhiloxUniform), and
// buffer-level helpers (HostData, HostFloat32s, MarkWritten, AddInto,
// FromHostMemory). Prefer the autograd and nn forms of these operations,
// which record gradients and check their arguments for you.
package tensor

import (
	"fmt"
	"sync/atomic"

	"github.com/emberml/ember/tensor/internal/strided"
)

// storage is a buffer shared by every view of it, with the version counter
// that in-place writes bump so autograd can detect stale saved tensors.
type storage struct {
	buf     Buffer
	backend Backend
	version atomic.Uint64
}

// Tensor is an n-dimensional array of one dtype on one device. The zero value
// is not usable; make tensors with the constructors (Zeros, FromSlice, ...).
// A Tensor may be read by several goroutines at once; in-place writes
// (CopyFrom, Fill and the methods ending in InPlace) need the caller's
// synchronization, as with Go slices.
type Tensor struct {
	st      *storage
	dtype   DType
	shape   []int
	strides []int
	offset  int
}

func newTensor(b Backend, buf Buffer, shape []int) *Tensor {
	sh := append([]int(nil), shape...)
	return &Tensor{
		st:      &storage{buf: buf, backend: b},
		dtype:   buf.DType(),
		shape:   sh,
		strides: strided.Contiguous(sh),
	}
}

// empty allocates a contiguous zero-filled tensor on backend b.
func empty(b Backend, dt DType, shape []int) *Tensor {
	checkShape("tensor", shape)
	return newTensor(b, b.Alloc(dt, numel(shape)), shape)
}

func checkShape(op string, shape []int) {
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("tensor.%s: negative dimension in shape %v", op, shape))
		}
	}
}

func numel(shape []int) int { return strided.Numel(shape) }

// view returns a tensor sharing t's storage with a new layout.
func (t *Tensor) view(shape, strides []int, offset int) *Tensor {
	return &Tensor{st: t.st, dtype: t.dtype, shape: shape, strides: strides, offset: offset}
}

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Shape returns a copy of the dimensions.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() []int { return append([]int(nil), t.strides...) }

// Offset returns the position of the first element in the storage.
func (t *Tensor) Offset() int { return t.offset }

// Dim returns the number of dimensions (0 for a scalar).
func (t *Tensor) Dim() int { return len(t.shape) }

// Size returns the length of dimension axis (negative axes count from the end).
func (t *Tensor) Size(axis int) int { return t.shape[normAxis("Size", axis, len(t.shape))] }

// Numel returns the number of elements.
func (t *Tensor) Numel() int { return numel(t.shape) }

// Device returns where the storage lives.
func (t *Tensor) Device() Device { return t.st.backend.Device() }

// Backend returns the backend that owns t's storage.
func (t *Tensor) Backend() Backend { return t.st.backend }

// Buffer returns the storage buffer; with Layout it lets a backend run its own
// kernels on t.
func (t *Tensor) Buffer() Buffer { return t.st.buf }

// Layout returns t's view into its buffer.
func (t *Tensor) Layout() Layout {
	return Layout{Shape: t.shape, Strides: t.strides, Offset: t.offset}
}

// IsContiguous reports whether t is laid out densely in row-major order.
func (t *Tensor) IsContiguous() bool { return strided.IsContiguous(t.shape, t.strides) }

// Version returns the storage's write counter: every in-place write to any
// view of the storage increments it.
func (t *Tensor) Version() uint64 { return t.st.version.Load() }

// SharesStorage reports whether t and u are views of the same storage.
func (t *Tensor) SharesStorage(u *Tensor) bool { return t.st == u.st }

// bumpVersion records an in-place write.
func (t *Tensor) bumpVersion() { t.st.version.Add(1) }

// Contiguous returns t itself if it is contiguous and starts its storage
// densely, else a contiguous copy.
func (t *Tensor) Contiguous() *Tensor {
	if t.IsContiguous() {
		return t
	}
	return t.Clone()
}

// Clone returns a contiguous copy of t with its own storage.
func (t *Tensor) Clone() *Tensor {
	b := t.st.backend
	out := emptyOut(b, t.dtype, t.shape)
	b.Copy(out.st.buf, t.st.buf, t.Layout())
	return out
}

// To returns t converted to dtype dt (t itself if it already has it).
// Conversions follow PyTorch on x86 and never saturate: floats truncate
// toward zero, integers wrap modulo 2^bits into narrower integers, and
// floats reach Uint8, Int8, Int16 and Uint16 through int32 (so -1.5 gives
// uint8 255, 300.7 gives 44, and NaN or values beyond int32 give 0).
// Floats reach Uint32 through int64 the same way, and Uint64 as x86-64's
// unsigned conversion does (NumPy's element-wise casts on x86 agree).
func (t *Tensor) To(dt DType) *Tensor {
	if t.dtype == dt {
		return t
	}
	b := t.st.backend
	out := emptyOut(b, dt, t.shape)
	b.Copy(out.st.buf, t.st.buf, t.Layout())
	return out
}

// ToDevice copies t to device d (t itself if it is already there).
func (t *Tensor) ToDevice(d Device) (*Tensor, error) {
	if t.Device() == d {
		return t, nil
	}
	dst, err := BackendFor(d)
	if err != nil {
		return nil, err
	}
	host := t.st.backend.ToHost(t.st.buf, t.Layout())
	return newTensor(dst, dst.FromHost(t.dtype, host), t.shape), nil
}

// MoveStorageTo moves t's storage to device d in place: t and every other
// view of the same storage now live on d, with the same shape, strides and
// contents (copied through the host), and their version is bumped. It is
// how a model moves to a device without replacing its tensors, so that
// every reference to them (parameters held by optimizers, buffers held by
// layers) follows. Nothing may use the storage concurrently, and slices
// obtained earlier from HostData keep pointing at the old host memory. It
// does nothing if t is already on d.
func (t *Tensor) MoveStorageTo(d Device) error {
	if t.Device() == d {
		return nil
	}
	dst, err := BackendFor(d)
	if err != nil {
		return err
	}
	st := t.st
	n := st.buf.Len()
	host := st.backend.ToHost(st.buf, Layout{Shape: []int{n}, Strides: []int{1}})
	st.buf = dst.FromHost(st.buf.DType(), host)
	st.backend = dst
	st.version.Add(1)
	return nil
}

// normAxis maps a possibly negative axis into [0, n).
func normAxis(op string, axis, n int) int {
	a := axis
	if a < 0 {
		a += n
	}
	if a < 0 || a >= n {
		panic(fmt.Sprintf("tensor.%s: axis %d out of range for a %d-d tensor", op, axis, n))
	}
	return a
}

// sameShape reports whether two shapes are equal.
func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
