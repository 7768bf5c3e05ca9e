package vec

import (
	"math"

	"github.com/chewxy/math32"
)

// The pure-Go twins of the assembly kernels. Lengths are checked by the
// exported wrappers; the reslicing below lets the compiler drop bounds checks.

func addGo(dst, a, b []float32) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v + b[i]
	}
}

func subGo(dst, a, b []float32) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v - b[i]
	}
}

func mulGo(dst, a, b []float32) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v * b[i]
	}
}

func divGo(dst, a, b []float32) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v / b[i]
	}
}

func addConstGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v + c
	}
}

func subConstGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v - c
	}
}

func mulConstGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v * c
	}
}

func divConstGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = v / c
	}
}

func constSubGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = c - v
	}
}

func constDivGo(dst, a []float32, c float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = c / v
	}
}

// reluGradGo sets d[i] = g[i] where out[i] > 0 and 0 elsewhere, without
// branches on the (unpredictable) sign: out's bit pattern read as an
// integer lies in [1, +Inf's pattern] exactly when 0 < out <= +Inf, and
// that test becomes an all-ones or all-zeros mask on g's bits.
func reluGradGo(d, g, out []float32) {
	g, out = g[:len(d)], out[:len(d)]
	for i := range d {
		ob := math.Float32bits(out[i])
		var m uint32
		if ob-1 < 0x7f800000 {
			m = ^uint32(0)
		}
		d[i] = math.Float32frombits(math.Float32bits(g[i]) & m)
	}
}

func reluGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		if v > 0 || v != v {
			dst[i] = v
		} else {
			dst[i] = 0
		}
	}
}

func sumGo(a []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i])
		s1 += float64(a[i+1])
		s2 += float64(a[i+2])
		s3 += float64(a[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// maxGo is the pure-Go twin of the Max kernels; len(a) >= 1.
func maxGo(a []float32) float32 {
	m0, m1, m2, m3 := a[0], a[0], a[0], a[0]
	nan := false
	i := 0
	for ; i+4 <= len(a); i += 4 {
		v0, v1, v2, v3 := a[i], a[i+1], a[i+2], a[i+3]
		nan = nan || v0 != v0 || v1 != v1 || v2 != v2 || v3 != v3
		m0, m1, m2, m3 = max(m0, v0), max(m1, v1), max(m2, v2), max(m3, v3)
	}
	for ; i < len(a); i++ {
		nan = nan || a[i] != a[i]
		m0 = max(m0, a[i])
	}
	if nan {
		return float32(math.NaN())
	}
	return max(m0, m1, m2, m3)
}

// dotGo is the pure-Go twin of the Dot kernels; len(b) == len(a).
func dotGo(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(a); i += 2 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
	}
	if i < len(a) {
		s0 += float64(a[i]) * float64(b[i])
	}
	return s0 + s1
}

func expGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = Expf(v)
	}
}

// Expf returns e**x for float32, within one ulp of the correctly rounded
// result over the whole range, subnormal results and the overflow boundary
// included. It reduces x = k·ln2 + r in float64, evaluates a degree-8
// Taylor polynomial for e**r (|r| <= ln2/2, truncation error below 3e-10
// relative) and scales by 2**k, then rounds once to float32. It is the
// scalar exp of the whole CPU backend: the pure-Go kernels here and
// package cpu's Expf both use it.
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

func tanhGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = math32.Tanh(v)
	}
}

func negGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = -v
	}
}

func absGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
	}
}

func sqrtGo(dst, a []float32) {
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = math32.Sqrt(v)
	}
}

// The optimizer twins round each product and sum on its own (the explicit
// conversions keep a compiler from fusing x*y + z), in the operand order of
// the assembly, with the flushes of FTZ|DAZ (ftz.go). The flushes change
// nothing unless some operand or intermediate is tiny, so the loops compute
// plainly and redo with the flushing helpers only the elements that fail a
// cheaper, conservative test: with every constant 0 or of magnitude in
// [2**-40, 2**40] (safeConsts), an element whose inputs, sums and quotients
// are 0 or at least 2**-80 (smallKey) has products of at least 2**-120,
// so nothing in it is tiny.

// smallBits are the bits of 2**-80.
const smallBits = (127 - 80) << 23

// smallKey is below smallBits exactly when 0 < |x| < 2**-80.
func smallKey(x float32) uint32 {
	return math.Float32bits(x)&absMask - 1
}

// safeConsts reports whether every c is 0 or of magnitude in [2**-40,
// 2**40] (NaN is not).
func safeConsts(c ...float32) bool {
	for _, x := range c {
		if a := math.Abs(float64(x)); x != 0 && !(a >= 0x1p-40 && a <= 0x1p40) {
			return false
		}
	}
	return true
}

func sgdMomentumGo(w, g, buf []float32, mom, damp, lr float32) {
	g, buf = g[:len(w)], buf[:len(w)]
	mom, damp, lr = daz(mom), daz(damp), daz(lr)
	safe := safeConsts(mom, damp, lr)
	for i := range w {
		bi, gi, wi := buf[i], g[i], w[i]
		b := float32(float32(bi*mom) + float32(gi*damp))
		wn := float32(wi - float32(b*lr))
		if !safe || min(smallKey(bi), smallKey(gi), smallKey(wi), smallKey(b), smallKey(wn)) < smallBits {
			b = ftzAdd(ftzMul(daz(bi), mom), ftzMul(daz(gi), damp))
			wn = ftzSub(daz(wi), ftzMul(b, lr))
		}
		buf[i], w[i] = b, wn
	}
}

func adamGo(w, g, m, v []float32, c AdamConsts) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	c = AdamConsts{daz(c.B1), daz(c.C1), daz(c.B2), daz(c.C2), daz(c.BC2), daz(c.Eps), daz(c.StepSize), daz(c.Decay)}
	// A negative Eps could cancel sqrt(v)/BC2 to a tiny denominator.
	safe := c.Eps >= 0 && safeConsts(c.B1, c.C1, c.B2, c.C2, c.BC2, c.Eps, c.StepSize, c.Decay)
	for i := range w {
		gi, m0, v0, w0 := g[i], m[i], v[i], w[i]
		mi := float32(float32(m0*c.B1) + float32(gi*c.C1))
		gg := float32(gi * gi)
		vi := float32(float32(v0*c.B2) + float32(gg*c.C2))
		denom := float32(float32(math32.Sqrt(vi)/c.BC2) + c.Eps)
		q := float32(mi / denom)
		wn := float32(float32(w0*c.Decay) - float32(q*c.StepSize))
		if !safe || min(smallKey(gi), smallKey(m0), smallKey(v0), smallKey(w0), smallKey(gg),
			smallKey(mi), smallKey(vi), smallKey(q), smallKey(wn)) < smallBits {
			mi, vi, wn = adamFTZ(gi, m0, v0, w0, &c)
		}
		m[i], v[i], w[i] = mi, vi, wn
	}
}

// adamFTZ is one element of adamGo with every flush spelled out.
func adamFTZ(g, m, v, w float32, c *AdamConsts) (mi, vi, wn float32) {
	g = daz(g)
	mi = ftzAdd(ftzMul(daz(m), c.B1), ftzMul(g, c.C1))
	vi = ftzAdd(ftzMul(daz(v), c.B2), ftzMul(ftzMul(g, g), c.C2))
	// vi is zero or normal, so its square root needs no flush.
	denom := ftzAdd(ftzDiv(math32.Sqrt(vi), c.BC2), c.Eps)
	wn = ftzSub(ftzMul(daz(w), c.Decay), ftzMul(ftzDiv(mi, denom), c.StepSize))
	return mi, vi, wn
}
