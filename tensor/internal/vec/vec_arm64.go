//go:build arm64 && !purego

package vec

import "github.com/emberml/ember/tensor/internal/isa"

//go:generate sh -c "python3 asmgen_arm64.py > vec_arm64.s"

// The NEON kernels of vec_arm64.s. Callers guarantee equal lengths; the
// exp and tanh kernels need len(a) to be a multiple of 4.

//go:noescape
func addNEON(dst, a, b []float32)

//go:noescape
func subNEON(dst, a, b []float32)

//go:noescape
func mulNEON(dst, a, b []float32)

//go:noescape
func divNEON(dst, a, b []float32)

//go:noescape
func reluGradNEON(dst, g, out []float32)

//go:noescape
func addConstNEON(dst, a []float32, c float32)

//go:noescape
func subConstNEON(dst, a []float32, c float32)

//go:noescape
func mulConstNEON(dst, a []float32, c float32)

//go:noescape
func divConstNEON(dst, a []float32, c float32)

//go:noescape
func constSubNEON(dst, a []float32, c float32)

//go:noescape
func constDivNEON(dst, a []float32, c float32)

//go:noescape
func reluNEON(dst, a []float32)

//go:noescape
func negNEON(dst, a []float32)

//go:noescape
func absNEON(dst, a []float32)

//go:noescape
func sqrtNEON(dst, a []float32)

//go:noescape
func sumNEON(a []float32) float64

//go:noescape
func sgdMomentumNEON(w, g, buf []float32, mom, damp, lr float32) int

//go:noescape
func adamNEON(w, g, m, v []float32, c *AdamConsts) int

//go:noescape
func maxNEON(a []float32) float32

//go:noescape
func dotNEON(a, b []float32) float64

//go:noescape
func expNEON(dst, a []float32)

//go:noescape
func tanhNEON(dst, a []float32)

// neonImpl is the NEON kernel set. Its exp and tanh do the arithmetic of
// the AVX2 kernels (Cody-Waite reduction, the same polynomials, fused
// multiply-adds) four lanes at a time. The optimizer steps are NEON where
// nothing is near the subnormal range and the pure-Go twin elsewhere (see
// sgdMomentumNEONSteps): FPCR.FZ flushes by another tininess rule than
// x86's FTZ, so the flush-to-zero contract keeps the twin's explicit
// checks.
var neonImpl = &impl{
	name: "neon",
	add:  addNEON, sub: subNEON, mul: mulNEON, div: divNEON,
	addConst: addConstNEON, subConst: subConstNEON, mulConst: mulConstNEON, divConst: divConstNEON,
	constSub: constSubNEON, constDiv: constDivNEON,
	relu: reluNEON, reluGrad: reluGradNEON, neg: negNEON, abs: absNEON, sqrt: sqrtNEON,
	exp: expNEON, tanh: tanhNEON, expLanes: 4, tail: tailNEON, sum: sumNEON, max: maxNEON, dot: dotNEON,
	sgdMomentum: sgdMomentumNEONSteps, adam: adamNEONSteps,
}

// adamNEONSteps is Adam with the NEON kernel where no operand or
// intermediate of a group of four elements is tiny, and the pure-Go twin on
// the other groups, on the tail, and everywhere when a constant is outside
// the twin's fast range or Eps is negative; as sgdMomentumNEONSteps, the
// result is the twin's bit for bit.
func adamNEONSteps(w, g, m, v []float32, c AdamConsts) {
	c = AdamConsts{daz(c.B1), daz(c.C1), daz(c.B2), daz(c.C2), daz(c.BC2), daz(c.Eps), daz(c.StepSize), daz(c.Decay)}
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	if c.Eps >= 0 && safeConsts(c.B1, c.C1, c.B2, c.C2, c.BC2, c.Eps, c.StepSize, c.Decay) {
		for len(w) >= 4 {
			n := adamNEON(w, g, m, v, &c)
			w, g, m, v = w[n:], g[n:], m[n:], v[n:]
			if len(w) < 4 {
				break
			}
			adamGo(w[:4], g[:4], m[:4], v[:4], c)
			w, g, m, v = w[4:], g[4:], m[4:], v[4:]
		}
	}
	adamGo(w, g, m, v, c)
}

// sgdMomentumNEONSteps is SGDMomentum with the NEON kernel where no
// operand or result of a group of four elements is tiny, and the pure-Go
// twin (which flushes as x86's FTZ|DAZ do) on the groups where one is, on
// the tail, and everywhere when a constant is outside the range where the
// twin's own fast path holds. Both compute the same unfused operations in
// the same order, so the result is the twin's bit for bit.
func sgdMomentumNEONSteps(w, g, buf []float32, mom, damp, lr float32) {
	mom, damp, lr = daz(mom), daz(damp), daz(lr)
	g, buf = g[:len(w)], buf[:len(w)]
	if safeConsts(mom, damp, lr) {
		for len(w) >= 4 {
			n := sgdMomentumNEON(w, g, buf, mom, damp, lr)
			w, g, buf = w[n:], g[n:], buf[n:]
			if len(w) < 4 {
				break
			}
			// The group at w[0:4] holds a tiny value.
			sgdMomentumGo(w[:4], g[:4], buf[:4], mom, damp, lr)
			w, g, buf = w[4:], g[4:], buf[4:]
		}
	}
	sgdMomentumGo(w, g, buf, mom, damp, lr)
}

// tailNEON runs the NEON exp (or tanh) kernel on fewer than 4 elements
// through a zero-padded copy.
func tailNEON(tanh bool, dst, a []float32) {
	var buf [4]float32
	n := copy(buf[:], a)
	if tanh {
		tanhNEON(buf[:], buf[:])
	} else {
		expNEON(buf[:], buf[:])
	}
	copy(dst, buf[:n])
}

// impls lists the kernel sets of this build, fastest first: NEON
// (Advanced SIMD is part of every arm64 CPU Go runs on) unless
// EMBER_CPU=generic forces the twins (see package isa), then pure Go.
func impls() []*impl {
	if isa.Has(isa.NEON) {
		return []*impl{neonImpl, goImpl}
	}
	return []*impl{goImpl}
}
