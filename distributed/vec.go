package distributed

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/emberml/ember/distributed/internal/reduce"
	"github.com/emberml/ember/tensor"
)

// ReduceOp selects how AllReduce, Reduce and ReduceScatter combine the
// ranks' values elementwise.
type ReduceOp int

// The reduction operations.
const (
	// Sum adds the values.
	Sum ReduceOp = iota
	// Avg adds the values and divides by the group size (floating dtypes
	// only).
	Avg
	// Max keeps the largest value (NaN wins, as in PyTorch).
	Max
	// Min keeps the smallest value (NaN wins).
	Min
	// Prod multiplies the values.
	Prod
)

// String returns the name of the operation.
func (o ReduceOp) String() string {
	switch o {
	case Sum:
		return "Sum"
	case Avg:
		return "Avg"
	case Max:
		return "Max"
	case Min:
		return "Min"
	case Prod:
		return "Prod"
	}
	return fmt.Sprintf("ReduceOp(%d)", int(o))
}

// number is the element types collectives move.
type number interface {
	~float32 | ~float64 | ~int32 | ~int64
}

// vec is a host copy of a tensor's elements: []float32, []float64, []int32
// or []int64.
type vec struct {
	dt   tensor.DType
	data any
}

// checkDType panics unless collectives support dt.
func checkDType(op string, t *tensor.Tensor) {
	if t == nil {
		panic(fmt.Sprintf("distributed.%s: nil tensor", op))
	}
	switch t.DType() {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64:
	default:
		panic(fmt.Sprintf("distributed.%s: dtype %s of tensor %v is not supported; use float32, float64, int32 or int64 (convert with To)", op, t.DType(), t.Shape()))
	}
}

// checkReduceOp panics on an unknown op or Avg of an integer tensor.
func checkReduceOp(op string, r ReduceOp, t *tensor.Tensor) {
	if r < Sum || r > Prod {
		panic(fmt.Sprintf("distributed.%s: unknown reduce op %d", op, int(r)))
	}
	if r == Avg && !t.DType().IsFloat() {
		panic(fmt.Sprintf("distributed.%s: Avg of a %s tensor %v: averaging needs a floating dtype; use Sum and divide", op, t.DType(), t.Shape()))
	}
}

// hostVec returns t's elements in row-major order as a vec. For a
// contiguous CPU tensor the vec is t's live storage (no copy): collectives
// that write into it change t, and store then only records the write.
// Other tensors are copied out.
func hostVec(t *tensor.Tensor) vec {
	if d, ok := tensor.HostData(t); ok {
		return vec{t.DType(), d}
	}
	switch t.DType() {
	case tensor.Float32:
		return vec{t.DType(), t.Float32s()}
	case tensor.Float64:
		return vec{t.DType(), t.Float64s()}
	case tensor.Int32:
		return vec{t.DType(), t.Int32s()}
	default:
		return vec{t.DType(), t.Int64s()}
	}
}

// newVec allocates a zeroed vec of n elements of dtype dt.
func newVec(dt tensor.DType, n int) vec {
	switch dt {
	case tensor.Float32:
		return vec{dt, make([]float32, n)}
	case tensor.Float64:
		return vec{dt, make([]float64, n)}
	case tensor.Int32:
		return vec{dt, make([]int32, n)}
	default:
		return vec{dt, make([]int64, n)}
	}
}

// store writes v into t in place, through t's view (so non-contiguous
// tensors are updated element by element), on t's device. When t is a
// contiguous CPU tensor the elements are copied straight into its storage,
// and when v already is that storage (hostVec's live view) only the write
// is recorded.
func (v vec) store(t *tensor.Tensor) {
	if d, ok := tensor.HostData(t); ok && t.DType() == v.dt {
		dst, src := sliceBytes(d), sliceBytes(v.data)
		if len(dst) > 0 && unsafe.SliceData(dst) != unsafe.SliceData(src) {
			copy(dst, src)
		}
		tensor.MarkWritten(t)
		return
	}
	shape := t.Shape()
	var src *tensor.Tensor
	switch d := v.data.(type) {
	case []float32:
		src = tensor.FromSlice(d, shape...)
	case []float64:
		src = tensor.FromSlice(d, shape...)
	case []int32:
		src = tensor.FromSlice(d, shape...)
	case []int64:
		src = tensor.FromSlice(d, shape...)
	}
	if dev := t.Device(); dev != tensor.CPU {
		var err error
		if src, err = src.ToDevice(dev); err != nil {
			panic(fmt.Sprintf("distributed: writing a result back to %s: %v", dev, err)) // t lives there, so its backend exists
		}
	}
	t.CopyFrom(src)
}

// len returns the number of elements.
func (v vec) len() int {
	switch d := v.data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []int32:
		return len(d)
	default:
		return len(d.([]int64))
	}
}

// elemSize returns the byte size of one element.
func (v vec) elemSize() int { return v.dt.Size() }

// nativeLittle reports whether this machine stores numbers little endian,
// the wire order: then element slices are sent and received as raw bytes.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rawBytes returns the memory of s as bytes.
func rawBytes[T number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// rawView returns b as a []T sharing its memory, or nil when b is not
// aligned for T or the machine is big endian.
func rawView[T number](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if !nativeLittle || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) != 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// sliceBytes returns the raw bytes of a typed slice.
func sliceBytes(s any) []byte {
	switch d := s.(type) {
	case []float32:
		return rawBytes(d)
	case []float64:
		return rawBytes(d)
	case []int32:
		return rawBytes(d)
	default:
		return rawBytes(s.([]int64))
	}
}

// encode returns the little-endian bytes of elements [lo, hi). On
// little-endian machines they share v's memory: v must not change until
// they are sent.
func (v vec) encode(lo, hi int) []byte {
	data := v.slice(lo, hi)
	if nativeLittle {
		return sliceBytes(data)
	}
	b, err := binary.Append(make([]byte, 0, (hi-lo)*v.elemSize()), binary.LittleEndian, data)
	if err != nil {
		panic("distributed: encode: " + err.Error()) // unreachable: fixed-size element slices
	}
	return b
}

// slice returns elements [lo, hi) as a slice sharing v's memory.
func (v vec) slice(lo, hi int) any {
	switch d := v.data.(type) {
	case []float32:
		return d[lo:hi]
	case []float64:
		return d[lo:hi]
	case []int32:
		return d[lo:hi]
	default:
		return v.data.([]int64)[lo:hi]
	}
}

// decode overwrites elements [lo, hi) with the little-endian bytes b, which
// must hold exactly that many elements.
func (v vec) decode(lo, hi int, b []byte) {
	data := v.slice(lo, hi)
	if nativeLittle {
		if dst := sliceBytes(data); len(dst) > 0 && unsafe.SliceData(dst) != unsafe.SliceData(b) {
			copy(dst, b) // else a sink already read b into place
		}
		return
	}
	if _, err := binary.Decode(b, binary.LittleEndian, data); err != nil {
		panic("distributed: decode: " + err.Error()) // callers check the length first
	}
}

// reduceBytes combines elements [lo, hi) with the little-endian values in
// b by op (Avg adds; the division happens once at the end).
func (v vec) reduceBytes(lo, hi int, b []byte, op ReduceOp) {
	switch d := v.data.(type) {
	case []float32:
		if s := rawView[float32](b); s != nil {
			reduceInto(d[lo:hi], s, op)
			return
		}
	case []float64:
		if s := rawView[float64](b); s != nil {
			reduceInto(d[lo:hi], s, op)
			return
		}
	case []int32:
		if s := rawView[int32](b); s != nil {
			reduceInto(d[lo:hi], s, op)
			return
		}
	case []int64:
		if s := rawView[int64](b); s != nil {
			reduceInto(d[lo:hi], s, op)
			return
		}
	}
	tmp := newVec(v.dt, hi-lo)
	tmp.decode(0, hi-lo, b)
	v.reduceVec(lo, hi, tmp, op)
}

// combine sets elements [lo, hi) of v to the little-endian values in b
// combined by op with all elements of o (b's first), divided by div when
// div > 1 (Avg's last step): one pass for float sums, the bits of
// decoding b, reducing o into it and dividing.
func (v vec) combine(lo, hi int, b []byte, o vec, op ReduceOp, div int) {
	if op == Sum || op == Avg {
		switch d := v.data.(type) {
		case []float32:
			if s := rawView[float32](b); s != nil {
				if div > 1 {
					reduce.MeanFloat32s(d[lo:hi], float32(div), s, o.data.([]float32))
				} else {
					reduce.SumFloat32s(d[lo:hi], s, o.data.([]float32))
				}
				return
			}
		case []float64:
			if s := rawView[float64](b); s != nil {
				if div > 1 {
					reduce.MeanFloat64s(d[lo:hi], float64(div), s, o.data.([]float64))
				} else {
					reduce.SumFloat64s(d[lo:hi], s, o.data.([]float64))
				}
				return
			}
		}
	}
	v.decode(lo, hi, b)
	v.reduceVec(lo, hi, o, op)
	if div > 1 {
		vec{v.dt, v.slice(lo, hi)}.divide(div)
	}
}

// reduceVec combines elements [lo, hi) of v with all elements of o.
func (v vec) reduceVec(lo, hi int, o vec, op ReduceOp) {
	switch d := v.data.(type) {
	case []float32:
		reduceInto(d[lo:hi], o.data.([]float32), op)
	case []float64:
		reduceInto(d[lo:hi], o.data.([]float64), op)
	case []int32:
		reduceInto(d[lo:hi], o.data.([]int32), op)
	case []int64:
		reduceInto(d[lo:hi], o.data.([]int64), op)
	}
}

// reduceInto combines dst with src elementwise. The loops run over blocks
// of 8 elements re-sliced to a constant length, so the compiler drops the
// bounds checks and keeps 8 independent operations in flight (it does not
// vectorise Go loops itself); floating-point sums use SSE2 on amd64
// (elementwise IEEE additions, so the results are the same bits).
func reduceInto[T number](dst, src []T, op ReduceOp) {
	src = src[:len(dst)]
	switch op {
	case Sum, Avg:
		switch d := any(dst).(type) {
		case []float32:
			reduce.AddFloat32s(d, any(src).([]float32))
		case []float64:
			reduce.AddFloat64s(d, any(src).([]float64))
		default:
			addInto(dst, src)
		}
	case Prod:
		mulInto(dst, src)
	case Max:
		maxInto(dst, src)
	case Min:
		minInto(dst, src)
	}
}

// addInto sets dst[i] += src[i] for i < len(dst); src has at least
// len(dst) elements.
func addInto[T number](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
		d[4] += s[4]
		d[5] += s[5]
		d[6] += s[6]
		d[7] += s[7]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// mulInto sets dst[i] *= src[i] for i < len(dst).
func mulInto[T number](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] *= s[0]
		d[1] *= s[1]
		d[2] *= s[2]
		d[3] *= s[3]
		d[4] *= s[4]
		d[5] *= s[5]
		d[6] *= s[6]
		d[7] *= s[7]
	}
	for ; i < len(dst); i++ {
		dst[i] *= src[i]
	}
}

// maxInto sets dst[i] = max(dst[i], src[i]) for i < len(dst) (NaN wins,
// as in the builtin max).
func maxInto[T number](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] = max(d[0], s[0])
		d[1] = max(d[1], s[1])
		d[2] = max(d[2], s[2])
		d[3] = max(d[3], s[3])
		d[4] = max(d[4], s[4])
		d[5] = max(d[5], s[5])
		d[6] = max(d[6], s[6])
		d[7] = max(d[7], s[7])
	}
	for ; i < len(dst); i++ {
		dst[i] = max(dst[i], src[i])
	}
}

// minInto sets dst[i] = min(dst[i], src[i]) for i < len(dst) (NaN wins).
func minInto[T number](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] = min(d[0], s[0])
		d[1] = min(d[1], s[1])
		d[2] = min(d[2], s[2])
		d[3] = min(d[3], s[3])
		d[4] = min(d[4], s[4])
		d[5] = min(d[5], s[5])
		d[6] = min(d[6], s[6])
		d[7] = min(d[7], s[7])
	}
	for ; i < len(dst); i++ {
		dst[i] = min(dst[i], src[i])
	}
}

// divide divides every element by n (Avg's final step; floats only): not
// at all for n = 1, else with the SIMD division kernels, whose quotients
// are correctly rounded like the scalar ones.
func (v vec) divide(n int) {
	if n == 1 {
		return
	}
	switch d := v.data.(type) {
	case []float32:
		reduce.DivFloat32s(d, float32(n))
	case []float64:
		reduce.DivFloat64s(d, float64(n))
	}
}

// clone returns a copy of v.
func (v vec) clone() vec {
	c := newVec(v.dt, v.len())
	switch d := c.data.(type) {
	case []float32:
		copy(d, v.data.([]float32))
	case []float64:
		copy(d, v.data.([]float64))
	case []int32:
		copy(d, v.data.([]int32))
	case []int64:
		copy(d, v.data.([]int64))
	}
	return c
}
