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

// DropoutWithMask's fused CPU pass gives the mask DropoutMask draws from
// the same seed and x times it, at sizes that do and do not fill whole
// kernel steps and goroutine ranges; a non-contiguous x takes the general
// path to the same result.
func TestDropoutWithMaskMatchesMask(t *testing.T) {
	t.Cleanup(func() { SetNumThreads(0) })
	for _, threads := range []int{1, 2} {
		SetNumThreads(threads)
		for _, n := range []int{1, 5, 64, 67, 1000, parallelMin + 7} {
			x := NewGenerator(uint64(n)).Randn([]int{n})
			out, mask := DropoutWithMask(x, 0.3, NewGenerator(9))
			require.Equal(t, DropoutMask(NewGenerator(9), []int{n}, 0.3, Float32).Float32s(), mask.Float32s(), "threads %d n %d", threads, n)
			require.Equal(t, x.Mul(mask).Float32s(), out.Float32s(), "threads %d n %d", threads, n)
			require.Equal(t, out.Float32s(), Dropout(x, 0.3, true, NewGenerator(9)).Float32s())
		}
	}
	x := NewGenerator(1).Randn([]int{40, 30})
	outT, maskT := DropoutWithMask(x.T(), 0.5, NewGenerator(4))
	require.False(t, x.T().IsContiguous())
	require.Equal(t, x.T().Mul(maskT).Float32s(), outT.Float32s())
	require.Equal(t, DropoutMask(NewGenerator(4), []int{30, 40}, 0.5, Float32).Float32s(), maskT.Float32s())
	x64 := x.To(Float64)
	out64, mask64 := DropoutWithMask(x64, 0.5, NewGenerator(4))
	require.Equal(t, x64.Mul(mask64).Float64s(), out64.Float64s())
}
