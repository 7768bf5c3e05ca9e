// Package gemm is a cache-blocked, register-tiled single-precision matrix
// multiply (SGEMM) in the style of BLIS: panels of A and B are packed into
// contiguous buffers sized for the caches (MC×KC of A, KC×NC of B), and a
// micro-kernel computes one MR×NR tile of C at a time from those panels.
//
// On amd64 the micro-kernel is written in assembly (AVX-512F when the CPU
// has it, else AVX2+FMA), chosen at run time; on arm64 it is NEON assembly
// (12×8 and 8×8 tiles); elsewhere, under the purego build tag, or on older
// x86 CPUs a pure-Go kernel is used.
//
// The pure-Go kernel is scalar (Go does not vectorize): a 2×4 tile on amd64,
// whose accumulators fit its 15 float registers, 4×4 on arm64. At 1024² on
// one core of the 2-core Sapphire Rapids test machine it runs at 1.0× gonum's
// Sgemm (whose inner loops are SSE assembly) and 2.2× gonum built with
// -tags noasm; built with GOAMD64=v3, where the compiler fuses x*y+z into an
// FMA, 1.6× and 2.9×. That is the core's scalar limit: loops with every
// operand in registers peak at 6.1 GFLOP/s (separate multiply and add) and
// 9.3 (FMA), and the kernel alone reaches 6.3 and 7.8–8.3. See the README's
// "Pure-Go fallback" for the figures and the command.
package gemm

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/emberml/ember/tensor/internal/parallel"
	"github.com/emberml/ember/tensor/internal/pool"
)

// kernel describes one micro-kernel and the blocking it is tuned for.
type kernel struct {
	name       string
	mr, nr     int // register tile of C
	mc, kc, nc int // cache blocks: mc is a multiple of mr, nc of nr
	// sharedElems is the most elements of packed B a parallel product
	// shares at once (see sharedB): half the last-level cache (fitCaches),
	// or defaultSharedElems when 0.
	sharedElems int
	// fn adds the product of a packed mr×k panel of A (mr values per step of
	// k) and a packed k×nr panel of B (nr values per step of k) to the mr×nr
	// tile of C starting at c[0] whose rows are ldc elements apart; when add
	// is false it stores the product there instead, without reading C.
	fn func(k int, a, b, c []float32, ldc int, add bool)
	// dot, when set, computes products A·Bᵀ of at most dotRows rows
	// without packing (see sgemmDot); dotTileCost, when not zero, replaces
	// the cost model's dotTileCost (see useDot).
	dot         dotKernel
	dotRows     int
	dotTileCost int
}

// minParallelWork is the m·n·k product below which Sgemm stays on the calling
// goroutine: smaller products finish faster than goroutines start.
const minParallelWork = 1 << 18

// bufPool recycles packing buffers between calls, by size class: the
// packed A and B panels and the edge tile differ in size, and one pool for
// all of them would hand a tile back for a panel and drop it.
var bufPool pool.Pool[float32]

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, where op(X) is X or, when the matching trans flag is set, Xᵀ.
// op(A) is m×k, op(B) is k×n and C is m×n; lda, ldb and ldc are the row
// strides (in elements) of A, B and C as stored. When beta is zero C is not
// read, so it may hold NaN or Inf. Large products are split over
// runtime.GOMAXPROCS(0) goroutines; see SgemmThreads to choose the count.
//
// Sgemm panics, naming the broken rule, if a dimension is negative, a
// leading dimension is smaller than its stored row, or a slice is too short.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	SgemmThreads(0, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmThreads is Sgemm using at most threads goroutines; threads <= 0 means
// runtime.GOMAXPROCS(0). Small products always run on the calling goroutine.
// The micro-kernel is the one PackA would pick for m rows, which pads m
// least, so a product equals SgemmPacked's on the packed A, except a
// product A·Bᵀ of a few rows (see sgemmDot), which skips packing and agrees
// with it within rounding.
func SgemmThreads(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(packKernel(m), threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// checkMatrix panics unless a rows×cols row-major matrix with row stride ld
// fits in a slice of length n.
func checkMatrix(name string, rows, cols, ld, n int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: Sgemm: ld%s = %d must be at least max(1, %d), the row length of %s as stored", name, ld, cols, name))
	}
	if rows > 0 && cols > 0 && n < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: Sgemm: len(%s) = %d is shorter than the %d×%d matrix with stride %d it must hold (%d elements)", name, n, rows, cols, ld, (rows-1)*ld+cols))
	}
}

func sgemm(kern *kernel, threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: Sgemm: dimensions m=%d n=%d k=%d must be non-negative", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("a", ar, ac, lda, len(a))
	checkMatrix("b", br, bc, ldb, len(b))
	checkMatrix("c", m, n, ldc, len(c))
	if m == 0 || n == 0 {
		return
	}
	// With beta == 0 and a non-empty product, the first KC block overwrites
	// C instead (see blocked), so C is neither cleared nor read.
	overwrite := beta == 0 && k > 0 && alpha != 0
	if beta != 1 && !overwrite {
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if float64(m)*float64(n)*float64(k) < minParallelWork {
		threads = 1
	}
	if useDot(kern, transA, transB, m, n, k, alpha) {
		sgemmDot(kern.dot, threads, m, n, k, a, lda, b, ldb, c, ldc, !overwrite)
		return
	}
	if threads == 1 {
		blocked(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc, overwrite)
		return
	}
	if splitColumns(kern, threads, transA, transB, m, n, k) {
		// Split the columns of op(B) and C into runs of whole NR panels.
		per := roundUp((n+threads-1)/threads, kern.nr)
		parallel.Run((n+per-1)/per, func(t int) {
			j0 := t * per
			boff := j0
			if transB {
				boff = j0 * ldb
			}
			blocked(kern, transA, transB, m, min(per, n-j0), k, alpha, a, lda, b[boff:], ldb, c[j0:], ldc, overwrite)
		})
		return
	}
	sharedB(kern, threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc, overwrite)
}

// gatherCost is how many times dearer it is to pack an element of A or B
// from the layout where a packed panel row is strided in memory (A as stored,
// or Bᵀ) than from the one where it is a contiguous copy.
const gatherCost = 4

// splitColumns reports whether a parallel product should split the columns
// of C (each goroutine packs all of op(A) and its share of op(B)) rather than
// the rows (each packs its share of op(A) and all of op(B)). It picks the
// split that duplicates the cheaper packing, as long as the split dimension
// gives every goroutine at least one whole micro-panel; the other one
// otherwise.
func splitColumns(kern *kernel, threads int, transA, transB bool, m, n, k int) bool {
	rowsOK, colsOK := m >= threads*kern.mr, n >= threads*kern.nr
	if rowsOK != colsOK {
		return colsOK
	}
	if !rowsOK {
		return n >= m
	}
	costA, costB := float64(m)*float64(k), float64(k)*float64(n)
	if !transA {
		costA *= gatherCost
	}
	if transB {
		costB *= gatherCost
	}
	// Splitting columns repeats A's packing in every goroutine.
	return costA < costB
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// getBuf returns a pooled buffer of n elements (contents arbitrary).
func getBuf(n int) *[]float32 { return bufPool.Get(n) }

// blocked runs C += alpha·op(A)·op(B) on the calling goroutine with the
// BLIS loop nest: NC columns of B, KC depth, MC rows of A, then NR×MR tiles.
// With overwrite set it computes C = alpha·op(A)·op(B) instead, never reading
// C: the first KC block stores its tiles and later blocks add to them.
func blocked(kern *kernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, overwrite bool) {
	mr, nr := kern.mr, kern.nr
	kcMax := min(kern.kc, k)
	pa := getBuf(roundUp(min(kern.mc, m), mr) * kcMax)
	pb := getBuf(roundUp(min(kern.nc, n), nr) * kcMax)
	pt := getBuf(mr * nr)
	defer bufPool.Put(pa)
	defer bufPool.Put(pb)
	defer bufPool.Put(pt)
	bufA, bufB, tile := *pa, *pb, *pt
	for jc := 0; jc < n; jc += kern.nc {
		nb := min(kern.nc, n-jc)
		for pc := 0; pc < k; pc += kern.kc {
			kb := min(kern.kc, k-pc)
			add := pc > 0 || !overwrite
			packB(bufB, nr*kb, transB, b, ldb, pc, jc, kb, nb, nr)
			for ic := 0; ic < m; ic += kern.mc {
				mb := min(kern.mc, m-ic)
				packA(bufA, transA, a, lda, ic, pc, mb, kb, mr, alpha)
				macroKernel(kern, bufA, bufB, nr*kb, kb, mb, nb, c[ic*ldc+jc:], ldc, add, false, tile)
			}
		}
	}
}

// macroKernel adds (or, when add is false, stores) the product of the
// packed mb×kb block of A in ap (panels of MR rows, kb·MR apart) and the
// packed kb×nb block of B in bp (panels of NR columns, ps apart) to the
// mb×nb block of C at c[0], tile by tile; relu clamps each finished tile at
// zero. Edge tiles are computed whole into tile (MR×NR scratch) and only
// their part inside C is added or stored.
func macroKernel(kern *kernel, ap, bp []float32, ps, kb, mb, nb int, c []float32, ldc int, add, relu bool, tile []float32) {
	mr, nr := kern.mr, kern.nr
	for jr := 0; jr < nb; jr += nr {
		nrr := min(nr, nb-jr)
		bpj := bp[jr/nr*ps:]
		for ir := 0; ir < mb; ir += mr {
			mrr := min(mr, mb-ir)
			api := ap[ir*kb:]
			ci := ir*ldc + jr
			if mrr == mr && nrr == nr {
				kern.fn(kb, api, bpj, c[ci:], ldc, add)
				if relu {
					reluRows(c[ci:], ldc, mr, nr)
				}
				continue
			}
			kern.fn(kb, api, bpj, tile, nr, false)
			for i := range mrr {
				row := c[ci+i*ldc : ci+i*ldc+nrr]
				t := tile[i*nr : i*nr+nrr]
				if !add {
					copy(row, t)
					continue
				}
				for j := range row {
					row[j] += t[j]
				}
			}
			if relu {
				reluRows(c[ci:], ldc, mrr, nrr)
			}
		}
	}
}

// defaultSharedElems is sharedElems where the last-level cache is
// unknown: 16 MiB of floats.
const defaultSharedElems = 4 << 20

// sharedB runs C += alpha·op(A)·op(B) (or C = … with overwrite, as blocked)
// on threads goroutines that share the packed B, as BLIS parallelizes its
// loop over the rows of A. B is packed in phases: for each block of (at
// most NC) columns, as many KC blocks of depth as fit kern.sharedElems
// (half the last-level cache: all of k when B is small). In a phase the
// goroutines first pack its blocks together, a run of panels each, and
// then take runs of rows of A from a shared counter, each packing its rows
// of A (into a buffer of its own) and computing their rows of C against
// every block of the phase. So two goroutines read the B they share from
// the last-level cache, however large B is, rather than streaming it from
// memory, and a small B is packed and waited for once. Runs shrink as the
// rows run out (guided scheduling), so a goroutine held up by another
// process on a busy machine leaves little work behind. Every tile of C
// sees the same KC blocks in the same order as in blocked, so the result
// does not depend on the count.
func sharedB(kern *kernel, threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, overwrite bool) {
	mr, nr := kern.mr, kern.nr
	nc := kern.nc
	kcMax := min(kern.kc, k)
	nbpMax := roundUp(min(nc, n), nr)
	budget := kern.sharedElems
	if budget <= 0 {
		budget = defaultSharedElems
	}
	phase := kern.kc * max(1, budget/(kcMax*nbpMax)) // depth of one phase
	pb := getBuf(min(k, phase) * nbpMax)
	defer bufPool.Put(pb)
	bufB := *pb
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		nbp := roundUp(nb, nr)
		per := roundUp((nbp+threads-1)/threads, nr)
		for p0 := 0; p0 < k; p0 += phase {
			p1 := min(p0+phase, k)
			// KC block pc of the phase starts at bufB[(pc-p0)*nbp], its
			// panels kb·NR apart.
			onEach(threads, func(t int) {
				j0 := t * per
				if j0 >= nb {
					return
				}
				for pc := p0; pc < p1; pc += kern.kc {
					kb := min(kern.kc, p1-pc)
					packB(bufB[(pc-p0)*nbp+j0*kb:], nr*kb, transB, b, ldb, pc, jc+j0, kb, min(per, nb-j0), nr)
				}
			})
			var next atomic.Int64
			onEach(threads, func(int) {
				pa := getBuf(roundUp(min(kern.mc, m), mr) * kcMax)
				pt := getBuf(mr * nr)
				defer bufPool.Put(pa)
				defer bufPool.Put(pt)
				for {
					i0, mb := takeRows(&next, m, threads, mr, kern.mc)
					if mb == 0 {
						return
					}
					for pc := p0; pc < p1; pc += kern.kc {
						kb := min(kern.kc, p1-pc)
						packA(*pa, transA, a, lda, i0, pc, mb, kb, mr, alpha)
						macroKernel(kern, *pa, bufB[(pc-p0)*nbp:], nr*kb, kb, mb, nb, c[i0*ldc+jc:], ldc, pc > 0 || !overwrite, false, *pt)
					}
				}
			})
		}
	}
}

// minRunPanels is the fewest MR panels of rows takeRows hands out (while
// that many are left): each run reads every packed panel of the shared
// block of B, from the last-level cache, so runs of one panel would be
// slow.
const minRunPanels = 4

// takeRows takes the next run of rows [i0, i0+size) of m from next: a
// share of what is left (half of it over threads, in whole MR panels), at
// most mc and at least minRunPanels panels; size 0 when none are left.
func takeRows(next *atomic.Int64, m, threads, mr, mc int) (i0, size int) {
	for {
		at := int(next.Load())
		if at >= m {
			return m, 0
		}
		size = min(max(roundUp((m-at)/(2*threads), mr), min(minRunPanels*mr, mc)), mc, m-at)
		if next.CompareAndSwap(int64(at), int64(at+size)) {
			return at, size
		}
	}
}

// onEach calls f(0), …, f(threads-1) on up to threads goroutines (the
// calling one and parallel's persistent workers) and returns when all
// have.
func onEach(threads int, f func(t int)) { parallel.Run(threads, f) }

// packA copies alpha·op(A)[ic:ic+mb, pc:pc+kb] into dst as consecutive
// panels of mr rows, each stored k-major (mr values per step of k), padding
// the last panel with zeros.
func packA(dst []float32, transA bool, a []float32, lda, ic, pc, mb, kb, mr int, alpha float32) {
	for ir := 0; ir < mb; ir += mr {
		rows := min(mr, mb-ir)
		panel := dst[ir*kb : ir*kb+mr*kb]
		if rows < mr {
			clear(panel)
		}
		if transA {
			// op(A)[i][p] = a[p*lda+i]: rows of the panel are contiguous.
			for p := range kb {
				src := a[(pc+p)*lda+ic+ir:][:rows]
				d := panel[p*mr : p*mr+rows]
				if alpha == 1 {
					if rows == 12 {
						// A fixed-size array copy avoids a memmove call.
						*(*[12]float32)(d) = [12]float32(src)
						continue
					}
					copy(d, src)
					continue
				}
				for r, v := range src {
					d[r] = alpha * v
				}
			}
			continue
		}
		// op(A)[i][p] = a[i*lda+p]: the rows of A run along k, and the
		// panel is their transpose (scaled by alpha, when it is not 1).
		if alpha == 1 {
			transpose(panel, mr, a[(ic+ir)*lda+pc:], lda, rows, kb)
			continue
		}
		if rows == 12 && mr == 12 {
			base := (ic+ir)*lda + pc
			packRows12(panel, a[base:], lda, kb, alpha)
			continue
		}
		for r := range rows {
			src := a[(ic+ir+r)*lda+pc:][:kb]
			for p, v := range src {
				panel[p*mr+r] = alpha * v
			}
		}
	}
}

// packB copies op(B)[pc:pc+kb, jc:jc+nb] into dst as consecutive panels of
// nr columns stored ps (at least nr*kb) elements apart, each stored k-major
// (nr values per step of k), padding the last panel with zeros.
func packB(dst []float32, ps int, transB bool, b []float32, ldb, pc, jc, kb, nb, nr int) {
	if !transB {
		// op(B)[p][j] = b[p*ldb+j]: deal each row of B out to the panels.
		for p := range kb {
			PanelRow(dst, ps, p, nr, b[(pc+p)*ldb+jc:][:nb])
		}
		return
	}
	for jr := 0; jr < nb; jr += nr {
		cols := min(nr, nb-jr)
		panel := dst[jr/nr*ps:][:nr*kb]
		if cols < nr {
			clear(panel)
		}
		// op(B)[p][j] = b[j*ldb+p]: the rows of B (columns of op(B)) run
		// along k, and the panel is their transpose.
		transpose(panel, nr, b[(jc+jr)*ldb+pc:], ldb, cols, kb)
	}
}

// packRows12 interleaves the first kb elements of 12 rows of a (rows lda
// apart, starting at a[0]) into dst, 12 values per step of k, scaling by
// alpha. Writing dst sequentially from 12 read streams, with the rows hoisted
// into slices of equal length, keeps the loop free of bounds checks.
func packRows12(dst, a []float32, lda, kb int, alpha float32) {
	r0 := a[0*lda:][:kb]
	r1 := a[1*lda:][:kb]
	r2 := a[2*lda:][:kb]
	r3 := a[3*lda:][:kb]
	r4 := a[4*lda:][:kb]
	r5 := a[5*lda:][:kb]
	r6 := a[6*lda:][:kb]
	r7 := a[7*lda:][:kb]
	r8 := a[8*lda:][:kb]
	r9 := a[9*lda:][:kb]
	r10 := a[10*lda:][:kb]
	r11 := a[11*lda:][:kb]
	dst = dst[:12*kb]
	for p := range r0 {
		d := dst[12*p : 12*p+12 : 12*p+12]
		d[0], d[1], d[2], d[3] = alpha*r0[p], alpha*r1[p], alpha*r2[p], alpha*r3[p]
		d[4], d[5], d[6], d[7] = alpha*r4[p], alpha*r5[p], alpha*r6[p], alpha*r7[p]
		d[8], d[9], d[10], d[11] = alpha*r8[p], alpha*r9[p], alpha*r10[p], alpha*r11[p]
	}
}

// interleave4 copies the first kb elements of 4 rows of a (rows lda apart,
// starting at a[0]) into dst so that step p of k puts the four values at
// dst[p*w : p*w+4].
func interleave4(dst []float32, w int, a []float32, lda, kb int) {
	r0 := a[0*lda:][:kb]
	r1 := a[1*lda:][:kb]
	r2 := a[2*lda:][:kb]
	r3 := a[3*lda:][:kb]
	for p := range r0 {
		d := dst[p*w : p*w+4 : p*w+4]
		d[0], d[1], d[2], d[3] = r0[p], r1[p], r2[p], r3[p]
	}
}
