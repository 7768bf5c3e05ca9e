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
