package tensor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// DropoutMask keeps exactly the elements whose PhiloxUniform draw under the
// one seed it takes from the generator is below 1-p, the rule a
// RandomKernels device follows, whatever the size and however the work is
// split across goroutines.
func TestDropoutMaskMatchesPhiloxUniform(t *testing.T) {
	t.Cleanup(func() { SetNumThreads(0) })
	for _, threads := range []int{1, 2, 3} {
		SetNumThreads(threads)
		for _, n := range []int{1, 2, 3, 4, 5, 7, 67, 903, parallelMin + 5} {
			for _, p := range []float64{0, 0.1, 1.0 / 3, 0.5, 0.9, 1} {
				for _, dt := range []DType{Float32, Float64} {
					m := DropoutMask(NewGenerator(42), []int{n}, p, dt).To(Float64).Float64s()
					seed := NewGenerator(42).Uint64()
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
						if PhiloxUniform(seed, int64(i)) < keep {
							want = scale
						}
						require.Equal(t, want, v, "threads=%d n=%d p=%v %s element %d", threads, n, p, dt, i)
					}
				}
			}
		}
	}
}
