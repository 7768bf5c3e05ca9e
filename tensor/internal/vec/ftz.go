package vec

import "math"

// The optimizer kernels run with MXCSR.FTZ and DAZ set on amd64 (see
// Adam). The helpers below let their pure-Go twins compute the same bits
// on any machine: every operand is read through daz and every rounded
// result goes through the flush of its operation. The common case (a
// normal result) is one compare of the bits, small enough to inline.

const (
	// minNormal is the smallest normal float32, 2**-126.
	minNormal = 0x1p-126
	// minNormalBits are its bits, and absMask clears a float32's sign.
	minNormalBits = 0x00800000
	absMask       = 0x7fffffff
)

// signedZero returns ±0 with the sign of x.
func signedZero(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ absMask)
}

// daz reads x as an instruction with DAZ does: a subnormal is ±0.
func daz(x float32) float32 {
	if math.Float32bits(x)&absMask < minNormalBits {
		return signedZero(x)
	}
	return x
}

// ftzAdd is a+b under FTZ. A sum of normal operands below minNormal is
// exact, so it is tiny exactly when the float32 sum is below minNormal.
func ftzAdd(a, b float32) float32 {
	return daz(float32(a + b))
}

// ftzSub is a-b under FTZ, for the same reason as ftzAdd.
func ftzSub(a, b float32) float32 {
	return daz(float32(a - b))
}

// ftzMul is a*b under FTZ.
func ftzMul(a, b float32) float32 {
	if r := float32(a * b); math.Float32bits(r)&absMask > minNormalBits { // normal, infinite or NaN
		return r
	}
	return mulTiny(a, b)
}

// mulTiny is a*b under FTZ when its magnitude is at most minNormal; the float64
// product is exact. Kept out of line so that ftzMul inlines.
//
//go:noinline
func mulTiny(a, b float32) float32 {
	return flushTiny(float32(a*b), float64(a)*float64(b))
}

// ftzDiv is a/b under FTZ.
func ftzDiv(a, b float32) float32 {
	if r := float32(a / b); math.Float32bits(r)&absMask > minNormalBits {
		return r
	}
	return divTiny(a, b)
}

// divTiny is a/b under FTZ when its magnitude is at most minNormal. The float64
// quotient rounded again to 24 bits is the correctly rounded quotient
// (53 >= 2*24+2 bits), so it decides tininess as the exact one would.
// Kept out of line so that ftzDiv inlines.
//
//go:noinline
func divTiny(a, b float32) float32 {
	return flushTiny(float32(a/b), float64(a)/float64(b))
}

// flushTiny flushes r, a float32 rounding of x with gradual underflow no
// larger than minNormal in magnitude, as x86 FTZ does: to ±0 when x is
// tiny after rounding, that is when x rounded to 24 bits with an unbounded
// exponent is below minNormal. Only r = ±minNormal needs that second
// rounding: x may round (unbounded) to the largest float below minNormal.
func flushTiny(r float32, x float64) float32 {
	if math.Float32bits(r)&absMask < minNormalBits ||
		math.Abs(float64(float32(x*0x1p64))) < 0x1p-62 {
		return signedZero(r)
	}
	return r
}
