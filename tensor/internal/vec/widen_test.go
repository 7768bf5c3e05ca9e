package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// AddWiden (the assembly kernel where there is one) gives the pure-Go
// twin's sums bit for bit at lengths 1…67, leaving elements past the end
// (NaN guards) untouched.
func TestAddWidenMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 67; n++ {
		x := make([]float32, n)
		acc := make([]float64, n+1)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 1e3)
			acc[i] = rng.NormFloat64()
		}
		acc[n] = math.NaN()
		want := append([]float64(nil), acc...)
		addWidenGo(want[:n], x)
		AddWiden(acc[:n], x)
		require.Equal(t, want[:n], acc[:n], "n %d", n)
		require.True(t, math.IsNaN(acc[n]), "n %d wrote past the end", n)
	}
	require.Panics(t, func() { AddWiden(make([]float64, 2), make([]float32, 3)) })
}

// BenchmarkAddWiden adds a 512-element row (a bias gradient's column block)
// with the dispatched kernel and with the pure-Go twin.
func BenchmarkAddWiden(b *testing.B) {
	x := make([]float32, 512)
	acc := make([]float64, 512)
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			AddWiden(acc, x)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			addWidenGo(acc, x)
		}
	})
}
