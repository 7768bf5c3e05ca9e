package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/emberml/ember/tensor/internal/isa"
)

// naive computes C = alpha·op(A)·op(B) + beta·C in float64 with a triple loop.
func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			old := float64(0)
			if beta != 0 {
				old = float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(float64(alpha)*s + old)
		}
	}
}

// guarded returns a slice of rows×ld elements with guard elements on both
// sides, filled with NaN, plus the interior view.
func guarded(rows, ld int) (all, inner []float32) {
	const guard = 64
	all = make([]float32, rows*ld+2*guard)
	for i := range all {
		all[i] = float32(math.NaN())
	}
	return all, all[guard : guard+rows*ld]
}

func randFill(r *rand.Rand, s []float32, rows, cols, ld int) {
	for i := range rows {
		for j := range cols {
			s[i*ld+j] = r.Float32()*2 - 1
		}
	}
}

type problem struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	pad            int // extra leading-dimension padding for A, B and C
}

// run performs the product with kern (and threads) and the naive reference,
// returning both full guarded C buffers.
func (p problem) run(t *testing.T, r *rand.Rand, kern *kernel, threads int) (got, want []float32, ldc int) {
	t.Helper()
	ar, ac := p.m, p.k
	if p.transA {
		ar, ac = p.k, p.m
	}
	br, bc := p.k, p.n
	if p.transB {
		br, bc = p.n, p.k
	}
	lda, ldb := max(ac, 1)+p.pad, max(bc, 1)+p.pad
	ldc = max(p.n, 1) + p.pad
	_, a := guarded(ar, lda)
	_, b := guarded(br, ldb)
	randFill(r, a, ar, ac, lda)
	randFill(r, b, br, bc, ldb)
	gotAll, gotC := guarded(p.m, ldc)
	wantAll, wantC := guarded(p.m, ldc)
	if p.beta != 0 {
		randFill(r, gotC, p.m, p.n, ldc)
		copy(wantC, gotC)
	}
	sgemm(kern, threads, p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, lda, b, ldb, p.beta, gotC, ldc)
	naive(p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, lda, b, ldb, p.beta, wantC, ldc)
	return gotAll, wantAll, ldc
}

// checkClose compares the guarded buffers: inside the m×n region values must
// agree within a tolerance scaled by k; everywhere else both must still be NaN.
func checkClose(t *testing.T, p problem, got, want []float32, ldc int) {
	t.Helper()
	const guard = 64
	tol := 1e-5 * float64(p.k+1)
	for idx := range got {
		i, j := (idx-guard)/ldc, (idx-guard)%ldc
		inside := idx >= guard && i < p.m && j < p.n
		if !inside {
			if !math.IsNaN(float64(got[idx])) {
				require.Failf(t, "write outside C", "%+v: element %d outside C was written (%v)", p, idx-guard, got[idx])
			}
			continue
		}
		if d := math.Abs(float64(want[idx]) - float64(got[idx])); !(d <= tol) {
			require.Failf(t, "mismatch", "%+v: C[%d][%d] = %v, want %v (tolerance %g)", p, i, j, got[idx], want[idx], tol)
		}
	}
}

func problems(r *rand.Rand) []problem {
	sizes := []int{1, 2, 3, 5, 7, 12, 13, 17, 31, 33, 48, 67}
	scal := []struct{ alpha, beta float32 }{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {2.5, 0}}
	var ps []problem
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for range 25 {
				s := scal[r.IntN(len(scal))]
				ps = append(ps, problem{tA, tB, sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], s.alpha, s.beta, r.IntN(3) * 3})
			}
			for _, s := range scal {
				ps = append(ps, problem{tA, tB, 67, 67, 67, s.alpha, s.beta, 5})
				ps = append(ps, problem{tA, tB, 1, 1, 1, s.alpha, s.beta, 0})
			}
			ps = append(ps, problem{tA, tB, 4, 5, 0, 1, 0.5, 1}, problem{tA, tB, 0, 5, 3, 1, 0, 0}, problem{tA, tB, 5, 0, 3, 1, 0, 2})
		}
	}
	return ps
}

func TestSgemmAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kern := range availableKernels() {
		for _, threads := range []int{1, 2, 3} {
			for _, p := range problems(r) {
				t.Run(fmt.Sprintf("%s/t%d/%v%v_%dx%dx%d_a%g_b%g_pad%d", kern.name, threads, p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.beta, p.pad), func(t *testing.T) {
					got, want, ldc := p.run(t, r, kern, threads)
					checkClose(t, p, got, want, ldc)
				})
			}
		}
	}
}

// TestSgemmLargeBlocks crosses the MC, KC and NC block boundaries and the
// parallel split, for every kernel.
func TestSgemmLargeBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, kern := range availableKernels() {
		for _, p := range []problem{
			{false, false, 301, 2100, 260, 1, 0.5, 3},
			{true, true, 150, 45, 520, -1, 0, 1},
			{false, true, 70, 1100, 9, 1, 1, 0},
			// beta = 0 over several KC blocks: the first block stores into
			// the NaN-filled C, later ones add, and edge tiles do both.
			{false, false, 157, 90, 530, 1, 0, 2},
			{true, false, 13, 37, 300, 2, 0, 0},
		} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kern.name, p.m, p.n, p.k), func(t *testing.T) {
				got, want, ldc := p.run(t, r, kern, 2)
				checkClose(t, p, got, want, ldc)
			})
		}
	}
}

// TestKernelsAgree runs every available kernel (assembly and pure Go) on the
// same inputs and requires the same result.
func TestKernelsAgree(t *testing.T) {
	kernels := availableKernels()
	ref := kernels[len(kernels)-1]
	require.Equal(t, "generic", ref.name)
	for _, p := range []problem{
		{false, false, 37, 53, 61, 1, 0, 2},
		{true, false, 64, 64, 64, 0.5, 1, 0},
		{false, true, 13, 97, 300, 1, -1, 1},
		{true, true, 29, 3, 41, 2, 0, 4},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d", p.m, p.n, p.k), func(t *testing.T) {
			refGot, _, ldc := p.run(t, rand.New(rand.NewPCG(5, 6)), ref, 1)
			for _, kern := range kernels[:len(kernels)-1] {
				got, _, _ := p.run(t, rand.New(rand.NewPCG(5, 6)), kern, 1)
				for i := range got {
					if math.IsNaN(float64(refGot[i])) {
						require.True(t, math.IsNaN(float64(got[i])), "%s: element %d", kern.name, i)
						continue
					}
					require.InDelta(t, refGot[i], got[i], 1e-5*float64(p.k), "%s vs generic: element %d (ldc %d)", kern.name, i, ldc)
				}
			}
		})
	}
}

func TestSgemmBetaZeroIgnoresNaN(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	b := []float32{5, 6, 7, 8}
	c := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.NaN()), 1}
	Sgemm(false, false, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2)
	assert.Equal(t, []float32{19, 22, 43, 50}, c)
}

func TestSgemmPanics(t *testing.T) {
	a := make([]float32, 6)
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"negative", func() { Sgemm(false, false, -1, 2, 2, 1, a, 2, a, 2, 0, a, 2) }, "gemm: Sgemm: dimensions m=-1 n=2 k=2 must be non-negative"},
		{"lda", func() { Sgemm(false, false, 2, 2, 3, 1, a, 2, a, 2, 0, a, 2) }, "gemm: Sgemm: lda = 2 must be at least max(1, 3), the row length of a as stored"},
		{"short c", func() { Sgemm(false, false, 2, 2, 2, 1, a, 2, a, 2, 0, a[:3], 2) }, "gemm: Sgemm: len(c) = 3 is shorter than the 2×2 matrix with stride 2 it must hold (4 elements)"},
		{"short b trans", func() { Sgemm(false, true, 2, 3, 2, 1, a, 2, a[:5], 2, 0, a, 3) }, "gemm: Sgemm: len(b) = 5 is shorter than the 3×2 matrix with stride 2 it must hold (6 elements)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.msg, tt.f) })
	}
}

func benchSizes() []int { return []int{256, 512, 1024} }

func benchInputs(n int) (a, b, c []float32) {
	r := rand.New(rand.NewPCG(7, 8))
	a, b, c = make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	randFill(r, a, n, n, n)
	randFill(r, b, n, n, n)
	return a, b, c
}

func reportGFLOPS(b *testing.B, n int) {
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkSgemm measures square products with this package (GOMAXPROCS
// goroutines; use -cpu 1,2 to vary), up to 2048 to compare with OpenBLAS
// (/work/shared/bench/gemm_py.py).
func BenchmarkSgemm(b *testing.B) {
	for _, n := range append(benchSizes(), 2048) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, y, z := benchInputs(n)
			for b.Loop() {
				Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
			}
			reportGFLOPS(b, n)
		})
	}
}

// BenchmarkGonumSgemm measures gonum's blas32.Gemm on the same products.
func BenchmarkGonumSgemm(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, y, z := benchInputs(n)
			A := blas32.General{Rows: n, Cols: n, Stride: n, Data: x}
			B := blas32.General{Rows: n, Cols: n, Stride: n, Data: y}
			C := blas32.General{Rows: n, Cols: n, Stride: n, Data: z}
			for b.Loop() {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, A, B, 0, C)
			}
			reportGFLOPS(b, n)
		})
	}
}

// TestSplitColumns checks which dimension a parallel product splits.
func TestSplitColumns(t *testing.T) {
	kern := &kernel{name: "test", mr: 12, nr: 32}
	tests := []struct {
		name           string
		transA, transB bool
		m, n           int
		want           bool
	}{
		{"square NN repeats the cheap B copy", false, false, 256, 256, false},
		{"square NT: equal costs split rows", false, true, 256, 256, false},
		{"square TT: only B is gathered", true, true, 256, 256, true},
		{"square TN: A is a copy", true, false, 256, 256, false},
		{"wide NN", false, false, 24, 4096, true},
		{"too few rows for a panel each", false, false, 20, 64, true},
		{"too few columns for a panel each", false, true, 64, 60, false},
		{"both too small", false, false, 10, 40, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, splitColumns(kern, 2, tt.transA, tt.transB, tt.m, tt.n, 100))
		})
	}
}

// BenchmarkSgemmShapes measures the products of the training workloads of
// `ember bench` (mlp: batch 128, 784→512→512; gru: batch 64, hidden 100;
// transformer: 2048 tokens of 256), where packing and fixed costs weigh
// more than in square products.
func BenchmarkSgemmShapes(b *testing.B) {
	shapes := []struct {
		name           string
		transA, transB bool
		m, n, k        int
	}{
		{"mlp_fc1_NT", false, true, 128, 512, 784},
		{"mlp_fc2_NT", false, true, 128, 512, 512},
		{"mlp_dx2_NN", false, false, 128, 512, 512},
		{"mlp_dw1_TN", true, false, 512, 784, 128},
		{"gru_step_NT", false, true, 64, 300, 100},
		{"gru_dh_NN", false, false, 64, 100, 300},
		{"ffn_NT", false, true, 2048, 1024, 256},
		{"ffn_dw_TN", true, false, 1024, 256, 2048},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(7, 8))
			ar, ac := s.m, s.k
			if s.transA {
				ar, ac = ac, ar
			}
			br, bc := s.k, s.n
			if s.transB {
				br, bc = bc, br
			}
			x, y, z := make([]float32, ar*ac), make([]float32, br*bc), make([]float32, s.m*s.n)
			randFill(r, x, ar, ac, ac)
			randFill(r, y, br, bc, bc)
			for b.Loop() {
				Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, x, ac, y, bc, 0, z, s.n)
			}
			b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestSgemmThreadsIdentical requires products split over goroutines (by
// rows over a shared packed B, or by columns) to equal the one-goroutine
// product bit for bit, across MC, KC and NC block edges.
func TestSgemmThreadsIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, kern := range availableKernels() {
		for _, p := range []problem{
			{false, false, 600, 2100, 40, 1, 0, 3},
			{false, false, 1000, 70, 790, 1, 0.5, 0},
			{true, false, 200, 200, 400, -1, 0, 1},
			{false, true, 97, 300, 100, 1, 1, 0},
			{true, true, 150, 45, 520, 2, 0, 1},
		} {
			t.Run(fmt.Sprintf("%s/%v%v_%dx%dx%d", kern.name, p.transA, p.transB, p.m, p.n, p.k), func(t *testing.T) {
				lda, ldb, ldc := p.k+p.pad, p.n+p.pad, p.n+p.pad
				if p.transA {
					lda = p.m + p.pad
				}
				if p.transB {
					ldb = p.k + p.pad
				}
				a, b := make([]float32, p.m*lda+p.k*lda), make([]float32, p.n*ldb+p.k*ldb)
				randFill(r, a, 1, len(a), len(a))
				randFill(r, b, 1, len(b), len(b))
				c0 := make([]float32, p.m*ldc)
				randFill(r, c0, 1, len(c0), len(c0))
				one := slices.Clone(c0)
				sgemm(kern, 1, p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, lda, b, ldb, p.beta, one, ldc)
				for _, threads := range []int{2, 3, 4} {
					got := slices.Clone(c0)
					sgemm(kern, threads, p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, lda, b, ldb, p.beta, got, ldc)
					require.Equal(t, one, got, "%d goroutines", threads)
				}
			})
		}
	}
}

// TestSgemmSharedPhases checks parallel products whose shared B is packed
// in several phases (a last-level cache smaller than B): one or two KC
// blocks per phase, a partial last phase, several column blocks, with and
// without beta, against the definition (and no write outside C) and
// against the one-goroutine product bit for bit.
func TestSgemmSharedPhases(t *testing.T) {
	for _, base := range availableKernels() {
		for _, blocks := range []int{1, 2} {
			kern := *base
			kern.nc = 3 * kern.nr
			kern.sharedElems = blocks * kern.kc * kern.nc
			for _, p := range []problem{
				{false, false, 90, 7*kern.nr + 3, 2*kern.kc + 50, 1, 0, 0},
				{true, false, 4*kern.nr + 33, 4 * kern.nr, 3*kern.kc + 1, -1, 0.5, 2},
			} {
				t.Run(fmt.Sprintf("%s/%dblocks/%v%v_%dx%dx%d", kern.name, blocks, p.transA, p.transB, p.m, p.n, p.k), func(t *testing.T) {
					require.False(t, splitColumns(&kern, 2, p.transA, p.transB, p.m, p.n, p.k), "the case must take sharedB")
					one, _, _ := p.run(t, rand.New(rand.NewPCG(1, 2)), base, 1)
					for _, threads := range []int{2, 3} {
						got, want, ldc := p.run(t, rand.New(rand.NewPCG(1, 2)), &kern, threads)
						checkClose(t, p, got, want, ldc)
						require.Equal(t, float32Bits(one), float32Bits(got), "%d goroutines", threads)
					}
				})
			}
		}
	}
}

// float32Bits returns the bits of xs, so that buffers holding NaN guards
// compare equal when they hold the same values.
func float32Bits(xs []float32) []uint32 {
	bits := make([]uint32, len(xs))
	for i, x := range xs {
		bits[i] = math.Float32bits(x)
	}
	return bits
}

// TestFitCaches checks the cache rules: MC and NC shrink, in whole
// panels, only where half the L2 (or L3) cannot hold a packed block.
func TestFitCaches(t *testing.T) {
	tuned := kernel{name: "test", mr: 12, nr: 32, mc: 96, kc: 384, nc: 2048}
	tests := []struct {
		name   string
		caches isa.Caches
		mc, nc int
		shared int // sharedElems: 0 leaves sharedB its default
	}{
		{"unknown caches", isa.Caches{}, 96, 2048, 0},
		{"Sapphire Rapids", isa.Caches{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20}, 96, 2048, 105 << 20 / 8},
		{"Zen 4", isa.Caches{L1D: 32 << 10, L2: 1 << 20, L3: 32 << 20}, 96, 2048, 4 << 20},
		// 256 KiB L2: half holds 85 rows of 384 floats, 84 in whole panels.
		{"small L2", isa.Caches{L2: 256 << 10}, 84, 2048, 0},
		// 4 MiB L3: half holds 1365 columns of 384 floats, 1344 in panels.
		{"small L3", isa.Caches{L3: 4 << 20}, 96, 1344, 512 << 10},
		// At least one KC×NR panel of B is shared.
		{"tiny caches", isa.Caches{L2: 16 << 10, L3: 16 << 10}, 12, 32, 384 * 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := fitCaches(tuned, tc.caches)
			assert.Equal(t, tc.mc, k.mc, "mc")
			assert.Equal(t, tc.nc, k.nc, "nc")
			assert.Equal(t, tc.shared, k.sharedElems, "sharedElems")
			assert.Equal(t, tuned.kc, k.kc, "kc is never changed")
		})
	}
	assert.Equal(t, 96, tuned.mc, "the tuned kernel is not modified")
}

// TestTakeRows checks that successive runs cover the rows once, in order,
// in whole panels of at most MC rows, shrinking as the rows run out but
// not below minRunPanels panels (except the last run).
func TestTakeRows(t *testing.T) {
	tests := []struct {
		m, threads, mr, mc int
		want               []int
	}{
		{1024, 2, 12, 96, []int{96, 96, 96, 96, 96, 96, 96, 96, 72, 48, 48, 48, 40}},
		{100, 4, 8, 96, []int{32, 32, 32, 4}},
		{5, 2, 12, 96, []int{5}},
		{200, 2, 12, 24, []int{24, 24, 24, 24, 24, 24, 24, 24, 8}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.m, "/", tt.threads), func(t *testing.T) {
			var next atomic.Int64
			var sizes []int
			at := 0
			for {
				i0, size := takeRows(&next, tt.m, tt.threads, tt.mr, tt.mc)
				if size == 0 {
					break
				}
				require.Equal(t, at, i0)
				at += size
				sizes = append(sizes, size)
			}
			assert.Equal(t, tt.want, sizes)
		})
	}
}

// dotKernels lists the dot kernels of this build with their names, the
// pure-Go twin last.
func dotKernels() (names []string, kernels []dotKernel) {
	for _, kern := range availableKernels() {
		if kern.dot != nil && !slices.Contains(names, kern.name) {
			names, kernels = append(names, kern.name), append(kernels, kern.dot)
		}
	}
	return append(names, "go"), append(kernels, dot4x4Go)
}

// TestDotKernels runs every dot kernel on one tile at depths 1…67 with
// padded rows, against the float64 inner products, storing into a C
// poisoned with NaN and adding to it; the kernels must agree with each
// other within rounding and leave everything outside the tile alone.
func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	names, kernels := dotKernels()
	for k := 1; k <= 67; k++ {
		lda, ldb, ldc := k+r.IntN(3), k+r.IntN(3), dotTile+1+r.IntN(2)
		a, b := make([]float32, 3*lda+k), make([]float32, 3*ldb+k)
		randFill(r, a, 1, len(a), len(a))
		randFill(r, b, 1, len(b), len(b))
		var want [dotTile][dotTile]float64
		for i := range dotTile {
			for j := range dotTile {
				for p := range k {
					want[i][j] += float64(a[i*lda+p]) * float64(b[j*ldb+p])
				}
			}
		}
		var first []float32
		for ki, dot := range kernels {
			all, c := guarded(dotTile, ldc)
			dot(k, a, lda, b, ldb, c, ldc, false)
			for idx, v := range c {
				i, j := idx/ldc, idx%ldc
				if j >= dotTile {
					require.True(t, math.IsNaN(float64(v)), "%s k=%d: C[%d][%d] outside the tile was written", names[ki], k, i, j)
					continue
				}
				require.InDelta(t, want[i][j], v, 1e-5*float64(k), "%s k=%d: C[%d][%d]", names[ki], k, i, j)
			}
			if first == nil {
				first = slices.Clone(c)
			}
			for i := range c {
				if !math.IsNaN(float64(first[i])) {
					require.InDelta(t, first[i], c[i], 1e-5*float64(k), "%s against %s, k=%d, element %d", names[ki], names[0], k, i)
				}
			}
			dot(k, a, lda, b, ldb, c, ldc, true)
			for i := range dotTile {
				for j := range dotTile {
					require.InDelta(t, 2*want[i][j], c[i*ldc+j], 2e-5*float64(k), "%s k=%d adding: C[%d][%d]", names[ki], k, i, j)
				}
			}
			for i, v := range all {
				if i < 64 || i >= len(all)-64 {
					require.True(t, math.IsNaN(float64(v)), "%s k=%d: guard element %d was written", names[ki], k, i)
				}
			}
		}
	}
}

// TestSgemmDot checks the dot path through sgemm for every kernel that has
// one and for the pure-Go twin: odd shapes at and around the tile edges
// and dotRows, storing into a poisoned C and adding to it, one goroutine
// and several (which must give the same bits).
func TestSgemmDot(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	kerns := []*kernel{}
	for _, kern := range availableKernels() {
		if kern.dot != nil {
			k := *kern
			k.dotTileCost = -1 // the dot path whatever the shape
			kerns = append(kerns, &k)
		}
	}
	twin := *genericKernel
	twin.name, twin.dot, twin.dotRows, twin.dotTileCost = "go", dot4x4Go, 64, -1
	kerns = append(kerns, &twin)
	for _, kern := range kerns {
		for _, p := range []problem{
			{false, true, 1, 1, 1, 1, 0, 0},
			{false, true, 1, 67, 33, 1, 0, 1},
			{false, true, 3, 5, 17, 1, 1, 0},
			{false, true, 4, 4, 16, 1, 0, 0},
			{false, true, 7, 13, 67, 1, -0.5, 2},
			{false, true, 64, 256, 784, 1, 0, 0},
			{false, true, 33, 10, 256, 1, 1, 3},
			{false, true, kern.dotRows, 31, 48, 1, 0, 1},
		} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d_b%g", kern.name, p.m, p.n, p.k, p.beta), func(t *testing.T) {
				require.True(t, useDot(kern, p.transA, p.transB, p.m, p.n, p.k, p.alpha))
				got, want, ldc := p.run(t, r, kern, 1)
				checkClose(t, p, got, want, ldc)
				for _, threads := range []int{2, 3} {
					again, _, _ := p.run(t, rand.New(rand.NewPCG(uint64(p.m), uint64(p.n))), kern, threads)
					one, _, _ := p.run(t, rand.New(rand.NewPCG(uint64(p.m), uint64(p.n))), kern, 1)
					requireSameBits(t, one, again)
				}
			})
		}
	}
}

// BenchmarkSgemmDot times products A·Bᵀ on one goroutine with the dot path
// and with packed panels, to set useDot's costs: a Linear layer's shapes
// (batch m, a 256×784 and a 10×256 weight) and shallower, wider ones.
func BenchmarkSgemmDot(b *testing.B) {
	for _, s := range []struct{ m, n, k int }{
		{1, 256, 784}, {16, 256, 784}, {32, 256, 784}, {64, 256, 784}, {128, 256, 784}, {32, 10, 256}, {64, 10, 256},
		{64, 1024, 64}, {64, 1024, 256}, {16, 1024, 128}, {4, 1024, 64}, {1, 1024, 32}, {1, 1024, 64}, {32, 256, 128},
	} {
		for _, path := range []string{"dot", "panels"} {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", s.m, s.n, s.k, path), func(b *testing.B) {
				kern := packKernel(s.m)
				if path == "panels" {
					kern = panelsOnly(kern)
				} else {
					k := *kern
					k.dotRows, k.dotTileCost = s.m, -1
					if k.dot == nil {
						k.dot = dot4x4Go
					}
					kern = &k
				}
				r := rand.New(rand.NewPCG(7, 8))
				x, w, c := make([]float32, s.m*s.k), make([]float32, s.n*s.k), make([]float32, s.m*s.n)
				randFill(r, x, 1, len(x), len(x))
				randFill(r, w, 1, len(w), len(w))
				for b.Loop() {
					sgemm(kern, 1, false, true, s.m, s.n, s.k, 1, x, s.k, w, s.k, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestUseDot checks which products take the dot path with an AVX-512
// kernel's settings: those BenchmarkSgemmDot found faster that way, and
// none that are not A·Bᵀ with alpha 1 and few rows.
func TestUseDot(t *testing.T) {
	kern := &kernel{name: "model", mr: 12, nr: 32, dot: dot4x4Go, dotRows: 64}
	for _, c := range []struct {
		transA, transB bool
		m, n, k        int
		alpha          float32
		want           bool
	}{
		{false, true, 32, 256, 784, 1, true},
		{false, true, 64, 256, 784, 1, true},
		{false, true, 1, 256, 784, 1, true},
		{false, true, 32, 10, 256, 1, true},
		{false, true, 4, 1024, 64, 1, true},
		{false, true, 64, 1024, 64, 1, false},
		{false, true, 64, 1024, 256, 1, false},
		{false, true, 16, 1024, 128, 1, false},
		{false, true, 32, 256, 128, 1, false},
		{false, true, 1, 1, 1, 1, false},
		{false, true, 65, 256, 784, 1, false},   // more rows than dotRows
		{false, true, 64, 256, 8192, 1, false},  // A larger than dotMaxA
		{false, true, 32, 256, 784, 0.5, false}, // alpha
		{true, true, 32, 256, 784, 1, false},
		{false, false, 32, 256, 784, 1, false},
	} {
		assert.Equal(t, c.want, useDot(kern, c.transA, c.transB, c.m, c.n, c.k, c.alpha), "%+v", c)
	}
	assert.False(t, useDot(panelsOnly(kern), false, true, 32, 256, 784, 1), "no dot kernel")
}
