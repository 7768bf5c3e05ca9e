package tensor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// DropoutMask's integer threshold picks exactly the elements whose uniform
// draw rng.Float64() is below 1-p, as the documented one-draw-per-element
// rule says.
func TestDropoutMaskMatchesUniformDraws(t *testing.T) {
	for _, p := range []float64{0, 0.1, 1.0 / 3, 0.5, 0.9, 1} {
		for _, dt := range []DType{Float32, Float64} {
			m := DropoutMask(NewGenerator(42), []int{7, 129}, p, dt).To(Float64).Float64s()
			ref := NewGenerator(42)
			keep := 1 - p
			scale := 0.0
			if keep > 0 {
				scale = 1 / keep
			}
			if dt == Float32 {
				scale = float64(float32(scale))
			}
			for i, v := range m {
				want := 0.0
				if ref.rng.Float64() < keep {
					want = scale
				}
				require.Equal(t, want, v, "p=%v %s element %d", p, dt, i)
			}
		}
	}
}
