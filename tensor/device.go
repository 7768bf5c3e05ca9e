package tensor

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Device names where a tensor's storage lives: "cpu", "cuda:0", ...
type Device string

// CPU is the host device; every build has it.
const CPU Device = "cpu"

// CUDA returns the name of the i-th CUDA device.
func CUDA(i int) Device { return Device("cuda:" + strconv.Itoa(i)) }

// Kind returns the device kind, the part before the colon ("cpu", "cuda").
func (d Device) Kind() string {
	k, _, _ := strings.Cut(string(d), ":")
	return k
}

// Index returns the device ordinal, the part after the colon (0 if absent).
func (d Device) Index() int {
	_, s, ok := strings.Cut(string(d), ":")
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return i
}

// Buffer is a block of device memory holding Len elements of one dtype.
type Buffer interface {
	DType() DType
	Len() int
}

// Layout is a strided view into a buffer: element (i0, i1, ...) lives at
// Offset + i0*Strides[0] + i1*Strides[1] + ....
type Layout struct {
	Shape   []int
	Strides []int
	Offset  int
}

// UnaryOp names an elementwise function of one tensor. Some take scalar
// arguments (Clamp: A=min, B=max; PowScalar: A=exponent; Affine: x*A+B).
type UnaryOp struct {
	Kind UnaryKind
	A, B float64
}

// UnaryKind enumerates the elementwise functions of one operand.
type UnaryKind uint8

// The unary kernels every backend implements.
const (
	OpNeg UnaryKind = iota
	OpAbs
	OpSign
	OpExp
	OpLog
	OpLog1p
	OpExpm1
	OpSqrt
	OpRsqrt
	OpSin
	OpCos
	OpTanh
	OpSigmoid
	OpRelu
	OpFloor
	OpCeil
	OpRound
	OpClamp
	OpPowScalar
	OpAffine
	OpLogicalNot
	OpRecip
	OpSquare
	OpErf
)

// floatOnly reports whether the unary kind is defined only for floats (ints
// are promoted to Float32 first, as in PyTorch).
func (k UnaryKind) floatOnly() bool {
	switch k {
	case OpExp, OpLog, OpLog1p, OpExpm1, OpSqrt, OpRsqrt, OpSin, OpCos, OpTanh, OpSigmoid, OpRecip, OpErf:
		return true
	}
	return false
}

// BinaryOp names an elementwise function of two tensors.
type BinaryOp uint8

// The binary kernels every backend implements. Comparisons produce Bool.
const (
	OpAdd BinaryOp = iota
	OpSub
	OpMul
	OpDiv
	OpPow
	OpMaximum
	OpMinimum
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpLogicalAnd
	OpLogicalOr
	OpLogicalXor
)

func (op BinaryOp) isComparison() bool { return op >= OpEq && op <= OpGe }
func (op BinaryOp) isLogical() bool    { return op >= OpLogicalAnd }

// ReduceOp names a reduction over the last axis of a [outer, n] block.
type ReduceOp uint8

// The reductions every backend implements.
const (
	ReduceSum ReduceOp = iota
	ReduceProd
	ReduceMax
	ReduceMin
)

// MatMulParams describes a batched matrix product dst[b] = A[b] @ B[b] with
// dst contiguous [batch, m, n]. A[b] starts at AOffsets[b] and is m×k with row
// stride LDA (or, if TransA, k×m stored transposed); likewise B.
type MatMulParams struct {
	M, N, K            int
	TransA, TransB     bool
	LDA, LDB           int
	AOffsets, BOffsets []int
}

// Backend is the contract a device implements. Every method works on buffers
// it allocated; outputs are always contiguous and inputs are strided views.
// Composite ops in this package are built from these primitives, so a new
// device implements this interface and nothing else.
type Backend interface {
	// Device returns the device the backend allocates on.
	Device() Device
	// Alloc returns a zero-filled buffer of n elements.
	Alloc(dt DType, n int) Buffer
	// FromHost copies a host slice ([]float32, []float64, []int64, []int32,
	// []bool, or []uint16 bits for Float16/BFloat16) into a new buffer.
	FromHost(dt DType, data any) Buffer
	// ToHost copies the view l of src into a new contiguous host slice.
	ToHost(src Buffer, l Layout) any
	// Copy gathers the view l of src into dst, converting dtype if they differ.
	Copy(dst, src Buffer, l Layout)
	// Assign writes the view sl of src into the view dl of dst (same shape,
	// same dtype): the strided store behind in-place operations.
	Assign(dst Buffer, dl Layout, src Buffer, sl Layout)
	// Fill sets every element of dst to v.
	Fill(dst Buffer, v float64)
	// Unary applies op to the view l of src.
	Unary(op UnaryOp, dst, src Buffer, l Layout)
	// Binary applies op to views a and b that are broadcast to dst's shape;
	// a and b share one dtype, dst has it too, or Bool for comparisons.
	Binary(op BinaryOp, dst, a Buffer, la Layout, b Buffer, lb Layout)
	// Where selects a where cond is true, else b, all broadcast to dst's shape.
	Where(dst, cond Buffer, lc Layout, a Buffer, la Layout, b Buffer, lb Layout)
	// Reduce reduces each row of the contiguous [outer, n] src into dst[row].
	Reduce(op ReduceOp, dst, src Buffer, outer, n int)
	// ArgReduce writes int64 indices of the max (or min) along the middle
	// axis of the contiguous [outer, n, inner] src.
	ArgReduce(max bool, dst, src Buffer, outer, n, inner int)
	// Scan writes the running sum (or product) along the middle axis of the
	// contiguous [outer, n, inner] src.
	Scan(prod bool, dst, src Buffer, outer, n, inner int)
	// MatMul computes the batched product described by p.
	MatMul(dst, a, b Buffer, p MatMulParams)

	// IndexKernels gathers and scatters along axes.
	IndexKernels
	// NNKernels are the convolution, pooling and normalization primitives.
	NNKernels
	// FusedKernels are the in-place fused optimizer updates.
	FusedKernels
}

// BackendFactory opens the backend for one device ordinal.
type BackendFactory func(index int) (Backend, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]BackendFactory{}
	opened     = map[Device]Backend{}
)

// RegisterBackend makes a device kind available to OnDevice. Backends call it
// from an init function; registering a kind twice panics.
func RegisterBackend(kind string, f BackendFactory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[kind]; dup || kind == "cpu" {
		panic("tensor: RegisterBackend called twice for " + kind)
	}
	registry[kind] = f
}

// BackendFor returns the backend of device d, opening it on first use. A
// device whose backend is not compiled in (for example "cuda" without the
// cuda build tag) or that is absent at run time gives an error.
func BackendFor(d Device) (Backend, error) {
	if d == CPU || d == "" {
		return cpuBackend{}, nil
	}
	registryMu.RLock()
	b, ok := opened[d]
	f, known := registry[d.Kind()]
	registryMu.RUnlock()
	if ok {
		return b, nil
	}
	if !known {
		kinds := []string{"cpu"}
		registryMu.RLock()
		for k := range registry {
			kinds = append(kinds, k)
		}
		registryMu.RUnlock()
		sort.Strings(kinds)
		if d.Kind() == "cuda" {
			return nil, fmt.Errorf("tensor: no backend for device %q in this build (compiled-in kinds: %v): build with -tags cuda and import github.com/emberml/ember/cuda", d, kinds)
		}
		return nil, fmt.Errorf("tensor: no backend for device %q in this build (compiled-in kinds: %v)", d, kinds)
	}
	b, err := f(d.Index())
	if err != nil {
		return nil, fmt.Errorf("tensor: open %s: %w", d, err)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if prev, ok := opened[d]; ok {
		return prev, nil
	}
	opened[d] = b
	return b, nil
}
