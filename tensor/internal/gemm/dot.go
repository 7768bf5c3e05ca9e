package gemm

import "github.com/emberml/ember/tensor/internal/parallel"

// The dot path computes C = A·Bᵀ for a few rows of A (a batch through a
// Linear layer's weight, stored out×in) without packing: every element of
// C is the inner product of a row of A and a row of B, and both rows run
// along k in memory, so a tile kernel reads them as they are. The panel
// path would first transpose all of B into NR-wide panels, n·k strided
// reads and writes on every call that do not shrink with m; for a weight of
// 256×784 that pass costs about as much as the multiply-adds of 16 rows.
// The dot path pays instead for every 4×4 tile of C a call and the folding
// of 16 lanes into each sum, which only a deep k hides, and for many rows
// the packed panels pay off again (the outer-product kernels do more
// multiply-adds per load). useDot weighs the two.
//
// Measured with BenchmarkSgemmDot on one core of the Sapphire Rapids test
// machine, dot path against panels (µs): a 784-deep 256-row weight at m =
// 1, 16, 32, 64, 128: 17/96, 64/115, 134/178, 238/290, 554/669; a 256-deep
// 10-row one at m = 32, 64: 2.9/9.1, 6.4/15.2; but a 1024-row weight 64
// deep at m = 64: 229/112, and 128 deep at m = 16: 91/77. A tile's fixed
// cost came to about that of packing 140 elements of B, and the
// multiply-adds the panels waste on columns padded up to NR to about a
// twelfth of that each. The dot path keeps a run of rows of B in L1 while
// all of A streams past from L2, so A must fit there (dotMaxA). The pure-Go
// twin ran no faster than the pure-Go panel kernel (0.7 against 1.0 GFLOP/s
// at m = 1, equal at 16 and 64), so builds without the assembly keep the
// panels and the twin only checks the assembly.

// dotMaxA is the most elements of A (1 MiB, half a core's L2) for which
// sgemm takes the dot path.
const dotMaxA = 1 << 18

// dotTileCost is the fixed cost of one 4×4 tile of the dot path in units
// of packing one element of B, and dotPadFMAs how many multiply-adds cost
// as much as packing one element: see above.
const (
	dotTileCost = 140
	dotPadFMAs  = 12
)

// dotKernel computes the 4×4 tile C[i][j] = Σ_{p<k} a[i*lda+p]·b[j*ldb+p]
// (i, j < 4) into c[i*ldc+j], adding it there when add is set.
type dotKernel func(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool)

// dotTile is the side of the tiles a dotKernel computes.
const dotTile = 4

// dotL1B is how many elements of B (32 KiB) dotBlock keeps in L1 at once.
const dotL1B = 8 << 10

// useDot reports whether sgemm computes the product with kern's dot path:
// op(A) as stored and B transposed, alpha 1, at most kern.dotRows rows and
// dotMaxA elements of A, and a packing pass (plus the multiply-adds on
// padded columns) dearer than the tiles' fixed cost. A kernel's
// dotTileCost replaces dotTileCost when set (tests set it below zero to
// take the dot path whatever the shape).
func useDot(kern *kernel, transA, transB bool, m, n, k int, alpha float32) bool {
	if kern.dot == nil || transA || !transB || alpha != 1 || m > kern.dotRows || m*k > dotMaxA {
		return false
	}
	tileCost := dotTileCost
	if kern.dotTileCost != 0 {
		tileCost = kern.dotTileCost
	}
	tiles := (m + dotTile - 1) / dotTile * ((n + dotTile - 1) / dotTile)
	saved := n*k + m*k*(roundUp(n, kern.nr)-n)/dotPadFMAs
	return saved > tileCost*tiles
}

// sgemmDot computes C = A·Bᵀ (C += A·Bᵀ when add is set) for the m×k A and
// n×k B as stored, on up to threads goroutines that each take a run of
// whole tiles of columns. Every element is computed the same way whatever
// the split, so the result does not depend on threads.
func sgemmDot(dot dotKernel, threads, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool) {
	if threads == 1 {
		dotBlock(dot, m, n, k, a, lda, b, ldb, c, ldc, add)
		return
	}
	per := roundUp((n+threads-1)/threads, dotTile)
	parallel.Run((n+per-1)/per, func(t int) {
		j0 := t * per
		dotBlock(dot, m, min(per, n-j0), k, a, lda, b[j0*ldb:], ldb, c[j0:], ldc, add)
	})
}

// dotBlock is sgemmDot on the calling goroutine. It walks the tiles of
// four rows of B in the outer loop, so that those rows stay in L1 while
// every row of A streams past them. The last rows of A and of B, when
// their count is not a multiple of four, are copied into zero-padded
// scratch rows, and the tiles that hang over C's edge go through a scratch
// tile of which only the part inside C is stored.
func dotBlock(dot dotKernel, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool) {
	mFull, nFull := m/dotTile*dotTile, n/dotTile*dotTile
	var aEdge, bEdge, tile []float32
	if mFull < m || nFull < n {
		p := getBuf(dotTile * dotTile)
		defer bufPool.Put(p)
		tile = *p
	}
	if mFull < m {
		p := getBuf(dotTile * k)
		defer bufPool.Put(p)
		aEdge = padRows(*p, a[mFull*lda:], lda, m-mFull, k)
	}
	if nFull < n {
		p := getBuf(dotTile * k)
		defer bufPool.Put(p)
		bEdge = padRows(*p, b[nFull*ldb:], ldb, n-nFull, k)
	}
	// A run of tiles of B (as many as fit dotL1B) stays in L1 while each
	// tile of A, loaded once from L2, meets all of them.
	run := max(1, dotL1B/(dotTile*k)) * dotTile
	for j0 := 0; j0 < n; j0 += run {
		for i := 0; i < m; i += dotTile {
			ai, ldai := a[i*lda:], lda
			if i == mFull {
				ai, ldai = aEdge, k
			}
			for j := j0; j < min(j0+run, n); j += dotTile {
				bj, ldbj := b[j*ldb:], ldb
				if j == nFull {
					bj, ldbj = bEdge, k
				}
				ci := c[i*ldc+j:]
				if i < mFull && j < nFull {
					dot(k, ai, ldai, bj, ldbj, ci, ldc, add)
					continue
				}
				dot(k, ai, ldai, bj, ldbj, tile, dotTile, false)
				for r := range min(dotTile, m-i) {
					row := ci[r*ldc : r*ldc+min(dotTile, n-j)]
					t := tile[r*dotTile:]
					if !add {
						copy(row, t)
						continue
					}
					for q := range row {
						row[q] += t[q]
					}
				}
			}
		}
	}
}

// padRows copies rows (fewer than dotTile) rows of k elements of src, lds
// apart, into dst as dotTile rows of k, the missing ones zero, and returns
// dst's first dotTile·k elements.
func padRows(dst, src []float32, lds, rows, k int) []float32 {
	dst = dst[:dotTile*k]
	for r := range dotTile {
		row := dst[r*k : (r+1)*k]
		if r < rows {
			copy(row, src[r*lds:r*lds+k])
			continue
		}
		clear(row)
	}
	return dst
}

// dot4x4Go is the pure-Go twin of the assembly dot kernels: the 4×4 tile of
// inner products, each accumulated in order along k. Its sums are rounded
// differently from the assembly's (16 partial sums folded at the end), so
// the two agree within rounding, not bit for bit. The tests check the
// assembly against it; products do not use it (see above).
func dot4x4Go(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool) {
	b0, b1, b2, b3 := b[:k], b[ldb:ldb+k], b[2*ldb:2*ldb+k], b[3*ldb:3*ldb+k]
	for i := range dotTile {
		ar := a[i*lda : i*lda+k]
		// Equal lengths let the compiler drop the bounds checks.
		b0, b1, b2, b3 := b0[:len(ar)], b1[:len(ar)], b2[:len(ar)], b3[:len(ar)]
		var s row4
		for p, x := range ar {
			s.c0 += x * b0[p]
			s.c1 += x * b1[p]
			s.c2 += x * b2[p]
			s.c3 += x * b3[p]
		}
		s.put((*[4]float32)(c[i*ldc:]), add)
	}
}
