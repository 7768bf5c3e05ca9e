package tensor

import (
	"fmt"
	"math"

	"github.com/chewxy/math32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/emberml/ember/tensor/internal/cpu"
	"github.com/emberml/ember/tensor/internal/vec"
)

// cpuBuffer is host memory: data is a []float32, []float64, []int64, []int32,
// []int16, []int8, []uint8, []u16 (Uint16), []uint32, []uint64, []bool, or
// []uint16 (the bits of Float16 and BFloat16 elements).
type cpuBuffer struct {
	dtype DType
	data  any
}

// u16 is the element type of Uint16 buffers: a type of its own because
// []uint16 already holds the bits of Float16 and BFloat16 tensors.
type u16 uint16

func (b *cpuBuffer) DType() DType { return b.dtype }

func (b *cpuBuffer) Len() int {
	switch d := b.data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []int64:
		return len(d)
	case []int32:
		return len(d)
	case []int16:
		return len(d)
	case []u16:
		return len(d)
	case []uint32:
		return len(d)
	case []uint64:
		return len(d)
	case []int8:
		return len(d)
	case []uint8:
		return len(d)
	case []bool:
		return len(d)
	case []uint16:
		return len(d)
	}
	panic("tensor: bad cpu buffer")
}

// cpuBackend implements Backend on host memory with the kernels of
// tensor/internal/cpu.
type cpuBackend struct{}

func (cpuBackend) Device() Device { return CPU }

func makeHost(dt DType, n int) any {
	switch dt {
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	case Int64:
		return make([]int64, n)
	case Int32:
		return make([]int32, n)
	case Int16:
		return make([]int16, n)
	case Uint16:
		return make([]u16, n)
	case Uint32:
		return make([]uint32, n)
	case Uint64:
		return make([]uint64, n)
	case Int8:
		return make([]int8, n)
	case Uint8:
		return make([]uint8, n)
	case Bool:
		return make([]bool, n)
	case Float16, BFloat16:
		return make([]uint16, n)
	}
	panic(fmt.Sprintf("tensor: unknown dtype %d", dt))
}

func (cpuBackend) Alloc(dt DType, n int) Buffer {
	return &cpuBuffer{dtype: dt, data: makeHost(dt, n)}
}

func (c cpuBackend) FromHost(dt DType, data any) Buffer {
	b := c.Alloc(dt, hostLen(data)).(*cpuBuffer)
	switch d := b.data.(type) {
	case []float32:
		copy(d, data.([]float32))
	case []float64:
		copy(d, data.([]float64))
	case []int64:
		copy(d, data.([]int64))
	case []int32:
		copy(d, data.([]int32))
	case []int16:
		copy(d, data.([]int16))
	case []u16:
		copy(d, data.([]u16))
	case []uint32:
		copy(d, data.([]uint32))
	case []uint64:
		copy(d, data.([]uint64))
	case []int8:
		copy(d, data.([]int8))
	case []uint8:
		copy(d, data.([]uint8))
	case []bool:
		copy(d, data.([]bool))
	case []uint16:
		copy(d, data.([]uint16))
	}
	return b
}

func hostLen(data any) int {
	return (&cpuBuffer{data: data}).Len()
}

func (c cpuBackend) ToHost(src Buffer, l Layout) any {
	dst := c.Alloc(src.DType(), numel(l.Shape))
	c.Copy(dst, src, l)
	return dst.(*cpuBuffer).data
}

func (cpuBackend) Copy(dst, src Buffer, l Layout) {
	d, s := dst.(*cpuBuffer), src.(*cpuBuffer)
	if d.dtype == s.dtype {
		switch sd := s.data.(type) {
		case []float32:
			cpu.Copy(d.data.([]float32), sd, l.Shape, l.Strides, l.Offset)
		case []float64:
			cpu.Copy(d.data.([]float64), sd, l.Shape, l.Strides, l.Offset)
		case []int64:
			cpu.Copy(d.data.([]int64), sd, l.Shape, l.Strides, l.Offset)
		case []int32:
			cpu.Copy(d.data.([]int32), sd, l.Shape, l.Strides, l.Offset)
		case []int16:
			cpu.Copy(d.data.([]int16), sd, l.Shape, l.Strides, l.Offset)
		case []u16:
			cpu.Copy(d.data.([]u16), sd, l.Shape, l.Strides, l.Offset)
		case []uint32:
			cpu.Copy(d.data.([]uint32), sd, l.Shape, l.Strides, l.Offset)
		case []uint64:
			cpu.Copy(d.data.([]uint64), sd, l.Shape, l.Strides, l.Offset)
		case []int8:
			cpu.Copy(d.data.([]int8), sd, l.Shape, l.Strides, l.Offset)
		case []uint8:
			cpu.Copy(d.data.([]uint8), sd, l.Shape, l.Strides, l.Offset)
		case []bool:
			cpu.Copy(d.data.([]bool), sd, l.Shape, l.Strides, l.Offset)
		case []uint16:
			cpu.Copy(d.data.([]uint16), sd, l.Shape, l.Strides, l.Offset)
		}
		return
	}
	// Converting copy: go through float64 for floats and int64 for ints, so
	// every pair needs only a reader and a writer.
	castCopy(d, s, l)
}

// castCopy converts between dtypes with one rounding per element, as
// PyTorch's static_cast does: float→int truncates toward zero, int→int
// wraps, int64→float32 rounds directly (not through float64), anything→bool
// is "!= 0" (NaN is true), and float64→float16/bfloat16 goes through float32
// as c10::Half and c10::BFloat16 do. Float→uint8/int8/int16 truncates to
// int32 first and then wraps, which is what PyTorch computes on x86: -1.5
// becomes uint8 255 and 300.7 becomes 44, while NaN and values outside
// int32's range become 0. Uint16 follows the same rule. Float→uint32
// truncates to int64 first and then wraps, and float→uint64 is x86-64's
// unsigned conversion (see floatToUint64x86), as NumPy's element-wise casts
// compute them.
func castCopy(d, s *cpuBuffer, l Layout) {
	sh, st, off := l.Shape, l.Strides, l.Offset
	if sd, ok := s.data.([]uint64); ok && d.dtype.IsFloat() {
		castUint64ToFloat(d, sd, l)
		return
	}
	// Direct loops for the common float conversions.
	switch dd := d.data.(type) {
	case []float64:
		if sd, ok := s.data.([]float32); ok {
			cpu.Map(dd, sd, sh, st, off, func(v float32) float64 { return float64(v) })
			return
		}
		castInto(dd, s, l, func(v float64) float64 { return v }, func(v int64) float64 { return float64(v) })
	case []float32:
		switch sd := s.data.(type) {
		case []float64:
			cpu.Map(dd, sd, sh, st, off, func(v float64) float32 { return float32(v) })
			return
		case []int64:
			cpu.Map(dd, sd, sh, st, off, func(v int64) float32 { return float32(v) })
			return
		case []bool:
			if boolToF32Fast(dd, sd, l) {
				return
			}
		}
		castInto(dd, s, l, func(v float64) float32 { return float32(v) }, func(v int64) float32 { return float32(v) })
	case []int64:
		castInto(dd, s, l, floatToInt64x86, func(v int64) int64 { return v })
	case []int32:
		castInto(dd, s, l, floatToInt32x86, func(v int64) int32 { return int32(v) })
	case []int16:
		castInto(dd, s, l, func(v float64) int16 { return int16(floatToInt32x86(v)) }, func(v int64) int16 { return int16(v) })
	case []u16:
		castInto(dd, s, l, func(v float64) u16 { return u16(floatToInt32x86(v)) }, func(v int64) u16 { return u16(v) })
	case []uint32:
		castInto(dd, s, l, func(v float64) uint32 { return uint32(floatToInt64x86(v)) }, func(v int64) uint32 { return uint32(v) })
	case []uint64:
		castInto(dd, s, l, floatToUint64x86, func(v int64) uint64 { return uint64(v) })
	case []int8:
		castInto(dd, s, l, func(v float64) int8 { return int8(floatToInt32x86(v)) }, func(v int64) int8 { return int8(v) })
	case []uint8:
		castInto(dd, s, l, func(v float64) uint8 { return uint8(floatToInt32x86(v)) }, func(v int64) uint8 { return uint8(v) })
	case []bool:
		castInto(dd, s, l, func(v float64) bool { return v != 0 }, func(v int64) bool { return v != 0 })
	case []uint16:
		if d.dtype == Float16 {
			castInto(dd, s, l,
				func(v float64) uint16 { return Float16FromFloat32(float32(v)) },
				func(v int64) uint16 { return Float16FromFloat32(float32(v)) })
		} else {
			castInto(dd, s, l,
				func(v float64) uint16 { return BFloat16FromFloat32(float32(v)) },
				func(v int64) uint16 { return BFloat16FromFloat32(float32(v)) })
		}
	}
}

// floatToInt32x86 truncates v toward zero to int32 the way x86's cvttsd2si
// does: NaN and values outside int32's range give the "integer indefinite"
// math.MinInt32, whose low 8 and 16 bits are zero.
func floatToInt32x86(v float64) int32 {
	if !(v > math.MinInt32-1 && v < math.MaxInt32+1) {
		return math.MinInt32
	}
	return int32(v)
}

// floatToInt64x86 truncates v toward zero to int64 the way x86-64's
// cvttsd2si does: NaN and values outside int64's range give the "integer
// indefinite" math.MinInt64, whose low 32 bits are zero.
func floatToInt64x86(v float64) int64 {
	if !(v >= math.MinInt64 && v < math.MaxInt64) { // MaxInt64 rounds to 2^63
		return math.MinInt64
	}
	return int64(v)
}

// floatToUint64x86 converts v to uint64 the way C compilers do on x86-64:
// values from 2^63 up convert after subtracting 2^63, everything below
// through cvttsd2si. So -1.5 wraps to 2^64-1, values at or beyond 2^64
// give 0, and NaN and values below int64's range give 2^63.
func floatToUint64x86(v float64) uint64 {
	const two63 = 1 << 63
	if v >= two63 {
		return uint64(floatToInt64x86(v-two63)) ^ two63
	}
	return uint64(floatToInt64x86(v))
}

// castUint64ToFloat converts the view l of s into the float buffer d,
// rounding each value once: through int64 would make 2^63 and up negative.
func castUint64ToFloat(d *cpuBuffer, s []uint64, l Layout) {
	sh, st, off := l.Shape, l.Strides, l.Offset
	switch dd := d.data.(type) {
	case []float64:
		cpu.Map(dd, s, sh, st, off, func(v uint64) float64 { return float64(v) })
	case []float32:
		cpu.Map(dd, s, sh, st, off, func(v uint64) float32 { return float32(v) })
	case []uint16:
		half := Float16FromFloat32
		if d.dtype == BFloat16 {
			half = BFloat16FromFloat32
		}
		cpu.Map(dd, s, sh, st, off, func(v uint64) uint16 { return half(float32(v)) })
	}
}

// castInto gathers the view l of s into dst, converting float sources with
// fromF and integer and bool sources with fromI. Float32 and the 16-bit
// floats widen to float64 exactly, so fromF sees the exact value.
func castInto[D any](dst []D, s *cpuBuffer, l Layout, fromF func(float64) D, fromI func(int64) D) {
	sh, st, off := l.Shape, l.Strides, l.Offset
	switch sd := s.data.(type) {
	case []float32:
		cpu.Map(dst, sd, sh, st, off, func(v float32) D { return fromF(float64(v)) })
	case []float64:
		cpu.Map(dst, sd, sh, st, off, fromF)
	case []int64:
		cpu.Map(dst, sd, sh, st, off, fromI)
	case []int32:
		cpu.Map(dst, sd, sh, st, off, func(v int32) D { return fromI(int64(v)) })
	case []int16:
		cpu.Map(dst, sd, sh, st, off, func(v int16) D { return fromI(int64(v)) })
	case []u16:
		cpu.Map(dst, sd, sh, st, off, func(v u16) D { return fromI(int64(v)) })
	case []uint32:
		cpu.Map(dst, sd, sh, st, off, func(v uint32) D { return fromI(int64(v)) })
	case []uint64:
		// Keeps the bits, which is the wrap integer destinations want;
		// castCopy sends float destinations to castUint64ToFloat.
		cpu.Map(dst, sd, sh, st, off, func(v uint64) D { return fromI(int64(v)) })
	case []int8:
		cpu.Map(dst, sd, sh, st, off, func(v int8) D { return fromI(int64(v)) })
	case []uint8:
		cpu.Map(dst, sd, sh, st, off, func(v uint8) D { return fromI(int64(v)) })
	case []bool:
		one, zero := fromI(1), fromI(0)
		cpu.Map(dst, sd, sh, st, off, func(v bool) D {
			if v {
				return one
			}
			return zero
		})
	case []uint16:
		if s.dtype == Float16 {
			cpu.Map(dst, sd, sh, st, off, func(v uint16) D { return fromF(float64(Float16ToFloat32(v))) })
		} else {
			cpu.Map(dst, sd, sh, st, off, func(v uint16) D { return fromF(float64(BFloat16ToFloat32(v))) })
		}
	}
}

func (cpuBackend) Fill(dst Buffer, v float64) {
	d := dst.(*cpuBuffer)
	switch dd := d.data.(type) {
	case []float32:
		cpu.Fill(dd, float32(v))
	case []float64:
		cpu.Fill(dd, v)
	case []int64:
		cpu.Fill(dd, int64(v))
	case []int32:
		cpu.Fill(dd, int32(v))
	case []int16:
		cpu.Fill(dd, int16(floatToInt32x86(v)))
	case []u16:
		cpu.Fill(dd, u16(floatToInt32x86(v)))
	case []uint32:
		cpu.Fill(dd, uint32(floatToInt64x86(v)))
	case []uint64:
		cpu.Fill(dd, floatToUint64x86(v))
	case []int8:
		cpu.Fill(dd, int8(floatToInt32x86(v)))
	case []uint8:
		cpu.Fill(dd, uint8(floatToInt32x86(v)))
	case []bool:
		cpu.Fill(dd, v != 0)
	case []uint16:
		if d.dtype == Float16 {
			cpu.Fill(dd, Float16FromFloat32(float32(v)))
		} else {
			cpu.Fill(dd, BFloat16FromFloat32(float32(v)))
		}
	}
}

func (cpuBackend) Unary(op UnaryOp, dst, src Buffer, l Layout) {
	d, s := dst.(*cpuBuffer), src.(*cpuBuffer)
	switch sd := s.data.(type) {
	case []float32:
		if unaryF32Fast(op, d.data.([]float32), sd, l) {
			return
		}
		cpu.Map(d.data.([]float32), sd, l.Shape, l.Strides, l.Offset, unaryF32(op))
	case []float64:
		cpu.Map(d.data.([]float64), sd, l.Shape, l.Strides, l.Offset, unaryF64(op))
	case []int64:
		cpu.Map(d.data.([]int64), sd, l.Shape, l.Strides, l.Offset, unaryInt[int64](op))
	case []int32:
		cpu.Map(d.data.([]int32), sd, l.Shape, l.Strides, l.Offset, unaryInt[int32](op))
	case []int16:
		cpu.Map(d.data.([]int16), sd, l.Shape, l.Strides, l.Offset, unaryInt[int16](op))
	case []u16:
		cpu.Map(d.data.([]u16), sd, l.Shape, l.Strides, l.Offset, unaryInt[u16](op))
	case []uint32:
		cpu.Map(d.data.([]uint32), sd, l.Shape, l.Strides, l.Offset, unaryInt[uint32](op))
	case []uint64:
		cpu.Map(d.data.([]uint64), sd, l.Shape, l.Strides, l.Offset, unaryInt[uint64](op))
	case []int8:
		cpu.Map(d.data.([]int8), sd, l.Shape, l.Strides, l.Offset, unaryInt[int8](op))
	case []uint8:
		cpu.Map(d.data.([]uint8), sd, l.Shape, l.Strides, l.Offset, unaryInt[uint8](op))
	case []bool:
		if op.Kind != OpLogicalNot {
			panic(fmt.Sprintf("tensor: unary op %d is not defined for bool", op.Kind))
		}
		cpu.Map(d.data.([]bool), sd, l.Shape, l.Strides, l.Offset, func(v bool) bool { return !v })
	default:
		panic("tensor: unary op on a storage dtype; convert to Float32 first")
	}
}

func unaryF64(op UnaryOp) func(float64) float64 {
	a, b := op.A, op.B
	switch op.Kind {
	case OpNeg:
		return func(x float64) float64 { return -x }
	case OpAbs:
		return math.Abs
	case OpSign:
		return func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0 // zeros and NaN, as torch.sign
		}
	case OpExp:
		return math.Exp
	case OpLog:
		return math.Log
	case OpLog1p:
		return math.Log1p
	case OpExpm1:
		return math.Expm1
	case OpSqrt:
		return math.Sqrt
	case OpRsqrt:
		return func(x float64) float64 { return 1 / math.Sqrt(x) }
	case OpSin:
		return math.Sin
	case OpCos:
		return math.Cos
	case OpTanh:
		return math.Tanh
	case OpSigmoid:
		return func(x float64) float64 {
			if x >= 0 {
				return 1 / (1 + math.Exp(-x))
			}
			e := math.Exp(x)
			return e / (1 + e)
		}
	case OpRelu:
		return func(x float64) float64 {
			if x > 0 || x != x {
				return x
			}
			return 0
		}
	case OpFloor:
		return math.Floor
	case OpCeil:
		return math.Ceil
	case OpRound:
		return math.RoundToEven
	case OpClamp:
		return func(x float64) float64 {
			if x != x {
				return x
			}
			return math.Min(math.Max(x, a), b)
		}
	case OpPowScalar:
		return powScalarF64(a)
	case OpAffine:
		return func(x float64) float64 { return x*a + b }
	case OpRecip:
		return func(x float64) float64 { return 1 / x }
	case OpSquare:
		return func(x float64) float64 { return x * x }
	case OpErf:
		return math.Erf
	}
	panic(fmt.Sprintf("tensor: unary op %d is not defined for floats", op.Kind))
}

// powScalarF64 returns x**e, with the exponents PyTorch special-cases
// computed its way (so that, for example, (-Inf)**0.5 is NaN like sqrt).
func powScalarF64(e float64) func(float64) float64 {
	switch e {
	case 2:
		return func(x float64) float64 { return x * x }
	case 3:
		return func(x float64) float64 { return x * x * x }
	case 0.5:
		return math.Sqrt
	case -0.5:
		return func(x float64) float64 { return 1 / math.Sqrt(x) }
	case -1:
		return func(x float64) float64 { return 1 / x }
	case -2:
		return func(x float64) float64 { return 1 / (x * x) }
	}
	return func(x float64) float64 { return math.Pow(x, e) }
}

func unaryF32(op UnaryOp) func(float32) float32 {
	a, b := float32(op.A), float32(op.B)
	switch op.Kind {
	case OpNeg:
		return func(x float32) float32 { return -x }
	case OpAbs:
		return math32.Abs
	case OpExp:
		return cpu.Expf
	case OpLog:
		return vec.Logf
	case OpSqrt:
		return math32.Sqrt
	case OpRsqrt:
		return func(x float32) float32 { return 1 / math32.Sqrt(x) }
	case OpTanh:
		return math32.Tanh
	case OpSigmoid:
		return func(x float32) float32 {
			if x >= 0 {
				return 1 / (1 + cpu.Expf(-x))
			}
			e := cpu.Expf(x)
			return e / (1 + e)
		}
	case OpRelu:
		return func(x float32) float32 {
			if x > 0 || x != x {
				return x
			}
			return 0
		}
	case OpClamp:
		return func(x float32) float32 {
			if x != x {
				return x
			}
			return min(max(x, a), b)
		}
	case OpAffine:
		// Product rounded before the sum, as vec.Affine (arm64 would
		// otherwise fuse them).
		return func(x float32) float32 { return float32(x*a) + b }
	case OpRecip:
		return func(x float32) float32 { return 1 / x }
	case OpSquare:
		return func(x float32) float32 { return x * x }
	}
	// The rest compute in float64 and round once, which is what PyTorch's
	// correctly rounded float32 libm results look like.
	f := unaryF64(op)
	return func(x float32) float32 { return float32(f(float64(x))) }
}

// intElem is the set of integer element types; arithmetic on them wraps.
type intElem interface {
	int64 | int32 | int16 | int8 | uint8 | u16 | uint32 | uint64
}

func unaryInt[T intElem](op UnaryOp) func(T) T {
	switch op.Kind {
	case OpNeg:
		return func(x T) T { return -x }
	case OpAbs:
		return func(x T) T {
			if x < 0 { // never for uint8
				return -x
			}
			return x
		}
	case OpSign:
		return func(x T) T {
			one := T(1)
			switch {
			case x > 0:
				return one
			case x < 0: // never for uint8, hence -one rather than -1
				return -one
			}
			return 0
		}
	case OpRelu:
		return func(x T) T { return max(x, 0) }
	case OpFloor, OpCeil, OpRound:
		return func(x T) T { return x }
	case OpClamp:
		lo, hi := intBound[T](math.Ceil(op.A)), intBound[T](math.Floor(op.B))
		return func(x T) T { return min(max(x, lo), hi) }
	case OpAffine:
		// Through int64 so that a negative factor wraps for uint8 instead
		// of hitting Go's implementation-defined float→unsigned conversion.
		a, b := T(int64(op.A)), T(int64(op.B))
		return func(x T) T { return x*a + b }
	case OpSquare:
		return func(x T) T { return x * x }
	case OpPowScalar:
		return func(x T) T { return intPowBy(x, int64(op.A)) }
	}
	panic(fmt.Sprintf("tensor: unary op %d is not defined for integers", op.Kind))
}

// intBound converts a whole (or infinite) float bound to T, saturating at
// T's range so that ±Inf means "no bound".
func intBound[T intElem](v float64) T {
	lo, hi := intLimits[T]()
	switch {
	case v != v:
		panic("tensor: NaN bound for an integer op")
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	case v < 0:
		return T(int64(v))
	}
	return T(uint64(v)) // v is below hi, so it fits even for Uint64
}

// intLimits returns the smallest and largest values of T.
func intLimits[T intElem]() (lo, hi T) {
	var l, h int64
	switch any(T(0)).(type) {
	case int64:
		l, h = math.MinInt64, math.MaxInt64
	case int32:
		l, h = math.MinInt32, math.MaxInt32
	case int16:
		l, h = math.MinInt16, math.MaxInt16
	case int8:
		l, h = math.MinInt8, math.MaxInt8
	case uint8:
		h = math.MaxUint8
	case u16:
		h = math.MaxUint16
	case uint32:
		h = math.MaxUint32
	case uint64:
		var m uint64 = math.MaxUint64
		return 0, T(m)
	}
	return T(l), T(h)
}

// intPow returns x**e for an exponent of x's own type.
func intPow[T intElem](x, e T) T { return intPowBy(x, int64(e)) }

// intPowBy returns x**e by repeated squaring, with PyTorch's integer rule for
// negative exponents: 1 and -1 keep their magnitude, everything else is 0.
func intPowBy[T intElem](x T, e int64) T {
	if e < 0 {
		switch {
		case x == 1:
			return 1
		case x < 0 && x+1 == 0: // x == -1, written to compile for uint8
			if e%2 == 0 {
				return 1
			}
			return x
		}
		return 0
	}
	r := T(1)
	for e > 0 {
		if e&1 == 1 {
			r *= x
		}
		x *= x
		e >>= 1
	}
	return r
}

func (cpuBackend) Binary(op BinaryOp, dst, a Buffer, la Layout, b Buffer, lb Layout) {
	d, ab, bb := dst.(*cpuBuffer), a.(*cpuBuffer), b.(*cpuBuffer)
	shape := la.Shape
	switch ad := ab.data.(type) {
	case []float32:
		if dd, ok := d.data.([]float32); ok && binaryF32Fast(op, dd, shape, ad, la, bb.data.([]float32), lb) {
			return
		}
		if dd, ok := d.data.([]bool); ok && compareF32Fast(op, dd, shape, ad, la, bb.data.([]float32), lb) {
			return
		}
		binaryNum(op, d, shape, ad, la, bb.data.([]float32), lb, binF32(op))
	case []float64:
		binaryNum(op, d, shape, ad, la, bb.data.([]float64), lb, binF64(op))
	case []int64:
		binaryNum(op, d, shape, ad, la, bb.data.([]int64), lb, binInt[int64](op))
	case []int32:
		binaryNum(op, d, shape, ad, la, bb.data.([]int32), lb, binInt[int32](op))
	case []int16:
		binaryNum(op, d, shape, ad, la, bb.data.([]int16), lb, binInt[int16](op))
	case []u16:
		binaryNum(op, d, shape, ad, la, bb.data.([]u16), lb, binInt[u16](op))
	case []uint32:
		binaryNum(op, d, shape, ad, la, bb.data.([]uint32), lb, binInt[uint32](op))
	case []uint64:
		binaryNum(op, d, shape, ad, la, bb.data.([]uint64), lb, binInt[uint64](op))
	case []int8:
		binaryNum(op, d, shape, ad, la, bb.data.([]int8), lb, binInt[int8](op))
	case []uint8:
		binaryNum(op, d, shape, ad, la, bb.data.([]uint8), lb, binInt[uint8](op))
	case []bool:
		bd := bb.data.([]bool)
		var f func(x, y bool) bool
		switch op {
		case OpLogicalAnd, OpMul, OpMinimum:
			f = func(x, y bool) bool { return x && y }
		case OpLogicalOr, OpAdd, OpMaximum:
			f = func(x, y bool) bool { return x || y }
		case OpLogicalXor, OpNe:
			f = func(x, y bool) bool { return x != y }
		case OpEq:
			f = func(x, y bool) bool { return x == y }
		case OpLt:
			f = func(x, y bool) bool { return !x && y }
		case OpLe:
			f = func(x, y bool) bool { return !x || y }
		case OpGt:
			f = func(x, y bool) bool { return x && !y }
		case OpGe:
			f = func(x, y bool) bool { return x || !y }
		default:
			panic(fmt.Sprintf("tensor: binary op %d is not defined for bool", op))
		}
		cpu.Zip(d.data.([]bool), shape, ad, la.Strides, la.Offset, bd, lb.Strides, lb.Offset, f)
	default:
		panic("tensor: binary op on a storage dtype; convert to Float32 first")
	}
}

func binaryNum[T cpu.Number](op BinaryOp, d *cpuBuffer, shape []int, a []T, la Layout, b []T, lb Layout, f func(T, T) T) {
	if op.isComparison() || op.isLogical() {
		var c func(x, y T) bool
		switch op {
		case OpEq:
			c = func(x, y T) bool { return x == y }
		case OpNe:
			c = func(x, y T) bool { return x != y }
		case OpLt:
			c = func(x, y T) bool { return x < y }
		case OpLe:
			c = func(x, y T) bool { return x <= y }
		case OpGt:
			c = func(x, y T) bool { return x > y }
		case OpGe:
			c = func(x, y T) bool { return x >= y }
		case OpLogicalAnd:
			c = func(x, y T) bool { return x != 0 && y != 0 }
		case OpLogicalOr:
			c = func(x, y T) bool { return x != 0 || y != 0 }
		case OpLogicalXor:
			c = func(x, y T) bool { return (x != 0) != (y != 0) }
		}
		cpu.Zip(d.data.([]bool), shape, a, la.Strides, la.Offset, b, lb.Strides, lb.Offset, c)
		return
	}
	cpu.Zip(d.data.([]T), shape, a, la.Strides, la.Offset, b, lb.Strides, lb.Offset, f)
}

func binF64(op BinaryOp) func(x, y float64) float64 {
	switch op {
	case OpAdd:
		return func(x, y float64) float64 { return x + y }
	case OpSub:
		return func(x, y float64) float64 { return x - y }
	case OpMul:
		return func(x, y float64) float64 { return x * y }
	case OpDiv:
		return func(x, y float64) float64 { return x / y }
	case OpPow:
		return math.Pow
	case OpMaximum:
		return func(x, y float64) float64 {
			if x != x || y != y {
				return math.NaN()
			}
			return max(x, y)
		}
	case OpMinimum:
		return func(x, y float64) float64 {
			if x != x || y != y {
				return math.NaN()
			}
			return min(x, y)
		}
	}
	return nil
}

func binF32(op BinaryOp) func(x, y float32) float32 {
	switch op {
	case OpAdd:
		return func(x, y float32) float32 { return x + y }
	case OpSub:
		return func(x, y float32) float32 { return x - y }
	case OpMul:
		return func(x, y float32) float32 { return x * y }
	case OpDiv:
		return func(x, y float32) float32 { return x / y }
	case OpPow:
		return func(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }
	case OpMaximum:
		return func(x, y float32) float32 {
			if x != x || y != y {
				return math32.NaN()
			}
			return max(x, y)
		}
	case OpMinimum:
		return func(x, y float32) float32 {
			if x != x || y != y {
				return math32.NaN()
			}
			return min(x, y)
		}
	}
	return nil
}

func binInt[T intElem](op BinaryOp) func(x, y T) T {
	switch op {
	case OpAdd:
		return func(x, y T) T { return x + y }
	case OpSub:
		return func(x, y T) T { return x - y }
	case OpMul:
		return func(x, y T) T { return x * y }
	case OpDiv: // floor division; true division promotes to float first
		return func(x, y T) T {
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return q
		}
	case OpPow:
		return intPow[T]
	case OpMaximum:
		return func(x, y T) T { return max(x, y) }
	case OpMinimum:
		return func(x, y T) T { return min(x, y) }
	}
	return nil
}

func (cpuBackend) Where(dst, cond Buffer, lc Layout, a Buffer, la Layout, b Buffer, lb Layout) {
	d := dst.(*cpuBuffer)
	c := cond.(*cpuBuffer).data.([]bool)
	av, bv := a.(*cpuBuffer).data, b.(*cpuBuffer).data
	sh := lc.Shape
	switch dd := d.data.(type) {
	case []float32:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]float32), la.Strides, la.Offset, bv.([]float32), lb.Strides, lb.Offset)
	case []float64:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]float64), la.Strides, la.Offset, bv.([]float64), lb.Strides, lb.Offset)
	case []int64:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]int64), la.Strides, la.Offset, bv.([]int64), lb.Strides, lb.Offset)
	case []int32:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]int32), la.Strides, la.Offset, bv.([]int32), lb.Strides, lb.Offset)
	case []int16:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]int16), la.Strides, la.Offset, bv.([]int16), lb.Strides, lb.Offset)
	case []u16:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]u16), la.Strides, la.Offset, bv.([]u16), lb.Strides, lb.Offset)
	case []uint32:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]uint32), la.Strides, la.Offset, bv.([]uint32), lb.Strides, lb.Offset)
	case []uint64:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]uint64), la.Strides, la.Offset, bv.([]uint64), lb.Strides, lb.Offset)
	case []int8:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]int8), la.Strides, la.Offset, bv.([]int8), lb.Strides, lb.Offset)
	case []uint8:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]uint8), la.Strides, la.Offset, bv.([]uint8), lb.Strides, lb.Offset)
	case []bool:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]bool), la.Strides, la.Offset, bv.([]bool), lb.Strides, lb.Offset)
	case []uint16:
		cpu.Where(dd, sh, c, lc.Strides, lc.Offset, av.([]uint16), la.Strides, la.Offset, bv.([]uint16), lb.Strides, lb.Offset)
	}
}

func (cpuBackend) Reduce(op ReduceOp, dst, src Buffer, outer, n int) {
	o := cpu.ReduceOp(op)
	switch sd := src.(*cpuBuffer).data.(type) {
	case []float32:
		if reduceF32Fast(op, dst.(*cpuBuffer).data.([]float32), sd, outer, n) {
			return
		}
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]float32), sd, outer, n)
	case []float64:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]float64), sd, outer, n)
	case []int64:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]int64), sd, outer, n)
	case []int32:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]int32), sd, outer, n)
	case []int16:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]int16), sd, outer, n)
	case []u16:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]u16), sd, outer, n)
	case []uint32:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]uint32), sd, outer, n)
	case []uint64:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]uint64), sd, outer, n)
	case []int8:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]int8), sd, outer, n)
	case []uint8:
		cpu.Reduce(o, dst.(*cpuBuffer).data.([]uint8), sd, outer, n)
	default:
		panic("tensor: reduction on " + src.DType().String())
	}
}

func (cpuBackend) ArgReduce(max bool, dst, src Buffer, outer, n, inner int) {
	dd := dst.(*cpuBuffer).data.([]int64)
	switch sd := src.(*cpuBuffer).data.(type) {
	case []float32:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []float64:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []int64:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []int32:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []int16:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []u16:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []uint32:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []uint64:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []int8:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	case []uint8:
		cpu.ArgReduce(max, dd, sd, outer, n, inner)
	default:
		panic("tensor: argmax/argmin on " + src.DType().String())
	}
}

func (cpuBackend) Scan(prod bool, dst, src Buffer, outer, n, inner int) {
	switch sd := src.(*cpuBuffer).data.(type) {
	case []float32:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]float32), sd, outer, n, inner)
	case []float64:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]float64), sd, outer, n, inner)
	case []int64:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]int64), sd, outer, n, inner)
	case []int32:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]int32), sd, outer, n, inner)
	case []int16:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]int16), sd, outer, n, inner)
	case []u16:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]u16), sd, outer, n, inner)
	case []uint32:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]uint32), sd, outer, n, inner)
	case []uint64:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]uint64), sd, outer, n, inner)
	case []int8:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]int8), sd, outer, n, inner)
	case []uint8:
		cpu.Scan(prod, dst.(*cpuBuffer).data.([]uint8), sd, outer, n, inner)
	default:
		panic("tensor: cumulative op on " + src.DType().String())
	}
}

func (cpuBackend) MatMul(dst, a, b Buffer, p MatMulParams) {
	tA, tB := blas.NoTrans, blas.NoTrans
	ar, ac, br, bc := p.M, p.K, p.K, p.N
	if p.TransA {
		tA, ar, ac = blas.Trans, p.K, p.M
	}
	if p.TransB {
		tB, br, bc = blas.Trans, p.N, p.K
	}
	batch := len(p.AOffsets)
	mn := p.M * p.N
	switch dd := dst.(*cpuBuffer).data.(type) {
	case []float32:
		ad, bd := a.(*cpuBuffer).data.([]float32), b.(*cpuBuffer).data.([]float32)
		if p.K == 0 {
			break
		}
		sgemmBatch(p, ad, bd, dd)
	case []float64:
		ad, bd := a.(*cpuBuffer).data.([]float64), b.(*cpuBuffer).data.([]float64)
		for i := range batch {
			if p.K == 0 {
				continue
			}
			A := blas64.General{Rows: ar, Cols: ac, Stride: p.LDA, Data: ad[p.AOffsets[i]:]}
			B := blas64.General{Rows: br, Cols: bc, Stride: p.LDB, Data: bd[p.BOffsets[i]:]}
			C := blas64.General{Rows: p.M, Cols: p.N, Stride: max(p.N, 1), Data: dd[i*mn : (i+1)*mn]}
			blas64.Gemm(tA, tB, 1, A, B, 0, C)
		}
	case []int64:
		matmulInt(dd, a.(*cpuBuffer).data.([]int64), b.(*cpuBuffer).data.([]int64), p)
	case []int32:
		matmulInt(dd, a.(*cpuBuffer).data.([]int32), b.(*cpuBuffer).data.([]int32), p)
	case []int16:
		matmulInt(dd, a.(*cpuBuffer).data.([]int16), b.(*cpuBuffer).data.([]int16), p)
	case []u16:
		matmulInt(dd, a.(*cpuBuffer).data.([]u16), b.(*cpuBuffer).data.([]u16), p)
	case []uint32:
		matmulInt(dd, a.(*cpuBuffer).data.([]uint32), b.(*cpuBuffer).data.([]uint32), p)
	case []uint64:
		matmulInt(dd, a.(*cpuBuffer).data.([]uint64), b.(*cpuBuffer).data.([]uint64), p)
	case []int8:
		matmulInt(dd, a.(*cpuBuffer).data.([]int8), b.(*cpuBuffer).data.([]int8), p)
	case []uint8:
		matmulInt(dd, a.(*cpuBuffer).data.([]uint8), b.(*cpuBuffer).data.([]uint8), p)
	default:
		panic("tensor: matmul on " + dst.DType().String())
	}
}

// matmulInt multiplies integer matrices with wrapping arithmetic. Each row
// of the output accumulates scaled rows of B (i-k-j order), so the inner
// loop streams through contiguous memory when B is not transposed; a
// transposed B turns each output element into a contiguous dot product.
func matmulInt[T intElem](dst, a, b []T, p MatMulParams) {
	at := func(ao, i, k int) T {
		if p.TransA {
			return a[ao+k*p.LDA+i]
		}
		return a[ao+i*p.LDA+k]
	}
	for bi := range p.AOffsets {
		ao, bo := p.AOffsets[bi], p.BOffsets[bi]
		c := dst[bi*p.M*p.N : (bi+1)*p.M*p.N]
		for i := range p.M {
			row := c[i*p.N : (i+1)*p.N]
			if p.TransB {
				for j := range row {
					bj := b[bo+j*p.LDB : bo+j*p.LDB+p.K]
					var s T
					for k, y := range bj {
						s += at(ao, i, k) * y
					}
					row[j] = s
				}
				continue
			}
			clear(row)
			for k := range p.K {
				x := at(ao, i, k)
				if x == 0 {
					continue
				}
				bk := b[bo+k*p.LDB : bo+k*p.LDB+p.N]
				for j, y := range bk {
					row[j] += x * y
				}
			}
		}
	}
}
