package tensor

import (
	byteorder "encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// Element is the set of Go types a tensor can be built from or read into.
type Element interface {
	float32 | float64 | int64 | int32 | int16 | int8 | uint8 | uint16 | uint32 | uint64 | bool
}

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case int16:
		return Int16
	case int8:
		return Int8
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case bool:
		return Bool
	}
	panic("tensor: unsupported element type")
}

// FromSlice returns a CPU tensor of the given shape holding a copy of data
// in row-major order; the dtype follows T. With no shape, the tensor is 1-d.
func FromSlice[T Element](data []T, shape ...int) *Tensor {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFill("FromSlice", len(data), shape)
	dt := dtypeOf[T]()
	b := cpuBackend{}
	host := any(slices.Clone(data))
	if v, ok := host.([]uint16); ok {
		host = u16s(v) // see u16
	}
	return newTensor(b, &cpuBuffer{dtype: dt, data: host}, shape)
}

// checkFill panics unless shape is valid and holds exactly n elements.
func checkFill(op string, n int, shape []int) {
	checkShape(op, shape)
	if numel(shape) != n {
		panic(fmt.Sprintf("tensor.%s: %d values do not fill shape %v (%d elements)", op, n, shape, numel(shape)))
	}
}

// FromHalfBits returns a Float16 or BFloat16 CPU tensor from raw 16-bit
// patterns.
func FromHalfBits(dt DType, bits []uint16, shape ...int) *Tensor {
	if dt != Float16 && dt != BFloat16 {
		panic("tensor.FromHalfBits: dtype must be Float16 or BFloat16, got " + dt.String())
	}
	if numel(shape) != len(bits) {
		panic(fmt.Sprintf("tensor.FromHalfBits: %d values do not fill shape %v", len(bits), shape))
	}
	return newTensor(cpuBackend{}, &cpuBuffer{dtype: dt, data: slices.Clone(bits)}, shape)
}

// Scalar returns a 0-d Float32 tensor holding v.
func Scalar(v float64) *Tensor { return Full(nil, v, Float32) }

// ScalarOf returns a 0-d tensor of dtype dt holding v.
func ScalarOf(v float64, dt DType) *Tensor { return Full(nil, v, dt) }

// Zeros returns a zero-filled CPU tensor (Float32 unless a dtype is given).
func Zeros(shape []int, dt ...DType) *Tensor {
	return empty(cpuBackend{}, pickDType(dt), shape)
}

// Ones returns a CPU tensor filled with ones.
func Ones(shape []int, dt ...DType) *Tensor { return Full(shape, 1, dt...) }

// Full returns a CPU tensor filled with v.
func Full(shape []int, v float64, dt ...DType) *Tensor {
	t := Zeros(shape, dt...)
	if v != 0 {
		t.st.backend.Fill(t.st.buf, v)
	}
	return t
}

// ZerosOn returns a zero-filled tensor of dtype dt on device d, allocated
// there directly (nothing is copied from the host). It panics if d's backend
// cannot be opened (see BackendFor); the device of an existing tensor
// always can, so ZerosOn(x.Device(), ...) is how an op makes a buffer that
// follows its input.
func ZerosOn(d Device, shape []int, dt DType) *Tensor {
	return empty(mustBackend("ZerosOn", d), dt, shape)
}

// OnesOn returns a tensor of ones of dtype dt on device d (see ZerosOn).
func OnesOn(d Device, shape []int, dt DType) *Tensor { return FullOn(d, shape, 1, dt) }

// FullOn returns a tensor of dtype dt filled with v on device d, filled
// there (see ZerosOn).
func FullOn(d Device, shape []int, v float64, dt DType) *Tensor {
	t := ZerosOn(d, shape, dt)
	if v != 0 {
		t.st.backend.Fill(t.st.buf, v)
	}
	return t
}

// mustBackend opens d's backend for op or panics naming the device.
func mustBackend(op string, d Device) Backend {
	b, err := BackendFor(d)
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v", op, err))
	}
	return b
}

// ToDeviceOf returns t on u's device: t itself if it is already there, else
// a copy (through the host, see ToDevice). It is for small helper tensors
// built on the host (index lists, masks, random draws) that must meet u in
// an op; it panics only if u's backend has gone away, which a backend
// never does.
func (t *Tensor) ToDeviceOf(u *Tensor) *Tensor {
	if t.Device() == u.Device() {
		return t
	}
	moved, err := t.ToDevice(u.Device())
	if err != nil {
		panic(fmt.Sprintf("tensor.ToDeviceOf: %v", err))
	}
	return moved
}

// ZerosLike returns zeros with t's shape, dtype and device.
func ZerosLike(t *Tensor) *Tensor { return empty(t.st.backend, t.dtype, t.shape) }

// OnesLike returns ones with t's shape, dtype and device.
func OnesLike(t *Tensor) *Tensor { return FullLike(t, 1) }

// FullLike returns a tensor filled with v with t's shape, dtype and device.
func FullLike(t *Tensor, v float64) *Tensor {
	out := ZerosLike(t)
	if v != 0 {
		out.st.backend.Fill(out.st.buf, v)
	}
	return out
}

// scalarOn returns a 0-d tensor of dtype dt on backend b holding v.
func scalarOn(b Backend, v float64, dt DType) *Tensor {
	out := empty(b, dt, nil)
	if v != 0 {
		b.Fill(out.st.buf, v)
	}
	return out
}

// scalarLike returns a 0-d tensor of t's dtype and device holding v.
func scalarLike(t *Tensor, v float64) *Tensor {
	out := empty(t.st.backend, t.dtype, nil)
	out.st.backend.Fill(out.st.buf, v)
	return out
}

func pickDType(dt []DType) DType {
	if len(dt) > 0 {
		return dt[0]
	}
	return Float32
}

// Arange returns the 1-d tensor [start, start+step, ...) up to but not
// including end. The dtype is Int64 when all arguments are whole numbers
// and no dtype is given, else Float32, as in PyTorch.
func Arange(start, end, step float64, dt ...DType) *Tensor {
	if step == 0 || math.IsNaN(start+end+step) || math.IsInf(start, 0) || math.IsInf(end, 0) || math.IsInf(step, 0) {
		panic(fmt.Sprintf("tensor.Arange: bad range start=%v end=%v step=%v", start, end, step))
	}
	if (end-start)*step < 0 {
		panic(fmt.Sprintf("tensor.Arange: step %v moves away from end (start=%v end=%v)", step, start, end))
	}
	n := int(math.Ceil((end - start) / step))
	d := Float32
	if len(dt) > 0 {
		d = dt[0]
	} else if start == math.Trunc(start) && end == math.Trunc(end) && step == math.Trunc(step) {
		d = Int64
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = start + float64(i)*step
	}
	return FromSlice(vals).To(d)
}

// Linspace returns n evenly spaced Float32 values from start to end inclusive.
func Linspace(start, end float64, n int, dt ...DType) *Tensor {
	if n < 0 {
		panic(fmt.Sprintf("tensor.Linspace: negative count %d", n))
	}
	vals := make([]float64, n)
	step := 0.0
	if n > 1 {
		step = (end - start) / float64(n-1)
	}
	// Fill from both ends, as PyTorch does, so the last value is exactly end
	// (a single value is start).
	for i := range vals {
		if n == 1 {
			vals[i] = start
			break
		}
		// The conversions round each product before the sum: without
		// them arm64 fuses the two into one multiply-add, and the middle
		// of Linspace(-2, 2, 4001) is -4e-17 instead of PyTorch's 0.
		if i < n/2 {
			vals[i] = start + float64(step*float64(i))
		} else {
			vals[i] = end - float64(step*float64(n-1-i))
		}
	}
	return FromSlice(vals).To(pickDType(dt))
}

// Eye returns the n×m identity matrix (m defaults to n).
func Eye(n int, m ...int) *Tensor {
	cols := n
	if len(m) > 0 {
		cols = m[0]
	}
	vals := make([]float32, n*cols)
	for i := range min(n, cols) {
		vals[i*cols+i] = 1
	}
	return FromSlice(vals, n, cols)
}

// Float32s returns a copy of t's elements in row-major order as float32,
// converting from t's dtype.
func (t *Tensor) Float32s() []float32 { return t.To(Float32).host().([]float32) }

// Float64s returns a copy of t's elements in row-major order as float64.
func (t *Tensor) Float64s() []float64 { return t.To(Float64).host().([]float64) }

// Int64s returns a copy of t's elements in row-major order as int64
// (floats truncate toward zero).
func (t *Tensor) Int64s() []int64 { return t.To(Int64).host().([]int64) }

// Int32s returns a copy of t's elements in row-major order as int32.
func (t *Tensor) Int32s() []int32 { return t.To(Int32).host().([]int32) }

// Int16s returns a copy of t's elements in row-major order as int16
// (conversions wrap; see To).
func (t *Tensor) Int16s() []int16 { return t.To(Int16).host().([]int16) }

// Int8s returns a copy of t's elements in row-major order as int8
// (conversions wrap; see To).
func (t *Tensor) Int8s() []int8 { return t.To(Int8).host().([]int8) }

// Uint8s returns a copy of t's elements in row-major order as uint8
// (conversions wrap; see To).
func (t *Tensor) Uint8s() []uint8 { return t.To(Uint8).host().([]uint8) }

// Uint16s returns a copy of t's elements in row-major order as uint16
// (conversions wrap; see To).
func (t *Tensor) Uint16s() []uint16 {
	v := t.To(Uint16).host().([]u16)
	return unsafe.Slice((*uint16)(unsafe.SliceData(v)), len(v))
}

// Uint32s returns a copy of t's elements in row-major order as uint32
// (conversions wrap; see To).
func (t *Tensor) Uint32s() []uint32 { return t.To(Uint32).host().([]uint32) }

// Uint64s returns a copy of t's elements in row-major order as uint64
// (conversions wrap; see To).
func (t *Tensor) Uint64s() []uint64 { return t.To(Uint64).host().([]uint64) }

// u16s views v as Uint16 elements, sharing its memory.
func u16s(v []uint16) []u16 { return unsafe.Slice((*u16)(unsafe.SliceData(v)), len(v)) }

// Bools returns a copy of t's elements in row-major order as bool (non-zero
// is true).
func (t *Tensor) Bools() []bool { return t.To(Bool).host().([]bool) }

// HalfBits returns the raw 16-bit patterns of a Float16 or BFloat16 tensor.
func (t *Tensor) HalfBits() []uint16 {
	if t.dtype != Float16 && t.dtype != BFloat16 {
		panic("tensor.HalfBits: dtype is " + t.dtype.String())
	}
	return t.host().([]uint16)
}

// host copies t's view to a new host slice of t's dtype.
func (t *Tensor) host() any { return t.st.backend.ToHost(t.st.buf, t.Layout()) }

// Item returns the single element of a one-element tensor as float64.
func (t *Tensor) Item() float64 {
	if t.Numel() != 1 {
		panic(fmt.Sprintf("tensor.Item: tensor of shape %v has %d elements, want 1", t.shape, t.Numel()))
	}
	return t.Float64s()[0]
}

// At returns the element at the given index as float64.
func (t *Tensor) At(idx ...int) float64 {
	v := t
	for _, i := range idx {
		v = v.Select(0, i)
	}
	return v.Item()
}

// FromLittleEndian returns a CPU tensor of dtype dt and the given shape
// whose elements are decoded from data, laid out as LittleEndianBytes writes
// them (.npy data, safetensors, ONNX raw_data): row-major, little-endian,
// Float16 and BFloat16 as their 16 bits, Bool as one byte (any non-zero byte
// is true). data must hold exactly the elements of shape; the tensor does not
// keep a reference to it.
func FromLittleEndian(dt DType, data []byte, shape ...int) (*Tensor, error) {
	if int(dt) >= len(dtypeSizes) {
		return nil, fmt.Errorf("tensor.FromLittleEndian: unknown dtype %d", dt)
	}
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("tensor.FromLittleEndian: negative dimension in shape %v", shape)
		}
		if d == 0 {
			n = 0
		}
	}
	for _, d := range shape {
		if n == 0 {
			break
		}
		if n > len(data)/d {
			// Also guards n*Size() against overflow: n never exceeds len(data).
			return nil, fmt.Errorf("tensor.FromLittleEndian: shape %v of %s needs more than the %d bytes given", shape, dt, len(data))
		}
		n *= d
	}
	if want := n * dt.Size(); len(data) != want {
		return nil, fmt.Errorf("tensor.FromLittleEndian: shape %v of %s needs %d bytes, got %d", shape, dt, want, len(data))
	}
	host := makeHostUninit(dt, n)
	dst := host
	if u, ok := host.([]u16); ok {
		// encoding/binary decodes only the predeclared element types quickly.
		dst = unsafe.Slice((*uint16)(unsafe.SliceData(u)), len(u))
	}
	if _, err := byteorder.Decode(data, byteorder.LittleEndian, dst); err != nil {
		return nil, fmt.Errorf("tensor.FromLittleEndian: %w", err)
	}
	return newTensor(cpuBackend{}, &cpuBuffer{dtype: dt, data: host}, append([]int{}, shape...)), nil
}

// LittleEndianBytes returns a copy of t's elements in row-major order as
// little-endian bytes, the layout of .npy data, safetensors and ONNX
// raw_data: Float16 and BFloat16 as their 16 bits, Bool as one byte (0 or
// 1), Uint8 and Int8 as one byte each.
func (t *Tensor) LittleEndianBytes() []byte {
	b, err := byteorder.Append(nil, byteorder.LittleEndian, t.host())
	if err != nil {
		// Every dtype's host slice has fixed-size elements.
		panic(fmt.Sprintf("tensor.LittleEndianBytes: dtype %s: %v", t.dtype, err))
	}
	return b
}
