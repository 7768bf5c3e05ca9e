package distributed

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// TestVecDivideBitsMatchDivision checks that divide gives the bits of a
// scalar division, for normal, subnormal, huge and special values (NaNs stay NaN;
// their payload bits are not compared).
func TestVecDivideBitsMatchDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	f32 := []float32{0, -0, 1, -3, math.MaxFloat32, math.SmallestNonzeroFloat32, 3 * math.SmallestNonzeroFloat32, 1.1754942e-38, float32(math.Inf(1)), float32(math.NaN())}
	f64 := []float64{0, -0, 1, -3, math.MaxFloat64, math.SmallestNonzeroFloat64, 3 * math.SmallestNonzeroFloat64, 2.2250738585072e-308, math.Inf(-1), math.NaN()}
	for range 1000 {
		e := rng.IntN(60) - 30
		f32 = append(f32, float32(rng.NormFloat64()*math.Pow(2, float64(e))), math.Float32frombits(rng.Uint32()))
		f64 = append(f64, rng.NormFloat64()*math.Pow(2, float64(e)), math.Float64frombits(rng.Uint64()))
	}
	for _, n := range []int{1, 2, 3, 4, 7, 8, 64} {
		a := append([]float32(nil), f32...)
		vec{tensor.Float32, a}.divide(n)
		for i, x := range f32 {
			if x != x {
				require.True(t, a[i] != a[i], "float32 NaN / %d", n)
				continue
			}
			require.Equal(t, math.Float32bits(x/float32(n)), math.Float32bits(a[i]), "float32 %v / %d", x, n)
		}
		b := append([]float64(nil), f64...)
		vec{tensor.Float64, b}.divide(n)
		for i, x := range f64 {
			if x != x {
				require.True(t, b[i] != b[i], "float64 NaN / %d", n)
				continue
			}
			require.Equal(t, math.Float64bits(x/float64(n)), math.Float64bits(b[i]), "float64 %v / %d", x, n)
		}
	}
}
