package reduce

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDiv(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100} {
		for _, d := range []float64{1, 2, 3, 7, 0.1} {
			d32, d64 := make([]float32, n), make([]float64, n)
			w32, w64 := make([]float32, n), make([]float64, n)
			for i := range n {
				d32[i] = float32(i)*0.37 - 3
				d64[i] = float64(i)*0.37 - 2
				if i%5 == 4 {
					d32[i], d64[i] = math.SmallestNonzeroFloat32*float32(i), math.SmallestNonzeroFloat64*float64(i)
				}
				w32[i], w64[i] = d32[i]/float32(d), d64[i]/d
			}
			DivFloat32s(d32, float32(d))
			DivFloat64s(d64, d)
			assert.Equal(t, w32, d32, "float32 n=%d d=%v", n, d)
			assert.Equal(t, w64, d64, "float64 n=%d d=%v", n, d)
		}
	}
}
