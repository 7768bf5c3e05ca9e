//go:build arm64 && !purego

package vec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSGDMomentumNEONStopsAtTinyValues checks that the NEON SGD kernel
// updates whole groups of four with ordinary values (so the assembly path
// is the one the twin tests compare) and stops before the first group
// holding a value the pure-Go twin must flush.
func TestSGDMomentumNEONStopsAtTinyValues(t *testing.T) {
	mk := func(n int, v float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = v + float32(i)
		}
		return s
	}
	w, g, buf := mk(19, 1), mk(19, 0.5), mk(19, 0.25)
	require.Equal(t, 16, sgdMomentumNEON(w, g, buf, 0.9, 1, 0.01))
	require.Equal(t, float32(float32(0.25*0.9)+0.5), buf[0])
	require.Equal(t, float32(19), w[18], "the tail is left to the caller")
	for _, tiny := range []float32{1e-30, -1e-25, 1e-40} {
		w, g, buf = mk(19, 1), mk(19, 0.5), mk(19, 0.25)
		g[9] = tiny
		require.Equal(t, 8, sgdMomentumNEON(w, g, buf, 0.9, 1, 0.01), "tiny gradient %v", tiny)
		require.Equal(t, float32(1+9), w[9], "the group holding the tiny value is not written")
	}
	// A result that becomes tiny stops the kernel too: with w = 2**-60 and
	// buf = 2**-60·(1+2**-23), w - buf·1 = -2**-83, though every input is
	// at least 2**-80.
	w, g, buf = []float32{1, 1, 1, 1}, []float32{0, 0, 0, 0}, []float32{1, 1, 1, 1}
	require.Equal(t, 4, sgdMomentumNEON(w, g, buf, 1, 1, 1))
	w, buf = []float32{1, 1, 0x1p-60, 1}, []float32{1, 1, 0x1p-60 * (1 + 0x1p-23), 1}
	require.Equal(t, 0, sgdMomentumNEON(w, g, buf, 1, 1, 1))
	require.Equal(t, float32(0x1p-60), w[2], "not written")
}

// TestAdamNEONStopsAtTinyValues is TestSGDMomentumNEONStopsAtTinyValues for
// the Adam kernel, with a tiny gradient square (g = 1e-20: g·g = 1e-40).
func TestAdamNEONStopsAtTinyValues(t *testing.T) {
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 0.01, Decay: 1}
	fill := func(v float32) []float32 {
		s := make([]float32, 10)
		for i := range s {
			s[i] = v
		}
		return s
	}
	w, g, m, v := fill(1), fill(0.5), fill(0.1), fill(0.2)
	require.Equal(t, 8, adamNEON(w, g, m, v, &c))
	wantM := float32(float32(0.1*c.B1) + float32(0.5*c.C1))
	require.Equal(t, wantM, m[7])
	require.Equal(t, float32(0.1), m[8], "the tail is left to the caller")
	w, g, m, v = fill(1), fill(0.5), fill(0.1), fill(0.2)
	g[5] = 1e-20
	require.Equal(t, 4, adamNEON(w, g, m, v, &c))
	require.Equal(t, float32(1), w[5], "the group holding the tiny square is not written")
}
