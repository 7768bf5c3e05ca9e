package tensor

import (
	"fmt"
	"math"
)

// DType is the element type of a tensor.
type DType uint8

// The element types. Float16 and BFloat16 are storage types: they convert on
// load and store, and compute ops ask for a conversion to Float32 first.
// Uint8, Int8, Int16, Uint16, Uint32 and Uint64 are full integer types
// whose arithmetic wraps, as PyTorch's and NumPy's does; they come after the
// others so that the older values keep their numbers.
const (
	Float32 DType = iota
	Float64
	Int64
	Int32
	Bool
	Float16
	BFloat16
	Uint8
	Int8
	Int16
	Uint16
	Uint32
	Uint64
)

var dtypeNames = [...]string{"float32", "float64", "int64", "int32", "bool", "float16", "bfloat16", "uint8", "int8", "int16", "uint16", "uint32", "uint64"}
var dtypeSizes = [...]int{4, 8, 8, 4, 1, 2, 2, 1, 1, 2, 2, 4, 8}

// String returns PyTorch's name for the dtype ("float32", "int64", ...).
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", d)
}

// Size returns the number of bytes one element occupies.
func (d DType) Size() int { return dtypeSizes[d] }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// IsInt reports whether d is an integer type.
func (d DType) IsInt() bool {
	switch d {
	case Int64, Int32, Uint8, Int8, Int16, Uint16, Uint32, Uint64:
		return true
	}
	return false
}

// accumDType is the dtype sums, products and cumulative ops over d compute
// in: Uint64 for Uint32 and Uint64 (NumPy's rule, so that no unsigned sum
// turns negative), Int64 for bool and the other integers (PyTorch's rule),
// and d itself for floats.
func accumDType(d DType) DType {
	switch {
	case d == Uint32 || d == Uint64:
		return Uint64
	case d == Bool || d.IsInt():
		return Int64
	}
	return d
}

// ParseDType returns the dtype named s (PyTorch spelling, e.g. "float32").
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if n == s {
			return DType(i), nil
		}
	}
	return 0, fmt.Errorf("tensor: unknown dtype %q", s)
}

// computeDType is the dtype ops compute in for a tensor of dtype d: storage
// dtypes compute in Float32.
func computeDType(d DType) DType {
	if d == Float16 || d == BFloat16 {
		return Float32
	}
	return d
}

// promoteRank orders dtypes for type promotion, as PyTorch does for tensors of
// the same category: bool < uint8, int8 < int16 < uint16 < int32 < uint32 <
// int64 < uint64 < float16/bfloat16 < float32 < float64.
var promoteRank = [...]int{
	Bool: 0, Uint8: 1, Int8: 1, Int16: 2, Uint16: 3, Int32: 4, Uint32: 5, Int64: 6, Uint64: 7,
	Float16: 8, BFloat16: 9, Float32: 10, Float64: 11,
}

// PromoteTypes returns the dtype a binary op on a and b computes in. Two
// integer types give the smallest integer type holding both ranges, as
// NumPy's promote_types does: uint32 with a signed integer gives Int64, and
// uint64 with a signed integer, which no integer type holds, gives Float64.
// An integer with a float gives the float, as PyTorch promotes.
func PromoteTypes(a, b DType) DType {
	if a == b {
		return a
	}
	if (a == Float16 && b == BFloat16) || (a == BFloat16 && b == Float16) {
		return Float32
	}
	if (a == Uint8 && b == Int8) || (a == Int8 && b == Uint8) {
		return Int16 // the smallest type holding both ranges
	}
	if (a == Uint16 && (b == Int8 || b == Int16)) || (b == Uint16 && (a == Int8 || a == Int16)) {
		return Int32 // likewise, as NumPy promotes
	}
	if (a == Uint32 && isSignedInt(b)) || (b == Uint32 && isSignedInt(a)) {
		return Int64
	}
	if (a == Uint64 && isSignedInt(b)) || (b == Uint64 && isSignedInt(a)) {
		return Float64
	}
	if promoteRank[a] >= promoteRank[b] {
		return a
	}
	return b
}

// isSignedInt reports whether d is a signed integer type.
func isSignedInt(d DType) bool {
	switch d {
	case Int64, Int32, Int16, Int8:
		return true
	}
	return false
}

// Float16FromFloat32 rounds f to the nearest IEEE 754 half-precision value
// (ties to even) and returns its bits.
func Float16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp == 0 && mant == 0:
		return sign
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or underflow to zero).
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which rounds up correctly
	}
	return sign | uint16(half)
}

// Float16ToFloat32 converts half-precision bits to float32 exactly.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384 // mant * 2^-24
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// BFloat16FromFloat32 rounds f to the nearest bfloat16 (ties to even).
func BFloat16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it quiet
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 converts bfloat16 bits to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
