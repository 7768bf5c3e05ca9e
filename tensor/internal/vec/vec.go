// Package vec holds float32 kernels on contiguous slices: elementwise
// arithmetic (vector-vector and vector-scalar), fused scale-and-add,
// activations (Relu, Exp, Log, Tanh, Sigmoid) and reductions (Sum, Max,
// Dot). The CPU backend of package tensor calls them for contiguous and
// broadcast-scalar operands.
//
// On amd64 the hot kernels (arithmetic, Relu, Neg, Abs, Sqrt, Exp, Tanh, Sum)
// are written
// in Go assembly, in an AVX-512F and an AVX2+FMA version, and the fastest
// one the CPU supports is chosen at run time with golang.org/x/sys/cpu.
// Every assembly kernel has a pure-Go twin, used on other architectures, on
// older x86 CPUs and under the purego build tag; tests run both on the same
// inputs.
//
// Accuracy: arithmetic, Relu, Neg, Abs, Sqrt, Clamp, Sum and Max are exact (Sum accumulates in
// float64 and rounds once); Log calls the float32 math library. Exp is
// within ExpMaxULP ulp of the correctly rounded result on every path, subnormal
// results included: the SIMD kernels evaluate a degree-7 Taylor polynomial
// after Cody-Waite reduction in float32 with FMA, the pure-Go twin works in
// float64. Sigmoid is built on Exp and is within SigmoidMaxULP ulps. Tanh
// (SIMD: an odd polynomial fitted for relative error on |x| < 0.625 and
// 1 - 2/(e**2|x| + 1) above; pure Go: math32.Tanh) is within TanhMaxULP
// ulps. Each bound is measured against float64 over a dense sweep in the
// tests.
//
// The functions panic when the slices' lengths disagree. They run on the
// calling goroutine; callers split large slices across goroutines.
package vec

import (
	"fmt"
	"math"

	"github.com/chewxy/math32"
)

// ExpMaxULP bounds the error of Exp, in units in the last place of the
// float32 result, against e**x computed in float64, over the whole float32
// range. The test sweeps every 97th float32 and checks it.
const ExpMaxULP = 1

// SigmoidMaxULP bounds the error of Sigmoid against 1/(1+e**-x) computed in
// float64, in ulps of the float32 result. Measured maximum over the same
// kind of sweep: 2.13 ulp.
const SigmoidMaxULP = 3

// TanhMaxULP bounds the error of Tanh against tanh computed in float64, in
// ulps of the float32 result, checked over a sweep of [-12, 12] (measured
// maximum: 1.30 ulp for the SIMD kernels, 1.94 for the pure-Go twin, which
// calls math32.Tanh).
const TanhMaxULP = 2

// impl is one complete set of kernels. The vector-vector and vector-scalar
// kernels may assume equal lengths; exp may assume len(a) is a multiple of
// expLanes (Exp handles the tail), and so may tanh.
type impl struct {
	name               string
	add, sub, mul, div func(dst, a, b []float32)
	addConst, subConst func(dst, a []float32, c float32)
	mulConst, divConst func(dst, a []float32, c float32)
	constSub, constDiv func(dst, a []float32, c float32)
	relu, neg, abs     func(dst, a []float32)
	reluGrad           func(dst, g, out []float32)
	sqrt               func(dst, a []float32)
	exp, tanh          func(dst, a []float32)
	expLanes           int
	// tail runs exp (or, when tanh is set, tanh) on fewer than expLanes
	// elements through a zero-padded copy on its own stack: the copy
	// stays off the heap because tail calls the kernel directly, not
	// through the function value. Unused (nil) when expLanes is 1.
	tail        func(tanh bool, dst, a []float32)
	sum         func(a []float32) float64
	sgdMomentum func(w, g, buf []float32, mom, damp, lr float32)
	// adam takes the constants by value, so that the copy a kernel reads
	// through a pointer stays on the stack.
	adam func(w, g, m, v []float32, c AdamConsts)
}

// goImpl is the pure-Go twin of every kernel.
var goImpl = &impl{
	name: "go",
	add:  addGo, sub: subGo, mul: mulGo, div: divGo,
	addConst: addConstGo, subConst: subConstGo, mulConst: mulConstGo, divConst: divConstGo,
	constSub: constSubGo, constDiv: constDivGo,
	relu: reluGo, reluGrad: reluGradGo, neg: negGo, abs: absGo, sqrt: sqrtGo, exp: expGo, tanh: tanhGo, expLanes: 1, sum: sumGo,
	sgdMomentum: sgdMomentumGo, adam: adamGo,
}

// active is the fastest kernel set this CPU runs; it is chosen once.
var active = impls()[0]

// Impl names the kernel set in use: "avx512", "avx2" or "go".
func Impl() string { return active.name }

func check2(op string, dst, a []float32) {
	if len(dst) != len(a) {
		panic(fmt.Sprintf("vec: %s: len(dst) = %d, len(a) = %d; they must be equal", op, len(dst), len(a)))
	}
}

func check3(op string, dst, a, b []float32) {
	if len(dst) != len(a) || len(a) != len(b) {
		panic(fmt.Sprintf("vec: %s: len(dst) = %d, len(a) = %d, len(b) = %d; they must be equal", op, len(dst), len(a), len(b)))
	}
}

// Add sets dst[i] = a[i] + b[i].
func Add(dst, a, b []float32) { check3("Add", dst, a, b); active.add(dst, a, b) }

// ReluGrad sets dst[i] = g[i] where out[i] > 0 and +0 elsewhere (where
// out[i] is zero, negative or NaN): the gradient of ReLU given its output.
// g[i] passes bit for bit, NaN included.
func ReluGrad(dst, g, out []float32) {
	check3("ReluGrad", dst, g, out)
	active.reluGrad(dst, g, out)
}

// Sub sets dst[i] = a[i] - b[i].
func Sub(dst, a, b []float32) { check3("Sub", dst, a, b); active.sub(dst, a, b) }

// Mul sets dst[i] = a[i] * b[i].
func Mul(dst, a, b []float32) { check3("Mul", dst, a, b); active.mul(dst, a, b) }

// Div sets dst[i] = a[i] / b[i].
func Div(dst, a, b []float32) { check3("Div", dst, a, b); active.div(dst, a, b) }

// AddConst sets dst[i] = a[i] + c.
func AddConst(dst, a []float32, c float32) { check2("AddConst", dst, a); active.addConst(dst, a, c) }

// SubConst sets dst[i] = a[i] - c.
func SubConst(dst, a []float32, c float32) { check2("SubConst", dst, a); active.subConst(dst, a, c) }

// MulConst sets dst[i] = a[i] * c.
func MulConst(dst, a []float32, c float32) { check2("MulConst", dst, a); active.mulConst(dst, a, c) }

// DivConst sets dst[i] = a[i] / c (a true division, not a multiplication
// by 1/c, so results match a[i] / c exactly).
func DivConst(dst, a []float32, c float32) { check2("DivConst", dst, a); active.divConst(dst, a, c) }

// ConstSub sets dst[i] = c - a[i].
func ConstSub(dst, a []float32, c float32) { check2("ConstSub", dst, a); active.constSub(dst, a, c) }

// ConstDiv sets dst[i] = c / a[i].
func ConstDiv(dst, a []float32, c float32) { check2("ConstDiv", dst, a); active.constDiv(dst, a, c) }

// Axpy sets y[i] += alpha * x[i], with the product rounded before the sum
// (no fused multiply-add, so results match the unfused expression).
func Axpy(alpha float32, x, y []float32) {
	check2("Axpy", y, x)
	for i, v := range x {
		y[i] += float32(alpha * v)
	}
}

// Affine sets dst[i] = a[i]*s + t, the product rounded before the sum.
func Affine(dst, a []float32, s, t float32) {
	check2("Affine", dst, a)
	for i, v := range a {
		dst[i] = float32(v*s) + t
	}
}

// Relu sets dst[i] = max(a[i], 0). NaN stays NaN and -0 becomes +0.
func Relu(dst, a []float32) { check2("Relu", dst, a); active.relu(dst, a) }

// Neg sets dst[i] = -a[i].
func Neg(dst, a []float32) { check2("Neg", dst, a); active.neg(dst, a) }

// Abs sets dst[i] = |a[i]|.
func Abs(dst, a []float32) { check2("Abs", dst, a); active.abs(dst, a) }

// Sqrt sets dst[i] to the correctly rounded square root of a[i].
func Sqrt(dst, a []float32) { check2("Sqrt", dst, a); active.sqrt(dst, a) }

// Clamp sets dst[i] = min(max(a[i], lo), hi), keeping NaN.
func Clamp(dst, a []float32, lo, hi float32) {
	check2("Clamp", dst, a)
	for i, v := range a {
		if v != v {
			dst[i] = v
		} else {
			dst[i] = min(max(v, lo), hi)
		}
	}
}

// Exp sets dst[i] = e**a[i], within ExpMaxULP ulps (see the package doc).
// Overflow gives +Inf, results below half the smallest subnormal give 0,
// and NaN stays NaN.
func Exp(dst, a []float32) {
	check2("Exp", dst, a)
	active.expAll(dst, a)
}

func (im *impl) expAll(dst, a []float32)  { im.whole(false, dst, a) }
func (im *impl) tanhAll(dst, a []float32) { im.whole(true, dst, a) }

// whole runs the exp (or, when tanh is set, tanh) kernel, which needs a
// multiple of im.expLanes elements, on slices of any length: the tail goes
// through the same kernel on a padded copy (im.tail), so every element
// sees the same arithmetic.
func (im *impl) whole(tanh bool, dst, a []float32) {
	kern := im.exp
	if tanh {
		kern = im.tanh
	}
	n := len(a) / im.expLanes * im.expLanes
	kern(dst[:n], a[:n])
	if n < len(a) {
		im.tail(tanh, dst[n:], a[n:])
	}
}

// expBlock is the number of elements Sigmoid handles per pass, small enough
// for its passes to stay in the L1 cache.
const expBlock = 1024

// Sigmoid sets dst[i] = 1 / (1 + e**-a[i]), within SigmoidMaxULP ulps.
func Sigmoid(dst, a []float32) {
	check2("Sigmoid", dst, a)
	active.sigmoid(dst, a)
}

func (im *impl) sigmoid(dst, a []float32) {
	for lo := 0; lo < len(a); lo += expBlock {
		hi := min(lo+expBlock, len(a))
		d := dst[lo:hi]
		im.mulConst(d, a[lo:hi], -1)
		im.expAll(d, d)
		im.addConst(d, d, 1)
		im.constDiv(d, d, 1)
		// Below -80, e**-x nears overflow while the sigmoid is e**x to
		// float32 precision.
		for i, v := range a[lo:hi] {
			if v < -80 {
				d[i] = Expf(v)
			}
		}
	}
}

// Log sets dst[i] to the natural logarithm of a[i], subnormal inputs
// included.
func Log(dst, a []float32) {
	check2("Log", dst, a)
	for i, v := range a {
		dst[i] = Logf(v)
	}
}

// Logf is the float32 natural logarithm. math32.Log reads the exponent
// field directly and so is wrong for subnormal inputs (about -88 for
// 1e-45 instead of -103.28); those are scaled into the normal range first.
func Logf(v float32) float32 {
	const minNormal = 0x1p-126
	if v > 0 && v < minNormal {
		return math32.Log(v*0x1p24) - 24*math32.Ln2
	}
	return math32.Log(v)
}

// Tanh sets dst[i] to the hyperbolic tangent of a[i], within TanhMaxULP
// ulps. ±Inf give ±1, NaN stays NaN and -0 stays -0.
func Tanh(dst, a []float32) {
	check2("Tanh", dst, a)
	active.tanhAll(dst, a)
}

// Sum returns the sum of a, accumulated in float64 (so the result, rounded
// to float32 by the caller, is the correctly rounded sum for all but
// enormous slices).
func Sum(a []float32) float64 { return active.sum(a) }

// Max returns the largest element of a, or NaN if any element is NaN. It
// panics if a is empty.
func Max(a []float32) float32 {
	if len(a) == 0 {
		panic("vec: Max of an empty slice")
	}
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

// Dot returns the inner product of a and b, accumulated in float64.
func Dot(a, b []float32) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("vec: Dot: len(a) = %d, len(b) = %d; they must be equal", len(a), len(b)))
	}
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

// SGDMomentum applies the common SGD-with-momentum step in place:
// buf[i] = buf[i]*mom + g[i]*damp, then w[i] = w[i] - buf[i]*lr, each
// product and sum rounded to float32 on its own (no fused multiply-add), so
// the result is bit for bit that of the unfused tensor ops, except that
// subnormals are flushed as in Adam: a momentum buffer decaying through the
// subnormal range (a dead unit's) made a step 100 times slower.
func SGDMomentum(w, g, buf []float32, mom, damp, lr float32) {
	check3("SGDMomentum", w, g, buf)
	active.sgdMomentum(w, g, buf, mom, damp, lr)
}

// AdamConsts are the per-step scalars of Adam, rounded to float32: the
// moment decays B1 and B2 with C1 = 1-B1 and C2 = 1-B2, BC2 =
// sqrt(1-B2**step), Eps, StepSize = lr/(1-B1**step) and Decay, the factor
// AdamW's decoupled weight decay multiplies the weights by (1 for Adam).
// The field order is read by the assembly kernels.
type AdamConsts struct {
	B1, C1, B2, C2, BC2, Eps, StepSize, Decay float32
}

// Adam applies one Adam step without L2 weight decay, AMSGrad or maximize
// in place:
//
//	m = m*B1 + g*C1
//	v = v*B2 + (g*g)*C2
//	w = w*Decay - (m / (sqrt(v)/BC2 + Eps)) * StepSize
//
// each operation rounded to float32 on its own (no fused multiply-add), so
// the result is bit for bit that of the unfused tensor ops wherever no
// operand or result is subnormal (below 2**-126 ≈ 1.18e-38 in magnitude).
//
// Subnormals are flushed to zero, as x86 does with MXCSR.FTZ|DAZ, which the
// assembly sets for the duration of the call (and restores): every operand
// below 2**-126, constants included, reads as ±0, and every rounded result
// that is tiny after rounding (below 2**-126 when rounded to 24 bits with
// an unbounded exponent) becomes ±0. The pure-Go twin flushes the same
// intermediates the same way, so both agree bit for bit on every machine.
// Without the flush, gradients near 1e-20, whose squares are subnormal,
// made each instruction take a microcode assist: a step over the 203K
// parameters of the MNIST MLP took 3.5–8 ms instead of 0.45 ms, and MNIST
// training slowed down from its third epoch. PyTorch 1.13 keeps gradual
// underflow by default: with 1e-20 gradients its step over 203K elements
// takes 4.2 ms instead of 1.1 ms and stores exp_avg_sq = 9.95e-44 (exact:
// 1.0e-43); after torch.set_flush_denormal(True) it takes 0.54 ms and
// stores 0, as here, and the weights move by the same -1e-15.
// The twin computes plainly and redoes with the flushes only the elements
// holding a value below 2**-80; that test makes it about 2 times slower
// than without flushing (SGDMomentum's 4 times) on ordinary values.
//
// What the flush changes: each flushed value moves by less than 2**-126,
// so v (exp_avg_sq) and m differ from gradual underflow by less than
// 1.2e-38 absolute per step. sqrt(v) then moves by less than 2**-63 ≈
// 1.1e-19, and sqrt(v)/BC2 by less than 3.4e-18 for B2 = 0.999 (BC2 >=
// sqrt(1-B2)): 3.4e-10 of the denominator when Eps = 1e-8, against a
// float32 rounding step of 2**-23 relative. The rounded denominator, and
// so the update, is therefore unchanged unless the exact value lies within
// 3.4e-10 (relative) of a rounding boundary, and then it is one ulp off.
// Only Eps = 0 makes the difference visible: a flushed v gives m/0.
// Flushed updates (m/denom)*StepSize are below 2**-126 and cannot move a
// weight of magnitude 2**-102 or more; weights below 2**-126 read as zero.
func Adam(w, g, m, v []float32, c AdamConsts) {
	check3("Adam", w, g, m)
	check2("Adam", w, v)
	active.adam(w, g, m, v, c)
}
