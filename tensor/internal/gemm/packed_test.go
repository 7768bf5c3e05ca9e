package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSgemmPackedMatchesSgemm requires SgemmPacked on a pre-packed A to give
// exactly Sgemm's result on packed panels (same blocking, same reduction
// order) for every kernel, on odd sizes, across the KC and NC blocks and
// both parallel splits, with C poisoned with NaN outside and, for
// beta = 0, inside.
func TestSgemmPackedMatchesSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ps := []problem{
		{false, false, 1, 1, 1, 1, 0, 0},
		{false, false, 13, 17, 31, 1, 0, 2},
		{true, false, 29, 67, 5, -0.5, 1, 0},
		{false, true, 67, 33, 48, 2.5, 0, 3},
		{true, true, 7, 3, 12, 1, 0.5, 1},
		{false, false, 157, 90, 530, 1, 0, 2},
		{false, true, 70, 2100, 9, 1, 1, 0},
		{true, false, 40, 70, 400, 1, 0, 0},
		{false, false, 5, 0, 3, 1, 0, 0},
		{false, false, 4, 5, 0, 1, 0.5, 1},
	}
	for _, kern := range availableKernels() {
		for _, threads := range []int{1, 2, 3} {
			for _, p := range ps {
				t.Run(fmt.Sprintf("%s/t%d/%v%v_%dx%dx%d", kern.name, threads, p.transA, p.transB, p.m, p.n, p.k), func(t *testing.T) {
					ar, ac := p.m, p.k
					if p.transA {
						ar, ac = p.k, p.m
					}
					br, bc := p.k, p.n
					if p.transB {
						br, bc = p.n, p.k
					}
					lda, ldb, ldc := max(ac, 1)+p.pad, max(bc, 1)+p.pad, max(p.n, 1)+p.pad
					_, a := guarded(ar, lda)
					_, b := guarded(br, ldb)
					randFill(r, a, ar, ac, lda)
					randFill(r, b, br, bc, ldb)
					wantAll, want := guarded(p.m, ldc)
					gotAll, got := guarded(p.m, ldc)
					if p.beta != 0 {
						randFill(r, want, p.m, p.n, ldc)
						copy(got, want)
					}
					sgemm(panelsOnly(kern), threads, p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, lda, b, ldb, p.beta, want, ldc)
					buf := make([]float32, packedSize(kern, p.m, p.k)+5)
					for i := range buf {
						buf[i] = float32(math.NaN())
					}
					pa := packAWith(kern, buf, p.transA, p.m, p.k, p.alpha, a, lda)
					require.Equal(t, p.m, pa.Rows())
					require.Equal(t, p.k, pa.Depth())
					SgemmPacked(threads, &pa, p.n, DenseB(p.transB, b, ldb), p.beta, got, ldc)
					requireSameBits(t, wantAll, gotAll)
					if p.beta != 0 || p.k == 0 {
						return
					}
					// Both parallel splits, whichever SgemmPacked picks
					// (the shared B only where its columns fit one block).
					for _, byRows := range []bool{false, true} {
						if byRows && (p.n > kern.nc || p.n == 0 || p.m == 0) {
							continue
						}
						for i := range got {
							got[i] = float32(math.NaN())
						}
						if byRows {
							sharedRowsPacked(&pa, p.n, DenseB(p.transB, b, ldb), got, ldc, true, threads, Epilogue{})
						} else {
							colsPacked(&pa, p.n, DenseB(p.transB, b, ldb), got, ldc, true, threads, Epilogue{})
						}
						requireSameBits(t, wantAll, gotAll)
					}
				})
			}
		}
	}
}

func TestPackAPanics(t *testing.T) {
	a := make([]float32, 12)
	require.PanicsWithValue(t, "gemm: PackA: dst has 3 elements, the packed 3×4 operand needs "+fmt.Sprint(PackedSize(3, 4)),
		func() { PackAInto(make([]float32, 3), false, 3, 4, 1, a, 4) })
	require.Panics(t, func() { PackA(false, 4, 4, 1, a, 4) })
	require.Panics(t, func() { SgemmPacked(1, PackA(false, 3, 4, 1, a, 4), -1, DenseB(false, a, 1), 0, a, 1) })
}

// requireSameBits requires got to equal want element for element, NaN
// matching NaN.
func requireSameBits(t *testing.T, want, got []float32) {
	t.Helper()
	for i := range want {
		if math.IsNaN(float64(want[i])) {
			require.True(t, math.IsNaN(float64(got[i])), "element %d: got %v, want NaN", i, got[i])
			continue
		}
		require.Equal(t, want[i], got[i], "element %d", i)
	}
}

// TestPackKernel checks the kernel choice by row count: the fastest kernel
// unless one with the same panels pads at least 5% fewer rows.
func TestPackKernel(t *testing.T) {
	ks := availableKernels()
	if ks[0].name == "neon" {
		for m, want := range map[int]string{64: "neon8x8", 8: "neon8x8", 16: "neon8x8", 3: "neon8x8", 12: "neon", 24: "neon", 96: "neon", 100: "neon", 128: "neon"} {
			require.Equal(t, want, packKernel(m).name, "m = %d", m)
		}
		require.Equal(t, packedSize(packKernel(64), 64, 10), PackedSize(64, 10))
		return
	}
	if ks[0].name != "avx512" {
		require.Same(t, ks[0], packKernel(64))
		return
	}
	for m, want := range map[int]string{64: "avx512x8", 8: "avx512x8", 16: "avx512x8", 12: "avx512", 128: "avx512", 256: "avx512", 512: "avx512", 3: "avx512x8", 100: "avx512"} {
		require.Equal(t, want, packKernel(m).name, "m = %d", m)
	}
	require.Equal(t, packedSize(packKernel(64), 64, 10), PackedSize(64, 10))
}

// TestSgemmPackedEpilogue checks the initial values and the ReLU applied
// per block against Sgemm with beta = 1 on the same initial C followed by a
// ReLU, bit for bit, for every kernel, both parallel splits and odd sizes
// (edge tiles, several KC blocks), with a NaN that must survive the ReLU.
func TestSgemmPackedEpilogue(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, kern := range availableKernels() {
		for _, sz := range [][3]int{{1, 1, 1}, {13, 70, 31}, {29, 33, 400}, {64, 90, 5}, {7, 3, 0}, {5, 4133, 9}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, threads := range []int{1, 2, 3} {
				for _, byRows := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%dx%dx%d/t%d/rows=%v", kern.name, m, n, k, threads, byRows), func(t *testing.T) {
						ldc := n + 3
						a := make([]float32, m*max(k, 1))
						b := make([]float32, max(k, 1)*n)
						init := make([]float32, m*ldc)
						randFill(r, a, m, k, max(k, 1))
						randFill(r, b, k, n, n)
						randFill(r, init, m, n, ldc)
						init[ldc*(m-1)] = float32(math.NaN())
						_, want := guarded(m, ldc)
						_, got := guarded(m, ldc)
						for i := range m {
							copy(want[i*ldc:][:n], init[i*ldc:][:n])
						}
						sgemm(kern, 1, false, false, m, n, k, 1, a, max(k, 1), b, n, 1, want, ldc)
						for i := range m {
							for j, v := range want[i*ldc:][:n] {
								if v < 0 {
									want[i*ldc+j] = 0
								}
							}
						}
						pa := packAWith(kern, make([]float32, packedSize(kern, m, k)), false, m, k, 1, a, max(k, 1))
						ep := Epilogue{Relu: true, Init: func(c []float32, ld, i0, mi, j0, nj int) {
							require.Equal(t, ldc, ld)
							for i := range mi {
								copy(c[i*ld:][:nj], init[(i0+i)*ldc+j0:][:nj])
							}
						}}
						if k == 0 {
							SgemmPackedEpilogue(threads, &pa, n, DenseB(false, b, n), got, ldc, ep)
						} else if byRows {
							sharedRowsPacked(&pa, n, DenseB(false, b, n), got, ldc, false, threads, ep)
						} else {
							colsPacked(&pa, n, DenseB(false, b, n), got, ldc, false, threads, ep)
						}
						requireSameBits(t, want, got)
						require.True(t, math.IsNaN(float64(got[ldc*(m-1)])))
					})
				}
			}
		}
	}
	_, c := guarded(13, 70)
	pa := PackA(false, 13, 31, 1, make([]float32, 13*31), 31)
	SgemmPackedEpilogue(2, pa, 70, DenseB(false, make([]float32, 31*70), 70), c, 70, Epilogue{})
	for i := range c {
		require.Zero(t, c[i], "a nil Init overwrites C")
	}
	require.Panics(t, func() { SgemmPackedEpilogue(1, pa, -1, nil, c, 70, Epilogue{}) })
}

// TestPackBMatchesSgemm requires SgemmPrepacked on operands packed by
// PackAInto and PackB to give exactly Sgemm's result on packed panels, on odd sizes, across
// KC blocks, with B as stored and transposed, and C poisoned outside.
func TestPackBMatchesSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, p := range []problem{
		{false, false, 1, 1, 1, 1, 0, 0},
		{false, true, 64, 300, 100, 1, 0, 1},
		{false, false, 64, 100, 300, 1, 0, 0},
		{false, true, 13, 67, 31, 1, 0, 2},
		{false, false, 29, 37, 500, 1, 0, 3},
		{false, true, 7, 5, 0, 1, 0, 0},
	} {
		t.Run(fmt.Sprintf("%v_%dx%dx%d", p.transB, p.m, p.n, p.k), func(t *testing.T) {
			br, bc := p.k, p.n
			if p.transB {
				br, bc = p.n, p.k
			}
			lda, ldb, ldc := max(p.k, 1)+p.pad, max(bc, 1)+p.pad, max(p.n, 1)+p.pad
			_, a := guarded(p.m, lda)
			_, b := guarded(br, ldb)
			randFill(r, a, p.m, p.k, lda)
			randFill(r, b, br, bc, ldb)
			wantAll, want := guarded(p.m, ldc)
			gotAll, got := guarded(p.m, ldc)
			sgemm(panelsOnly(packKernel(p.m)), 0, false, p.transB, p.m, p.n, p.k, 1, a, lda, b, ldb, 0, want, ldc)
			l := PackedBLayout(p.m, p.k, p.n)
			packed := make([]float32, l.Size())
			PackB(l, packed, p.transB, b, ldb)
			pa := PackAInto(make([]float32, PackedSize(p.m, p.k)), false, p.m, p.k, 1, a, lda)
			SgemmPrepacked(&pa, packed, p.n, got, ldc)
			requireSameBits(t, wantAll, gotAll)
		})
	}
	l := PackedBLayout(4, 3, 5)
	require.Panics(t, func() { PackB(l, make([]float32, l.Size()-1), false, make([]float32, 15), 5) })
	require.Panics(t, func() { PackB(l, make([]float32, l.Size()), true, make([]float32, 14), 3) })
}

// panelsOnly returns a copy of kern without its dot path, so that sgemm
// packs panels for every product, as SgemmPacked does.
func panelsOnly(kern *kernel) *kernel {
	k := *kern
	k.dot = nil
	return &k
}
