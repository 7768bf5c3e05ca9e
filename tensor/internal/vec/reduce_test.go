package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAsmMatchesGoReductions checks the assembly Max and Dot kernels
// against their pure-Go twins on every odd size: Max bit for bit (NaN,
// signed zeros and infinities placed at every position class, so each of
// the kernel's loops meets them), Dot within the rounding of its float64
// partial sums.
func TestAsmMatchesGoReductions(t *testing.T) {
	if len(asmImpls()) == 0 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(31, 32))
	negZero := float32(math.Copysign(0, -1))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), negZero, 0, 1e-45}
	for _, im := range asmImpls() {
		for _, n := range sizes() {
			a, b := randSlice(r, n, 10), randSlice(r, n, 3)
			require.True(t, sameBits(maxGo(a), im.max(a)), "%s max n=%d: got %v want %v", im.name, n, im.max(a), maxGo(a))
			want, got := dotGo(a, b), im.dot(a, b)
			require.InDelta(t, want, got, 1e-12*float64(n)*30, "%s dot n=%d", im.name, n)
			for _, at := range []int{0, n / 2, n - 1} {
				for _, sp := range specials {
					c := append([]float32(nil), a...)
					c[at] = sp
					require.True(t, sameBits(maxGo(c), im.max(c)), "%s max n=%d with %v at %d: got %v want %v", im.name, n, sp, at, im.max(c), maxGo(c))
				}
			}
			// All elements equal to -0 or below zero: the result is not +0
			// by accident of a zeroed accumulator.
			neg := make([]float32, n)
			for i := range neg {
				neg[i] = -1 - float32(i%5)
			}
			require.Equal(t, float32(-1), im.max(neg), "%s max of negatives n=%d", im.name, n)
			for i := range neg {
				neg[i] = negZero
			}
			require.True(t, sameBits(negZero, im.max(neg)), "%s max of -0s n=%d", im.name, n)
		}
	}
}

func TestMaxAndDotValues(t *testing.T) {
	for _, im := range impls() {
		require.Equal(t, float32(7), im.max([]float32{3, -1, 7, 2, 6}), im.name)
		require.Equal(t, 1*4.0+2*5+3*6, im.dot([]float32{1, 2, 3}, []float32{4, 5, 6}), im.name)
		require.Equal(t, 0.0, im.dot(nil, nil), im.name)
	}
}

// TestAsmKernelsOnEmptySlices runs every kernel of every set on empty
// slices (size 0, which sizes leaves out): nothing may be read or written.
func TestAsmKernelsOnEmptySlices(t *testing.T) {
	var e []float32
	for _, im := range impls() {
		for _, f := range []func(dst, a, b []float32){im.add, im.sub, im.mul, im.div, im.reluGrad} {
			f(e, e, e)
		}
		for _, f := range []func(dst, a []float32, c float32){im.addConst, im.subConst, im.mulConst, im.divConst, im.constSub, im.constDiv} {
			f(e, e, 2)
		}
		for _, f := range []func(dst, a []float32){im.relu, im.neg, im.abs, im.sqrt, im.expAll, im.tanhAll} {
			f(e, e)
		}
		require.Equal(t, 0.0, im.sum(e), im.name)
		require.Equal(t, 0.0, im.dot(e, e), im.name)
		im.sgdMomentum(e, e, e, 0.9, 1, 0.1)
		im.adam(e, e, e, e, AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 1, Eps: 1e-8, StepSize: 1e-3, Decay: 1})
	}
}
