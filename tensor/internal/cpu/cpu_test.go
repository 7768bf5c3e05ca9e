package cpu

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor/internal/parallel"
)

func ulpDiff(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	if d < 0 {
		return -d
	}
	return d
}

func TestExpf(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		x := float32(-104 + 194*r.Float64())
		want := float32(math.Exp(float64(x)))
		got := Expf(x)
		require.LessOrEqual(t, ulpDiff(got, want), int64(1), "Expf(%v) = %v, want %v", x, got, want)
	}
	specials := map[float32]float32{
		0:                           1,
		float32(math.Inf(1)):        float32(math.Inf(1)),
		float32(math.Inf(-1)):       0,
		88.72283:                    3.4027985e38, // just below overflow
		88.7229:                     float32(math.Inf(1)),
		-103.9:                      1e-45, // smallest subnormal
		-104.5:                      0,
		math.SmallestNonzeroFloat32: 1,
	}
	for x, want := range specials {
		assert.Equal(t, want, Expf(x), "Expf(%v)", x)
	}
	assert.True(t, math.IsNaN(float64(Expf(float32(math.NaN())))))
}

func TestReduceNaNAndEmpty(t *testing.T) {
	nan := math.NaN()
	src := []float64{1, nan, 3, 5, 2, 4}
	dst := make([]float64, 2)
	Reduce(Max, dst, src, 2, 3)
	assert.True(t, math.IsNaN(dst[0]))
	assert.Equal(t, 5.0, dst[1])
	Reduce(Min, dst, src, 2, 3)
	assert.True(t, math.IsNaN(dst[0]))
	assert.Equal(t, 2.0, dst[1])
	Reduce(Sum, dst, src, 2, 3)
	assert.True(t, math.IsNaN(dst[0]))
	assert.Equal(t, 11.0, dst[1])

	// Empty rows: the identity.
	e := []int64{7, 7}
	Reduce(Sum, e, nil, 2, 0)
	assert.Equal(t, []int64{0, 0}, e)
	Reduce(Prod, e, nil, 2, 0)
	assert.Equal(t, []int64{1, 1}, e)

	// Integer sums stay exact beyond 2**53.
	big := []int64{1 << 60, 1, 1}
	out := make([]int64, 1)
	Reduce(Sum, out, big, 1, 3)
	assert.Equal(t, int64(1<<60+2), out[0])

	// float32 sums accumulate in float64.
	f := make([]float32, 1<<12)
	for i := range f {
		f[i] = 0.1
	}
	fo := make([]float32, 1)
	Reduce(Sum, fo, f, 1, len(f))
	assert.Equal(t, float32(float64(float32(0.1))*float64(len(f))), fo[0])
}

func TestArgReduce(t *testing.T) {
	nan := math.NaN()
	// [outer=1, n=4, inner=2]: lane 0 = 1, 3, 3, 0; lane 1 = 2, nan, 5, nan.
	src := []float64{1, 2, 3, nan, 3, 5, 0, nan}
	dst := make([]int64, 2)
	ArgReduce(true, dst, src, 1, 4, 2)
	assert.Equal(t, []int64{1, 1}, dst, "first maximum; first NaN wins")
	ArgReduce(false, dst, src, 1, 4, 2)
	assert.Equal(t, []int64{3, 1}, dst)
}

func TestScan(t *testing.T) {
	src := []int64{1, 2, 3, 4, 5, 6} // [outer=1, n=3, inner=2]
	dst := make([]int64, 6)
	Scan(false, dst, src, 1, 3, 2)
	assert.Equal(t, []int64{1, 2, 4, 6, 9, 12}, dst)
	Scan(true, dst, src, 1, 3, 2)
	assert.Equal(t, []int64{1, 2, 3, 8, 15, 48}, dst)
}

func TestCopyMapZipWhere(t *testing.T) {
	src := []int32{0, 1, 2, 3, 4, 5}
	dst := make([]int32, 6)
	Copy(dst, src, []int{2, 3}, []int{1, 2}, 0) // transpose of a [3, 2]
	assert.Equal(t, []int32{0, 2, 4, 1, 3, 5}, dst)
	m := make([]float64, 3)
	Map(m, src, []int{3}, []int{-2}, 5, func(v int32) float64 { return float64(v) / 2 })
	assert.Equal(t, []float64{2.5, 1.5, 0.5}, m)
	z := make([]int32, 6)
	Zip(z, []int{2, 3}, src, []int{3, 1}, 0, []int32{10, 20}, []int{1, 0}, 0, func(a, b int32) int32 { return a + b })
	assert.Equal(t, []int32{10, 11, 12, 23, 24, 25}, z)
	w := make([]int32, 4)
	Where(w, []int{2, 2}, []bool{true, false}, []int{0, 1}, 0, src, []int{2, 1}, 0, []int32{-1}, []int{0, 0}, 0)
	assert.Equal(t, []int32{0, -1, 2, -1}, w)
}

var benchSink float32

func BenchmarkExpf(b *testing.B) {
	xs := make([]float32, 1024)
	for i := range xs {
		xs[i] = float32(i)/64 - 8
	}
	b.ResetTimer()
	var s float32
	for i := range b.N {
		s += Expf(xs[i&1023])
	}
	benchSink = s
}

// TestParallelForFollowsThreads checks that the kernels' loops split only
// as far as tensor.SetNumThreads allows: one thread, one call.
func TestParallelForFollowsThreads(t *testing.T) {
	defer parallel.SetThreads(0)
	for _, threads := range []int{1, 2, 3} {
		parallel.SetThreads(threads)
		var mu sync.Mutex
		var calls [][2]int
		parallelFor(90, parallelMinWork, func(lo, hi int) {
			mu.Lock()
			calls = append(calls, [2]int{lo, hi})
			mu.Unlock()
		})
		require.Len(t, calls, threads, "threads=%d", threads)
		covered := 0
		for _, c := range calls {
			covered += c[1] - c[0]
		}
		require.Equal(t, 90, covered, "threads=%d", threads)
	}
}
