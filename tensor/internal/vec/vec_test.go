package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poison is the bit pattern output buffers are filled with: a NaN no kernel
// produces, so an unwritten or overwritten element shows.
const poison = 0x7fc0dead

// sizes are the lengths the twins are compared on: every length up to 67
// (none a multiple of the vector width beyond a few) and some longer ones.
func sizes() []int {
	s := make([]int, 0, 80)
	for n := 1; n <= 67; n++ {
		s = append(s, n)
	}
	return append(s, 100, 257, 1000, 1031, 4099)
}

func randSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (r.Float32()*2 - 1) * scale
		if r.IntN(17) == 0 {
			s[i] = 0
		}
	}
	return s
}

// poisoned returns a buffer of n elements followed by 16 guard elements,
// all set to the poison NaN, and the n-element window to write into.
func poisoned(n int) (all, dst []float32) {
	all = make([]float32, n+16)
	for i := range all {
		all[i] = math.Float32frombits(poison)
	}
	return all, all[:n]
}

func requireGuards(t *testing.T, all []float32, n int, what string) {
	t.Helper()
	for i := n; i < len(all); i++ {
		require.Equal(t, uint32(poison), math.Float32bits(all[i]), "%s wrote past its end at %d (n=%d)", what, i, n)
	}
}

// sameBits reports whether a and b are the same float, any NaN matching
// any NaN.
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func asmImpls() []*impl {
	all := impls()
	return all[:len(all)-1]
}

func TestAsmMatchesGoExactKernels(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(1, 2))
	type vv struct {
		name   string
		of     func(*impl) func(dst, a, b []float32)
		scaleB float32
	}
	binops := []vv{
		{"add", func(im *impl) func(dst, a, b []float32) { return im.add }, 3},
		{"sub", func(im *impl) func(dst, a, b []float32) { return im.sub }, 3},
		{"mul", func(im *impl) func(dst, a, b []float32) { return im.mul }, 3},
		{"div", func(im *impl) func(dst, a, b []float32) { return im.div }, 3},
		{"reluGrad", func(im *impl) func(dst, a, b []float32) { return im.reluGrad }, 3},
	}
	type vc struct {
		name string
		of   func(*impl) func(dst, a []float32, c float32)
	}
	constops := []vc{
		{"addConst", func(im *impl) func(dst, a []float32, c float32) { return im.addConst }},
		{"subConst", func(im *impl) func(dst, a []float32, c float32) { return im.subConst }},
		{"mulConst", func(im *impl) func(dst, a []float32, c float32) { return im.mulConst }},
		{"divConst", func(im *impl) func(dst, a []float32, c float32) { return im.divConst }},
		{"constSub", func(im *impl) func(dst, a []float32, c float32) { return im.constSub }},
		{"constDiv", func(im *impl) func(dst, a []float32, c float32) { return im.constDiv }},
	}
	for _, im := range asmImpls() {
		for _, n := range sizes() {
			a, b := randSlice(r, n, 10), randSlice(r, n, 3)
			a[0] = float32(math.NaN())
			c := r.Float32()*4 - 2
			for _, op := range binops {
				all, got := poisoned(n)
				_, want := poisoned(n)
				op.of(im)(got, a, b)
				op.of(goImpl)(want, a, b)
				requireGuards(t, all, n, im.name+" "+op.name)
				for i := range want {
					require.True(t, sameBits(want[i], got[i]), "%s %s n=%d [%d]: got %v want %v", im.name, op.name, n, i, got[i], want[i])
				}
			}
			for _, op := range constops {
				all, got := poisoned(n)
				_, want := poisoned(n)
				op.of(im)(got, a, c)
				op.of(goImpl)(want, a, c)
				requireGuards(t, all, n, im.name+" "+op.name)
				for i := range want {
					require.True(t, sameBits(want[i], got[i]), "%s %s n=%d [%d]: got %v want %v", im.name, op.name, n, i, got[i], want[i])
				}
			}
			for _, op := range []struct {
				name string
				of   func(*impl) func(dst, a []float32)
			}{
				{"relu", func(im *impl) func(dst, a []float32) { return im.relu }},
				{"neg", func(im *impl) func(dst, a []float32) { return im.neg }},
				{"abs", func(im *impl) func(dst, a []float32) { return im.abs }},
				{"sqrt", func(im *impl) func(dst, a []float32) { return im.sqrt }},
			} {
				all, got := poisoned(n)
				_, want := poisoned(n)
				op.of(im)(got, a)
				op.of(goImpl)(want, a)
				requireGuards(t, all, n, im.name+" "+op.name)
				for i := range want {
					require.True(t, sameBits(want[i], got[i]), "%s %s n=%d [%d]: got %v want %v", im.name, op.name, n, i, got[i], want[i])
				}
			}
			a[0] = 1
			assert.InDelta(t, goImpl.sum(a), im.sum(a), 1e-9*float64(n), "%s sum n=%d", im.name, n)
		}
	}
}

func TestSignAndSqrtSpecialValues(t *testing.T) {
	nz := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	in := []float32{float32(math.NaN()), nz, 0, -inf, inf, -1e-45, 4, -4}
	for _, im := range impls() {
		neg, abs, sq := make([]float32, len(in)), make([]float32, len(in)), make([]float32, len(in))
		im.neg(neg, in)
		im.abs(abs, in)
		im.sqrt(sq, in)
		wantNeg := []float32{float32(math.NaN()), 0, nz, inf, -inf, 1e-45, -4, 4}
		wantAbs := []float32{float32(math.NaN()), 0, 0, inf, inf, 1e-45, 4, 4}
		wantSqrt := []float32{float32(math.NaN()), nz, 0, float32(math.NaN()), inf, float32(math.NaN()), 2, float32(math.NaN())}
		for i := range in {
			assert.True(t, sameBits(wantNeg[i], neg[i]), "%s neg(%v) = %v", im.name, in[i], neg[i])
			assert.True(t, sameBits(wantAbs[i], abs[i]), "%s abs(%v) = %v", im.name, in[i], abs[i])
			assert.True(t, sameBits(wantSqrt[i], sq[i]), "%s sqrt(%v) = %v", im.name, in[i], sq[i])
		}
	}
}

func TestReluSpecialValues(t *testing.T) {
	in := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(-1)), float32(math.Inf(1)), -1e-45, 1e-45, 3}
	want := []float32{float32(math.NaN()), 0, 0, 0, float32(math.Inf(1)), 0, 1e-45, 3}
	for _, im := range impls() {
		got := make([]float32, len(in))
		im.relu(got, in)
		for i := range want {
			assert.True(t, sameBits(want[i], got[i]), "%s relu(%v) = %v, want %v", im.name, in[i], got[i], want[i])
		}
	}
}

func TestReluGradSpecialValues(t *testing.T) {
	nan, inf, nz := float32(math.NaN()), float32(math.Inf(1)), float32(math.Copysign(0, -1))
	out := []float32{nan, nz, 0, -inf, inf, -1e-45, 1e-45, 3, 2, 5}
	g := []float32{7, 7, 7, 7, -2, 7, 5, nan, nz, inf}
	want := []float32{0, 0, 0, 0, -2, 0, 5, nan, nz, inf}
	for _, im := range impls() {
		got := make([]float32, len(out))
		im.reluGrad(got, g, out)
		for i := range want {
			assert.True(t, sameBits(want[i], got[i]), "%s reluGrad(g=%v, out=%v) = %v, want %v", im.name, g[i], out[i], got[i], want[i])
		}
	}
}

// ulps returns the error of got against the exact value ref, in units of
// the last place of float32(ref). An infinite rounded reference counts
// MaxFloat32 as one ulp away.
func ulps(got float32, ref float64) float64 {
	if ref != ref && got != got {
		return 0
	}
	r := float32(ref)
	if math.IsInf(float64(r), 1) {
		switch {
		case math.IsInf(float64(got), 1):
			return 0
		case got == math.MaxFloat32:
			return 1
		}
		return math.Inf(1)
	}
	if got != got {
		return math.Inf(1)
	}
	ulp := float64(math.Nextafter32(r, float32(math.Inf(1))) - r)
	if math.IsInf(ulp, 1) {
		ulp = float64(r - math.Nextafter32(r, 0))
	}
	return math.Abs(float64(got)-ref) / ulp
}

// sweep returns every 997th float32 bit pattern that is a number in
// [lo, hi], both signs, plus the bounds.
func sweep(lo, hi float32) []float32 {
	var s []float32
	for b := uint64(0); b < 1<<32; b += 997 {
		x := math.Float32frombits(uint32(b))
		if x >= lo && x <= hi {
			s = append(s, x)
		}
	}
	return append(s, lo, hi)
}

func TestExpErrorBound(t *testing.T) {
	xs := sweep(-110, 90)
	require.Greater(t, len(xs), 1000000)
	got := make([]float32, len(xs))
	for _, im := range impls() {
		bound := float64(ExpMaxULP)
		if im == goImpl {
			bound = 1
		}
		im.expAll(got, xs)
		worst, at := 0.0, float32(0)
		for i, x := range xs {
			if e := ulps(got[i], math.Exp(float64(x))); e > worst {
				worst, at = e, x
			}
		}
		t.Logf("%s exp: max error %.3f ulp at %v", im.name, worst, at)
		assert.LessOrEqual(t, worst, bound, "%s exp error at x=%v", im.name, at)
	}
}

func TestSigmoidErrorBound(t *testing.T) {
	xs := sweep(-120, 120)
	got := make([]float32, len(xs))
	for _, im := range impls() {
		im.sigmoid(got, xs)
		worst, at := 0.0, float32(0)
		for i, x := range xs {
			if e := ulps(got[i], 1/(1+math.Exp(-float64(x)))); e > worst {
				worst, at = e, x
			}
		}
		t.Logf("%s sigmoid: max error %.3f ulp at %v", im.name, worst, at)
		assert.LessOrEqual(t, worst, float64(SigmoidMaxULP), "%s sigmoid error at x=%v", im.name, at)
	}
}

func TestTanhErrorBound(t *testing.T) {
	xs := sweep(-12, 12)
	got := make([]float32, len(xs))
	for _, im := range impls() {
		im.tanhAll(got, xs)
		worst, at := 0.0, float32(0)
		for i, x := range xs {
			if e := ulps(got[i], math.Tanh(float64(x))); e > worst {
				worst, at = e, x
			}
		}
		t.Logf("%s tanh: max error %.3f ulp at %v", im.name, worst, at)
		assert.LessOrEqual(t, worst, float64(TanhMaxULP), "%s tanh error at x=%v", im.name, at)
	}
}

func TestTanhSpecialValuesAndTails(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	specials := []struct{ x, want float32 }{
		{float32(math.NaN()), float32(math.NaN())}, {inf, 1}, {-inf, -1}, {0, 0},
		{negZero, negZero}, {1e-40, 1e-40}, {-1e-40, -1e-40}, {30, 1}, {-1e30, -1},
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, im := range impls() {
		for _, n := range sizes() {
			a := randSlice(r, n, 4)
			for i := range a {
				if i%4 == 0 {
					a[i] = specials[(i/4)%len(specials)].x
				}
			}
			all, got := poisoned(n)
			im.tanhAll(got, a)
			requireGuards(t, all, n, im.name+" tanh")
			for i, x := range a {
				if i%4 == 0 {
					w := specials[(i/4)%len(specials)].want
					require.True(t, sameBits(w, got[i]), "%s tanh(%v) = %v, want %v", im.name, x, got[i], w)
				}
				require.LessOrEqual(t, ulps(got[i], math.Tanh(float64(x))), float64(TanhMaxULP), "%s tanh(%v) = %v", im.name, x, got[i])
			}
		}
	}
}

func TestExpSpecialValuesAndTails(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		x, want float32
	}{
		{float32(math.NaN()), float32(math.NaN())},
		{inf, inf},
		{-inf, 0},
		{0, 1},
		{float32(math.Copysign(0, -1)), 1},
		{89, inf},
		{88.8, inf},
		{1000, inf},
		{-104, 0},
		{-200, 0},
		{-1e30, 0},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, im := range impls() {
		for _, n := range sizes() {
			a := randSlice(r, n, 100)
			for i := range a {
				if i%5 == 0 {
					a[i] = cases[(i/5)%len(cases)].x
				}
			}
			all, got := poisoned(n)
			im.expAll(got, a)
			requireGuards(t, all, n, im.name+" exp")
			_, twin := poisoned(n)
			goImpl.expAll(twin, a)
			for i, x := range a {
				if i%5 == 0 {
					w := cases[(i/5)%len(cases)].want
					require.True(t, sameBits(w, got[i]), "%s exp(%v) = %v, want %v", im.name, x, got[i], w)
				}
				require.LessOrEqual(t, ulps(got[i], math.Exp(float64(x))), float64(ExpMaxULP), "%s exp(%v) = %v, twin %v", im.name, x, got[i], twin[i])
			}
		}
		// Results near the overflow and subnormal boundaries.
		xs := []float32{88.72, 88.7228, -87.3, -88, -100, -103.2, -103.97}
		got := make([]float32, len(xs))
		im.expAll(got, xs)
		for i, x := range xs {
			assert.LessOrEqual(t, ulps(got[i], math.Exp(float64(x))), float64(ExpMaxULP), "%s exp(%v) = %v", im.name, x, got[i])
		}
	}
}

func TestExportedKernels(t *testing.T) {
	a := []float32{1, -2, 3, -4, 5}
	b := []float32{2, 4, -8, 16, 0.5}
	d := make([]float32, 5)
	tests := []struct {
		name string
		run  func()
		want []float32
	}{
		{"Add", func() { Add(d, a, b) }, []float32{3, 2, -5, 12, 5.5}},
		{"Sub", func() { Sub(d, a, b) }, []float32{-1, -6, 11, -20, 4.5}},
		{"Mul", func() { Mul(d, a, b) }, []float32{2, -8, -24, -64, 2.5}},
		{"Div", func() { Div(d, a, b) }, []float32{0.5, -0.5, -0.375, -0.25, 10}},
		{"AddConst", func() { AddConst(d, a, 1) }, []float32{2, -1, 4, -3, 6}},
		{"SubConst", func() { SubConst(d, a, 1) }, []float32{0, -3, 2, -5, 4}},
		{"MulConst", func() { MulConst(d, a, -2) }, []float32{-2, 4, -6, 8, -10}},
		{"DivConst", func() { DivConst(d, a, 4) }, []float32{0.25, -0.5, 0.75, -1, 1.25}},
		{"ConstSub", func() { ConstSub(d, a, 1) }, []float32{0, 3, -2, 5, -4}},
		{"ConstDiv", func() { ConstDiv(d, b, 1) }, []float32{0.5, 0.25, -0.125, 0.0625, 2}},
		{"Affine", func() { Affine(d, a, 2, 1) }, []float32{3, -3, 7, -7, 11}},
		{"Relu", func() { Relu(d, a) }, []float32{1, 0, 3, 0, 5}},
		{"Neg", func() { Neg(d, a) }, []float32{-1, 2, -3, 4, -5}},
		{"Abs", func() { Abs(d, a) }, []float32{1, 2, 3, 4, 5}},
		{"Sqrt", func() { Sqrt(d, b) }, []float32{1.4142135, 2, float32(math.NaN()), 4, 0.70710677}},
		{"Clamp", func() { Clamp(d, a, -2.5, 4) }, []float32{1, -2, 3, -2.5, 4}},
		{"Axpy", func() { copy(d, b); Axpy(2, a, d) }, []float32{4, 0, -2, 8, 10.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run()
			for i := range d {
				assert.True(t, sameBits(tc.want[i], d[i]), "[%d]: got %v want %v", i, d[i], tc.want[i])
			}
		})
	}
	assert.Equal(t, 3.0, Sum(a))
	assert.Equal(t, float32(5), Max(a))
	assert.True(t, math.IsNaN(float64(Max([]float32{1, float32(math.NaN()), 2, 3, 4}))))
	assert.Equal(t, 2.0-8-24-64+2.5, Dot(a, b))
	Exp(d, []float32{0, 1, -1, 2, 10})
	assert.InDeltaSlice(t, []float64{1, math.E, 1 / math.E, math.Exp(2), math.Exp(10)}, f64(d), 3e-3)
	Sigmoid(d, []float32{0, 1, -1, 20, -20})
	assert.InDeltaSlice(t, []float64{0.5, 0.7310585786, 0.2689414214, 1, 2.061153622e-9}, f64(d), 1e-7)
	Log(d, []float32{1, math.E, 0.5, 10, 1e-3})
	assert.InDeltaSlice(t, []float64{0, 1, math.Log(0.5), math.Log(10), math.Log(1e-3)}, f64(d), 1e-6)
	Tanh(d, []float32{0, 1, -1, 20, -0.5})
	assert.InDeltaSlice(t, []float64{0, math.Tanh(1), -math.Tanh(1), 1, math.Tanh(-0.5)}, f64(d), 1e-7)
	assert.PanicsWithValue(t, "vec: Add: len(dst) = 5, len(a) = 5, len(b) = 4; they must be equal", func() { Add(d, a, b[:4]) })
	assert.Panics(t, func() { Max(nil) })
}

func f64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

func TestLogSubnormal(t *testing.T) {
	in := []float32{1e-45, 1e-40, 0x1p-127, 0x1p-126, 1e-38, 0, -1e-45}
	d := make([]float32, len(in))
	Log(d, in)
	for i, v := range in {
		want := math.Log(float64(v))
		if v <= 0 {
			if v == 0 {
				assert.True(t, math.IsInf(float64(d[i]), -1), "log(0)")
			} else {
				assert.True(t, math.IsNaN(float64(d[i])), "log(<0)")
			}
			continue
		}
		assert.InDelta(t, want, float64(d[i]), 1e-5*math.Abs(want), "log(%g)", v)
	}
}

// TestKernelsDoNotAllocate checks that the exp and tanh tails and the Adam
// constants stay on the stack: these run many times per training step.
func TestKernelsDoNotAllocate(t *testing.T) {
	x := make([]float32, 37)
	d := make([]float32, 37)
	w, g, m, v := make([]float32, 37), make([]float32, 37), make([]float32, 37), make([]float32, 37)
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 1, Eps: 1e-8, StepSize: 1e-3, Decay: 1}
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"Exp", func() { Exp(d, x) }},
		{"Tanh", func() { Tanh(d, x) }},
		{"Sigmoid", func() { Sigmoid(d, x) }},
		{"Adam", func() { Adam(w, g, m, v, c) }},
	} {
		assert.Zero(t, testing.AllocsPerRun(20, tt.f), tt.name)
	}
}
