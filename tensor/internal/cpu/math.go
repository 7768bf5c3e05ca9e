package cpu

import "math"

// Expf returns e**x for float32, within one ulp of the correctly rounded
// result over the whole range, subnormal results and the overflow boundary
// included. It reduces x = k·ln2 + r in float64, evaluates a degree-8
// Taylor polynomial for e**r (|r| <= ln2/2, truncation error below 3e-10
// relative) and scales by 2**k, then rounds once to float32.
func Expf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 89: // e**89 > MaxFloat32
		return float32(math.Inf(1))
	case x < -104: // e**-104 < half the smallest subnormal
		return 0
	}
	const (
		log2e = 1.4426950408889634
		ln2hi = 6.93147180369123816490e-01
		ln2lo = 1.90821492927058770002e-10
	)
	xd := float64(x)
	k := math.Floor(xd*log2e + 0.5)
	r := xd - k*ln2hi - k*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320))))))))
	return float32(p * math.Float64frombits(uint64(int64(k)+1023)<<52))
}
