package reduce

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdd(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100} {
		d32, s32 := make([]float32, n), make([]float32, n+2)
		d64, s64 := make([]float64, n), make([]float64, n+2)
		w32, w64 := make([]float32, n), make([]float64, n)
		for i := range n {
			d32[i], s32[i] = float32(i)*0.25-3, float32(n-i)*0.5
			d64[i], s64[i] = float64(i)*0.125-2, float64(n-i)*1.5
			w32[i], w64[i] = d32[i]+s32[i], d64[i]+s64[i]
		}
		AddFloat32s(d32, s32)
		AddFloat64s(d64, s64)
		assert.Equal(t, w32, d32, "float32 n=%d", n)
		assert.Equal(t, w64, d64, "float64 n=%d", n)
	}
	assert.Panics(t, func() { AddFloat32s(make([]float32, 4), make([]float32, 3)) })
	assert.Panics(t, func() { AddFloat64s(make([]float64, 4), make([]float64, 3)) })
}
