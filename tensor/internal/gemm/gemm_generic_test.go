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

// peakMulAdd runs n rounds of 7 independent multiply chains and 6
// independent add chains, every operand in a register: the most scalar
// multiplies and adds the core retires side by side, the ceiling of a
// pure-Go kernel built without FMA. The chains start from distinct values,
// or the compiler would merge equal ones into one.
//
//go:noinline
func peakMulAdd(n int, x *[14]float32) float32 {
	m0, m1, m2, m3, m4, m5, m6 := x[0], x[1], x[2], x[3], x[4], x[5], x[6]
	d0, d1, d2, d3, d4, d5 := x[7], x[8], x[9], x[10], x[11], x[0]+x[11]
	f, g := x[12], x[13]
	for range n {
		m0, m1, m2, m3, m4, m5, m6 = m0*f, m1*f, m2*f, m3*f, m4*f, m5*f, m6*f
		d0, d1, d2, d3, d4, d5 = d0+g, d1+g, d2+g, d3+g, d4+g, d5+g
	}
	return m0 + m1 + m2 + m3 + m4 + m5 + m6 + d0 + d1 + d2 + d3 + d4 + d5
}

// peakFMA runs n rounds of 12 independent chains of c += c*f, which the
// compiler fuses into one FMA each when built with GOAMD64=v3 (or on
// arm64): the ceiling of a pure-Go kernel built that way. The accumulator
// is the addend, as in a kernel, so the FMA writes it in place.
//
//go:noinline
func peakFMA(n int, x *[14]float32) float32 {
	c0, c1, c2, c3, c4, c5 := x[0], x[1], x[2], x[3], x[4], x[5]
	c6, c7, c8, c9, c10, c11 := x[6], x[7], x[8], x[9], x[10], x[11]
	f := x[13]
	for range n {
		c0, c1, c2, c3 = c0+c0*f, c1+c1*f, c2+c2*f, c3+c3*f
		c4, c5, c6, c7 = c4+c4*f, c5+c5*f, c6+c6*f, c7+c7*f
		c8, c9, c10, c11 = c8+c8*f, c9+c9*f, c10+c10*f, c11+c11*f
	}
	return c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11
}

// BenchmarkScalarPeak measures the ceilings above, counting a multiply and
// an add (or an FMA) as 2 flops. Noise only lowers a reading: take the best
// of several runs.
func BenchmarkScalarPeak(b *testing.B) {
	const n = 1 << 16
	// f = 1 and a tiny g keep the chains finite and normal.
	x := &[14]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 1e-30}
	var sink float32
	b.Run("muladd", func(b *testing.B) {
		for b.Loop() {
			sink += peakMulAdd(n, x)
		}
		b.ReportMetric(13*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("fma", func(b *testing.B) {
		for b.Loop() {
			sink += peakFMA(n, x)
		}
		b.ReportMetric(24*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	require.False(b, math.IsNaN(float64(sink)))
}
