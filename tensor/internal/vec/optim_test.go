package vec

import (
	"math"
	"math/rand/v2"
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
// sizes with poison guards after every updated buffer.
func TestAsmMatchesGoOptimizerKernels(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(7, 8))
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 1e-3 / 0.1, Decay: 0.99}
	for _, im := range asmImpls() {
		for _, n := range sizes() {
			w, g, b := randSlice(r, n, 2), randSlice(r, n, 1), randSlice(r, n, 1)
			v := randSlice(r, n, 1)
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
			im.sgdMomentum(wGot, g, bGot, 0.9, 0.75, 0.01)
			goImpl.sgdMomentum(wWant, g, bWant, 0.9, 0.75, 0.01)
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
