package vec

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// withGuards returns a copy of s followed by 16 poison guard elements, and
// the len(s) window of it.
func withGuards(s []float32) (all, win []float32) {
	all, win = poisoned(len(s))
	copy(win, s)
	return all, win
}

func requireSameBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	for i := range want {
		require.True(t, sameBits(want[i], got[i]), "%s [%d]: got %v want %v", what, i, got[i], want[i])
	}
}

// The optimizer kernels against their pure-Go twins, bit for bit, on odd
// sizes with poison guards after every updated buffer: with ordinary
// values, with gradients near 1e-20 (subnormal squares), and with
// gradients and state straddling the smallest normal float32.
func TestAsmMatchesGoOptimizerKernels(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(7, 8))
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 1e-3 / 0.1, Decay: 0.99}
	// Constants outside the twins' fast range (a subnormal Eps, a tiny step)
	// take their element-wise flushing path everywhere.
	odd := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 1e-20, Eps: 1e-45, StepSize: 1e-30, Decay: 1}
	scales := []struct{ g, b, v float32 }{{1, 1, 1}, {1e-19, 1e-20, 1e-38}, {3e-38, 3e-38, 3e-38}}
	for _, im := range asmImpls() {
		for _, sc := range scales {
			for _, n := range sizes() {
				testOptimizerKernelsOnce(t, im, c, [3]float32{0.9, 0.75, 0.01}, randSlice(r, n, 2), randSlice(r, n, sc.g), randSlice(r, n, sc.b), randSlice(r, n, sc.v))
				testOptimizerKernelsOnce(t, im, odd, [3]float32{0.9, 1e-39, 1e-30}, randSlice(r, n, 2), randSlice(r, n, sc.g), randSlice(r, n, sc.b), randSlice(r, n, sc.v))
			}
		}
	}
}

// testOptimizerKernelsOnce compares im with the twins on one input: Adam
// with c, SGD with momentum, dampening and learning rate sgd.
func testOptimizerKernelsOnce(t *testing.T, im *impl, c AdamConsts, sgd [3]float32, w, g, b, v []float32) {
	t.Helper()
	n := len(w)
	for i := range v {
		v[i] = float32(math.Abs(float64(v[i]))) // second moments are non-negative
	}
	if n > 3 {
		g[3] = float32(math.NaN())
	}
	// SGD with momentum.
	wAll, wGot := withGuards(w)
	bAll, bGot := withGuards(b)
	_, wWant := withGuards(w)
	_, bWant := withGuards(b)
	im.sgdMomentum(wGot, g, bGot, sgd[0], sgd[1], sgd[2])
	goImpl.sgdMomentum(wWant, g, bWant, sgd[0], sgd[1], sgd[2])
	requireGuards(t, wAll, n, im.name+" sgdMomentum w")
	requireGuards(t, bAll, n, im.name+" sgdMomentum buf")
	requireSameBits(t, wWant, wGot, im.name+" sgdMomentum w")
	requireSameBits(t, bWant, bGot, im.name+" sgdMomentum buf")
	// Adam.
	wAll, wGot = withGuards(w)
	mAll, mGot := withGuards(b)
	vAll, vGot := withGuards(v)
	_, wWant = withGuards(w)
	_, mWant := withGuards(b)
	_, vWant := withGuards(v)
	im.adam(wGot, g, mGot, vGot, c)
	goImpl.adam(wWant, g, mWant, vWant, c)
	for _, x := range []struct {
		name      string
		all       []float32
		want, got []float32
	}{{"w", wAll, wWant, wGot}, {"m", mAll, mWant, mGot}, {"v", vAll, vWant, vGot}} {
		requireGuards(t, x.all, n, im.name+" adam "+x.name)
		requireSameBits(t, x.want, x.got, im.name+" adam "+x.name)
	}
}

// The exported kernels compute the documented formulas.
func TestOptimizerKernelsValues(t *testing.T) {
	w, g, buf := []float32{1, -2, 3}, []float32{0.5, 1, -1}, []float32{0.1, 0.2, 0.3}
	SGDMomentum(w, g, buf, 0.9, 1, 0.1)
	require.InDeltaSlice(t, []float32{0.59, 1.18, -0.73}, buf, 1e-6)
	require.InDeltaSlice(t, []float32{1 - 0.059, -2 - 0.118, 3 + 0.073}, w, 1e-6)
	w, m, v := []float32{1, 2}, []float32{0, 0.5}, []float32{0, 0.25}
	Adam(w, []float32{2, -1}, m, v, AdamConsts{B1: 0.5, C1: 0.5, B2: 0.5, C2: 0.5, BC2: 1, Eps: 0, StepSize: 0.1, Decay: 1})
	require.InDeltaSlice(t, []float32{1, -0.25}, m, 1e-7)
	require.InDeltaSlice(t, []float32{2, 0.625}, v, 1e-7)
	require.InDeltaSlice(t, []float32{1 - 0.1/float32(math.Sqrt(2)), 2 + 0.025/float32(math.Sqrt(0.625))}, w, 1e-6)
	require.Panics(t, func() { SGDMomentum(w, g, buf, 1, 1, 1) })
}

// Products and quotients within an ulp of the smallest normal float32: x86
// decides FTZ's tininess after rounding, so a result that rounds up to
// 2**-126 stays while one that rounds to just below it is flushed; the
// twins must draw the line at the same place.
func TestAsmMatchesGoAtFlushBoundary(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	const n = 4099
	r := rand.New(rand.NewPCG(9, 10))
	g, w := make([]float32, n), make([]float32, n)
	m := make([]float32, n)
	base := math.Float32bits(3 * minNormal)
	for i := range m {
		m[i] = math.Float32frombits(base + uint32(i) - n/2)
	}
	c := AdamConsts{B1: 1, C1: 1, B2: 1, C2: 1, BC2: 1, Eps: 3, StepSize: 1, Decay: 1}
	for _, im := range asmImpls() {
		flushed, kept := 0, 0
		for range 64 {
			// Consecutive floats around 2**-126/mom make products that
			// straddle 2**-126 in steps of about mom*2**-149.
			mom := float32(0.5 + 0.5*r.Float64())
			base := math.Float32bits(float32(minNormal / float64(mom)))
			buf := make([]float32, 67)
			for i := range buf {
				buf[i] = math.Float32frombits(base + uint32(i) - 33)
			}
			bGot, bWant := slices.Clone(buf), slices.Clone(buf)
			wGot, wWant := slices.Clone(w[:67]), slices.Clone(w[:67])
			im.sgdMomentum(wGot, g[:67], bGot, mom, 0, 1)
			goImpl.sgdMomentum(wWant, g[:67], bWant, mom, 0, 1)
			requireSameBits(t, bWant, bGot, im.name+" sgdMomentum buf")
			requireSameBits(t, wWant, wGot, im.name+" sgdMomentum w")
			for i, b := range buf {
				if float32(b*mom) == minNormal {
					if bGot[i] == 0 {
						flushed++
					} else {
						kept++
					}
				}
			}
		}
		require.Positive(t, flushed, "products rounding to 2**-126 only with gradual underflow")
		require.Positive(t, kept, "products rounding to 2**-126 either way")

		mGot, mWant := slices.Clone(m), slices.Clone(m)
		vGot, vWant := make([]float32, n), make([]float32, n)
		wGot, wWant := slices.Clone(w), slices.Clone(w)
		im.adam(wGot, g, mGot, vGot, c)
		goImpl.adam(wWant, g, mWant, vWant, c)
		requireSameBits(t, wWant, wGot, im.name+" adam w")
		require.Contains(t, wGot, float32(0))
		require.Contains(t, wGot, float32(-minNormal))
	}
}

// The twins' plain loops agree with their element-wise flushing path on
// operands of every magnitude, so skipping the flushes where the
// conservative test passes changes no bit. Runs on every platform.
func TestTwinFastPathMatchesFlushes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	logUniform := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(math.Ldexp(r.Float64()*2-1, -r.IntN(150)))
		}
		return s
	}
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 1e-2, Decay: 0.99}
	const n = 5000
	for range 4 {
		w, g, m, v := logUniform(n), logUniform(n), logUniform(n), logUniform(n)
		wGot, mGot, vGot := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		adamGo(wGot, g, mGot, vGot, c)
		for i := range w {
			mi, vi, wn := adamFTZ(g[i], m[i], v[i], w[i], &c) // c is normal: daz keeps it
			require.True(t, sameBits(mi, mGot[i]) && sameBits(vi, vGot[i]) && sameBits(wn, wGot[i]),
				"adam [%d] g=%g m=%g v=%g w=%g", i, g[i], m[i], v[i], w[i])
		}
		wGot, bGot := slices.Clone(w), slices.Clone(m)
		sgdMomentumGo(wGot, g, bGot, 0.9, 1, 0.01)
		for i := range w {
			b := ftzAdd(ftzMul(daz(m[i]), 0.9), ftzMul(daz(g[i]), 1))
			wn := ftzSub(daz(w[i]), ftzMul(b, 0.01))
			require.True(t, sameBits(b, bGot[i]) && sameBits(wn, wGot[i]), "sgd [%d]", i)
		}
		c.Eps, c.StepSize = c.Eps*1e-3, c.StepSize*1e-3
	}
}

// The flush mode of the assembly stays inside it: goroutines doing float
// arithmetic on the same thread as kernels that run with FTZ|DAZ (and that
// signals and preemption interrupt) still see gradual underflow.
func TestFlushModeDoesNotLeak(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 1 << 16
	w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = 1e-20
	}
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 1e-2, Decay: 1}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				Adam(w, g, m, v, c)
				runtime.Gosched()
			}
		}
	}()
	// Operands from memory, so that the compiler cannot fold the products:
	// 1e-30*1e-10 and 1e-20*1e-20 are subnormal.
	xs := []float32{1e-30, 1e-10, 1e-20, 1e-20}
	zeros := 0
	for i := range 300 {
		for j := range 1000 {
			k := (i + j) & 2
			if float32(xs[k]*xs[k+1]) == 0 {
				zeros++
			}
		}
		runtime.Gosched() // let the kernel's goroutine run on this thread
	}
	close(stop)
	<-done
	require.Zero(t, zeros)
	require.Zero(t, v[0], "the kernel flushed g*g")
}
