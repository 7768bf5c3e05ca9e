package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// genericKernels are the pure-Go kernels of every architecture, all tested
// (and measurable) on this one.
func genericKernels() []*kernel { return []*kernel{generic2x4, generic4x4} }

// TestGenericKernelTile calls each pure-Go kernel directly for depths around
// its unrolling, storing into and adding to a tile inside a NaN-poisoned
// buffer, and checks every value against a float64 sum and that nothing
// outside the tile is written.
func TestGenericKernelTile(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, kern := range genericKernels() {
		for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 31, 64, 67} {
			for _, add := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%d/k%d/add%v", kern.mr, kern.nr, k, add), func(t *testing.T) {
					mr, nr, ldc := kern.mr, kern.nr, kern.nr+3
					a, b := make([]float32, mr*k), make([]float32, nr*k)
					randFill(r, a, 1, len(a), len(a))
					randFill(r, b, 1, len(b), len(b))
					all, c := guarded(mr, ldc)
					old := make([]float32, len(c))
					if add {
						randFill(r, c, mr, nr, ldc)
						copy(old, c)
					}
					kern.fn(k, a, b, c, ldc, add)
					const guard = 64
					for idx, got := range all {
						i, j := (idx-guard)/ldc, (idx-guard)%ldc
						if idx < guard || i >= mr || j >= nr {
							require.True(t, math.IsNaN(float64(got)), "element %d outside the tile was written (%v)", idx-guard, got)
							continue
						}
						var want float64
						for p := range k {
							want += float64(a[p*mr+i]) * float64(b[p*nr+j])
						}
						if add {
							want += float64(old[i*ldc+j])
						}
						require.InDelta(t, want, float64(got), 1e-5*float64(k+1), "C[%d][%d]", i, j)
					}
				})
			}
		}
	}
}

// TestGenericKernelsSgemm runs the whole product with each pure-Go kernel,
// on every architecture, against the naive one: all shapes, transposes and
// scalings of problems, on one goroutine and split over two.
func TestGenericKernelsSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, kern := range genericKernels() {
		for _, threads := range []int{1, 2} {
			for _, p := range append(problems(r), problem{false, false, 157, 90, 1100, 1, 0, 2}, problem{true, true, 263, 45, 530, -1, 0.5, 1}) {
				t.Run(fmt.Sprintf("%dx%d/t%d/%v%v_%dx%dx%d_a%g_b%g", kern.mr, kern.nr, threads, p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.beta), func(t *testing.T) {
					got, want, ldc := p.run(t, r, kern, threads)
					checkClose(t, p, got, want, ldc)
				})
			}
		}
	}
}

// BenchmarkGenericKernel measures each pure-Go kernel alone on
// micro-panels that stay in L1 (k = 512, one tile of C): the ceiling of
// the pure-Go product, without packing or cache misses.
func BenchmarkGenericKernel(b *testing.B) {
	const k = 512
	r := rand.New(rand.NewPCG(15, 16))
	for _, kern := range genericKernels() {
		b.Run(fmt.Sprintf("%dx%d", kern.mr, kern.nr), func(b *testing.B) {
			x, y, c := make([]float32, kern.mr*k), make([]float32, kern.nr*k), make([]float32, kern.mr*kern.nr)
			randFill(r, x, 1, len(x), len(x))
			randFill(r, y, 1, len(y), len(y))
			for b.Loop() {
				kern.fn(k, x, y, c, kern.nr, false)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGenericSgemm measures the square products with each pure-Go
// kernel in any build (the purego tag makes Sgemm itself use the one for
// this architecture).
func BenchmarkGenericSgemm(b *testing.B) {
	for _, kern := range genericKernels() {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%dx%d/%d", kern.mr, kern.nr, n), func(b *testing.B) {
				x, y, z := benchInputs(n)
				for b.Loop() {
					sgemm(kern, 0, false, false, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				reportGFLOPS(b, n)
			})
		}
	}
}
