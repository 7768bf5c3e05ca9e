package reduce

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSum4MatchesGo compares the four-source kernels with the Go twin on
// random values for every length 1…67, source count 1…4 and with and
// without the division, into destinations poisoned with NaNs one element
// past the end.
func TestSum4MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 67; n++ {
		for k := 1; k <= 4; k++ {
			for _, div := range []float64{0, 3} {
				s32, s64 := make([][]float32, 4), make([][]float64, 4)
				for i := range 4 {
					s32[i], s64[i] = make([]float32, n+1), make([]float64, n+1)
					for e := range n + 1 {
						s32[i][e], s64[i][e] = float32(rng.NormFloat64()*1e3), rng.NormFloat64()*1e3
					}
				}
				got32, want32 := nanFilled[float32](n+1), nanFilled[float32](n+1)
				got64, want64 := nanFilled[float64](n+1), nanFilled[float64](n+1)
				sum4Float32s(got32[:n], s32[0], s32[1], s32[2], s32[3], k, float32(div))
				sum4Go(want32[:n], s32[0], s32[1], s32[2], s32[3], k, float32(div))
				sum4Float64s(got64[:n], s64[0], s64[1], s64[2], s64[3], k, div)
				sum4Go(want64[:n], s64[0], s64[1], s64[2], s64[3], k, div)
				require.Equal(t, want32[:n], got32[:n], "float32 n %d k %d div %v", n, k, div)
				require.Equal(t, want64[:n], got64[:n], "float64 n %d k %d div %v", n, k, div)
				require.True(t, math.IsNaN(float64(got32[n])) && math.IsNaN(got64[n]), "n %d k %d wrote past the end", n, k)
			}
		}
	}
}

// nanFilled returns n NaNs.
func nanFilled[T float32 | float64](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(math.NaN())
	}
	return s
}

// TestSumMatchesSequentialAdds checks the bits of SumFloat32s,
// SumFloat64s and the Mean forms against copying the first source, adding
// the others one by one and dividing, for 1…9 sources, with dst itself
// each of the first four.
func TestSumMatchesSequentialAdds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 37
	for k := 1; k <= 9; k++ {
		for alias := range min(k, 4) {
			for _, mean := range []bool{false, true} {
				s32, s64 := make([][]float32, k), make([][]float64, k)
				for i := range k {
					s32[i], s64[i] = make([]float32, n+i), make([]float64, n+i)
					for e := range s32[i] {
						s32[i][e], s64[i][e] = float32(rng.NormFloat64()), rng.NormFloat64()*1e-3
					}
				}
				want32, want64 := append([]float32(nil), s32[0][:n]...), append([]float64(nil), s64[0][:n]...)
				for i := 1; i < k; i++ {
					AddFloat32s(want32, s32[i])
					AddFloat64s(want64, s64[i])
				}
				dst32, dst64 := s32[alias][:n], s64[alias][:n]
				if mean {
					DivFloat32s(want32, float32(k))
					DivFloat64s(want64, float64(k))
					MeanFloat32s(dst32, float32(k), s32...)
					MeanFloat64s(dst64, float64(k), s64...)
				} else {
					SumFloat32s(dst32, s32...)
					SumFloat64s(dst64, s64...)
				}
				require.Equal(t, want32, dst32, "float32 %d sources, dst source %d, mean %v", k, alias, mean)
				require.Equal(t, want64, dst64, "float64 %d sources, dst source %d, mean %v", k, alias, mean)
			}
		}
	}
	assert.Panics(t, func() { SumFloat32s(make([]float32, 4)) })
	assert.Panics(t, func() { SumFloat32s(make([]float32, 4), make([]float32, 4), make([]float32, 3)) })
	assert.Panics(t, func() { MeanFloat64s(make([]float64, 4), 0, make([]float64, 4)) })
}
