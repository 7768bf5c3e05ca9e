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

// The conversions to float32 below keep every product and sum rounded on
// its own: the Go spec lets a compiler fuse x*y + z only without them.

func sgdMomentumGo(w, g, buf []float32, mom, damp, lr float32) {
	g, buf = g[:len(w)], buf[:len(w)]
	for i := range w {
		b := float32(buf[i]*mom) + float32(g[i]*damp)
		buf[i] = b
		w[i] = w[i] - float32(b*lr)
	}
}

func adamGo(w, g, m, v []float32, c AdamConsts) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i := range w {
		gi := g[i]
		mi := float32(m[i]*c.B1) + float32(gi*c.C1)
		vi := float32(v[i]*c.B2) + float32(float32(gi*gi)*c.C2)
		m[i], v[i] = mi, vi
		denom := float32(math32.Sqrt(vi)/c.BC2) + c.Eps
		w[i] = float32(w[i]*c.Decay) - float32(float32(mi/denom)*c.StepSize)
	}
}
