package gemm

import (
	"fmt"
	"runtime"

	"github.com/emberml/ember/tensor/internal/vec"
)

// PackedA is alpha·op(A), an m×k left operand, packed once into the
// micro-kernel's panel layout so that products with it (SgemmPacked) skip
// packing A: for each KC-deep block of k, the rows in panels of MR, each
// panel stored k-major. A PackedA is read-only after packing and safe for
// concurrent use. It is tied to the micro-kernel chosen when it was packed
// (by its row count, see PackedSize).
type PackedA struct {
	kern *kernel
	m, k int
	mp   int // m rounded up to kern.mr
	data []float32
}

// Rows returns m, the number of rows of op(A).
func (p *PackedA) Rows() int { return p.m }

// Depth returns k, the number of columns of op(A).
func (p *PackedA) Depth() int { return p.k }

// PackedSize returns the number of float32 elements PackAInto needs for an
// m×k operand.
func PackedSize(m, k int) int {
	return packedSize(packKernel(m), m, k)
}

// packKernel picks the micro-kernel for a packed operand of m rows: the
// fastest one, or a kernel with the same B panels and fewer rows when that
// pads m by at least 5% less (the 8-row AVX-512 kernel for 64 rows).
func packKernel(m int) *kernel {
	ks := availableKernels()
	best := ks[0]
	for _, k := range ks[1:] {
		if k.nr == best.nr && k.kc == best.kc && 20*(roundUp(m, best.mr)-roundUp(m, k.mr)) >= m {
			return k
		}
	}
	return best
}

func packedSize(kern *kernel, m, k int) int { return roundUp(m, kern.mr) * k }

// PackA packs alpha·op(A) (m×k; A is row-major with row stride lda, and
// op(A) is Aᵀ when transA is set) into a fresh PackedA.
func PackA(transA bool, m, k int, alpha float32, a []float32, lda int) *PackedA {
	p := PackAInto(make([]float32, PackedSize(m, k)), transA, m, k, alpha, a, lda)
	return &p
}

// PackAInto is PackA writing the panels into dst, which must hold at least
// PackedSize(m, k) elements and is owned by the result until it is dropped.
func PackAInto(dst []float32, transA bool, m, k int, alpha float32, a []float32, lda int) PackedA {
	return packAWith(packKernel(m), dst, transA, m, k, alpha, a, lda)
}

func packAWith(kern *kernel, dst []float32, transA bool, m, k int, alpha float32, a []float32, lda int) PackedA {
	if m < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: PackA: dimensions m=%d k=%d must be non-negative", m, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	checkMatrix("a", ar, ac, lda, len(a))
	mp := roundUp(m, kern.mr)
	if len(dst) < mp*k {
		panic(fmt.Sprintf("gemm: PackA: dst has %d elements, the packed %d×%d operand needs %d", len(dst), m, k, mp*k))
	}
	for pc := 0; pc < k; pc += kern.kc {
		kb := min(kern.kc, k-pc)
		if m > 0 {
			packA(dst[pc*mp:], transA, a, lda, 0, pc, m, kb, kern.mr, alpha)
		}
	}
	return PackedA{kern: kern, m: m, k: k, mp: mp, data: dst[:mp*k]}
}

// BPacker writes rows [pc, pc+kb) and columns [jc, jc+nb) of a k×n right
// operand into dst as consecutive panels of nr columns, panel i (columns
// jc+i*nr onwards) starting at dst[i*ps] (ps >= nr*kb) and stored k-major,
// nr values per step of k; the columns of the last panel past nb only
// feed columns of C that are dropped (PanelRow zeroes them). PanelRow and
// PanelRowPart write such rows. A BPacker lets
// SgemmPacked read B from any layout, such as an image it lowers on the
// fly, and may be called from several goroutines at once, for disjoint
// column ranges.
type BPacker func(dst []float32, ps, pc, kb, jc, nb, nr int)

// DenseB returns the BPacker of a row-major matrix b with row stride ldb,
// used as op(B) = B, or Bᵀ when transB is set.
func DenseB(transB bool, b []float32, ldb int) BPacker {
	return func(dst []float32, ps, pc, kb, jc, nb, nr int) {
		packB(dst, ps, transB, b, ldb, pc, jc, kb, nb, nr)
	}
}

// SgemmPacked computes C = a·op(B) + beta·C, where a is a packed m×k
// operand (alpha already applied), op(B) is the k×n matrix that packB
// writes, and C is m×n, row-major with row stride ldc. When beta is zero C
// is not read. It uses at most threads goroutines (threads <= 0 means
// runtime.GOMAXPROCS(0)), splitting the columns of C (each goroutine packs
// only its own columns of B) or, when they are too few, the rows; the
// result does not depend on the split, and equals Sgemm's on the unpacked
// operands.
func SgemmPacked(threads int, a *PackedA, n int, packB BPacker, beta float32, c []float32, ldc int) {
	m, k := a.m, a.k
	if n < 0 {
		panic(fmt.Sprintf("gemm: SgemmPacked: n = %d must be non-negative", n))
	}
	checkMatrix("c", m, n, ldc, len(c))
	if m == 0 || n == 0 {
		return
	}
	overwrite := beta == 0 && k > 0
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
	if k == 0 {
		return
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if float64(m)*float64(n)*float64(k) < minParallelWork {
		threads = 1
	}
	runPacked(a, n, packB, c, ldc, overwrite, threads, Epilogue{})
}

// Epilogue is what SgemmPackedEpilogue does around the product on each
// goroutine's block of C, while the block is still in cache.
type Epilogue struct {
	// Init, when not nil, fills rows [i0, i0+m) and columns [j0, j0+n) of
	// C (c[0] being row i0, column j0; rows ldc apart) before the product
	// is added to them; when nil the product overwrites C.
	Init func(c []float32, ldc, i0, m, j0, n int)
	// Relu clamps each finished tile of C at zero (NaN stays NaN).
	Relu bool
}

// SgemmPackedEpilogue computes C = Init + a·op(B), or C = a·op(B) when
// ep.Init is nil, and then max(C, 0) when ep.Relu is set, where a is a
// packed m×k operand, op(B) the k×n matrix packB writes and C is m×n,
// row-major with row stride ldc. The initial values and the ReLU are
// applied by the goroutine computing each block of C, as SgemmPacked splits
// the work over at most threads goroutines.
func SgemmPackedEpilogue(threads int, a *PackedA, n int, packB BPacker, c []float32, ldc int, ep Epilogue) {
	m, k := a.m, a.k
	if n < 0 {
		panic(fmt.Sprintf("gemm: SgemmPackedEpilogue: n = %d must be non-negative", n))
	}
	checkMatrix("c", m, n, ldc, len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if ep.Init != nil {
			ep.Init(c, ldc, 0, m, 0, n)
		} else {
			for i := range m {
				clear(c[i*ldc:][:n])
			}
		}
		if ep.Relu {
			reluRows(c, ldc, m, n)
		}
		return
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if float64(m)*float64(n)*float64(k) < minParallelWork {
		threads = 1
	}
	runPacked(a, n, packB, c, ldc, ep.Init == nil, threads, ep)
}

// runPacked runs the product over threads goroutines (or on the calling
// goroutine when there are not two panels to share), in one of two ways,
// whichever leaves the busiest goroutine the least work (splitRows): each
// goroutine takes a run of whole NR panels of columns, packing only its
// own part of B (blockedPacked), or, for few columns, the goroutines
// first pack B together into one shared copy and then each takes a run
// of whole MR panels of rows (sharedRowsPacked), so that each reads only
// its part of the packed A, which at batch-1 convolution shapes (a large
// weight, 49 or 196 output positions) is what the time goes on.
func runPacked(a *PackedA, n int, packB BPacker, c []float32, ldc int, overwrite bool, threads int, ep Epilogue) {
	if threads > 1 && splitRows(a, n, threads) {
		sharedRowsPacked(a, n, packB, c, ldc, overwrite, threads, ep)
		return
	}
	colsPacked(a, n, packB, c, ldc, overwrite, threads, ep)
}

// colsPacked runs blockedPacked on up to threads goroutines, each taking
// a run of whole NR panels of columns of C and packing its own part of B.
func colsPacked(a *PackedA, n int, packB BPacker, c []float32, ldc int, overwrite bool, threads int, ep Epilogue) {
	nr := a.kern.nr
	colPanels := (n + nr - 1) / nr
	parts := max(min(threads, colPanels), 1)
	onEach(parts, func(t int) {
		j0, j1 := t*colPanels/parts*nr, min((t+1)*colPanels/parts*nr, n)
		blockedPacked(a, 0, a.m, j0, j1-j0, packB, c[j0:], ldc, overwrite, ep)
	})
}

// maxSharedPackedB bounds the packed B that sharedRowsPacked shares
// (512 Ki elements, 2 MiB): the columns are few, and B is read again by
// every block of rows, so it should stay in the cache.
const maxSharedPackedB = 1 << 19

// splitRows reports whether runPacked should share one packed B and split
// the rows of a among threads goroutines rather than the columns. Each
// way is costed in panel products (MR rows by NR columns over all of k)
// plus the panels of A the busiest goroutine reads, each costed as one
// product: a packed weight used for a few columns comes from memory,
// about as fast as the product uses it. Ties go to the rows.
func splitRows(a *PackedA, n, threads int) bool {
	kern := a.kern
	colPanels := (n + kern.nr - 1) / kern.nr
	rowPanels := (a.m + kern.mr - 1) / kern.mr
	if rowPanels < 2 || n > kern.nc || sharedPackedSize(kern, a.k, n) > maxSharedPackedB {
		return false
	}
	colShare := (colPanels + threads - 1) / threads
	rowShare := (rowPanels + threads - 1) / threads
	return colPanels*rowShare+rowShare <= colShare*rowPanels+rowPanels
}

// sharedPackedSize returns the elements sharedRowsPacked packs a k×n B
// into: for each KC block, the column panels, each KC·NR elements and a
// pad long.
func sharedPackedSize(kern *kernel, k, n int) int {
	return (k + kern.kc - 1) / kern.kc * sharedBlockSize(kern, n)
}

// sharedBlockSize returns the elements one KC block of a packed k×n B
// takes in sharedRowsPacked.
func sharedBlockSize(kern *kernel, n int) int {
	return (n + kern.nr - 1) / kern.nr * (kern.nr*kern.kc + panelPad)
}

// sharedRowsPacked computes the product (as blockedPacked does for all of
// C) on threads goroutines sharing one packed copy of B (n at most NC
// columns): first each packs a run of its column panels for every KC
// block; then each computes a run of whole MR panels of rows of C over
// every KC block, starting it with ep.Init and ending it with the ReLU.
// Every element of C sees the same KC blocks in the same order as in
// blockedPacked, so the result does not depend on the split.
func sharedRowsPacked(a *PackedA, n int, packB BPacker, c []float32, ldc int, overwrite bool, threads int, ep Epilogue) {
	kern, m, k := a.kern, a.m, a.k
	mr, nr := kern.mr, kern.nr
	block := sharedBlockSize(kern, n)
	pb := getBuf(sharedPackedSize(kern, k, n))
	defer bufPool.Put(pb)
	bufB := *pb
	colPanels := (n + nr - 1) / nr
	parts := min(threads, colPanels)
	onEach(parts, func(t int) {
		p0, p1 := t*colPanels/parts, (t+1)*colPanels/parts
		j0, j1 := p0*nr, min(p1*nr, n)
		for pc := 0; pc < k; pc += kern.kc {
			kb := min(kern.kc, k-pc)
			ps := nr*kb + panelPad
			packB(bufB[pc/kern.kc*block+p0*ps:], ps, pc, kb, j0, j1-j0, nr)
		}
	})
	rowPanels := (m + mr - 1) / mr
	parts = min(threads, rowPanels)
	onEach(parts, func(t int) {
		i0, i1 := t*rowPanels/parts*mr, min((t+1)*rowPanels/parts*mr, m)
		pt := getBuf(mr * nr)
		defer bufPool.Put(pt)
		cc := c[i0*ldc:]
		if ep.Init != nil {
			ep.Init(cc, ldc, i0, i1-i0, 0, n)
		}
		for pc := 0; pc < k; pc += kern.kc {
			kb := min(kern.kc, k-pc)
			add := pc > 0 || !overwrite
			relu := ep.Relu && pc+kb == k
			ap := a.data[pc*a.mp:]
			for ic := i0; ic < i1; ic += kern.mc {
				mb := min(kern.mc, i1-ic)
				macroKernel(kern, ap[ic*kb:], bufB[pc/kern.kc*block:], nr*kb+panelPad, kb, mb, n, cc[(ic-i0)*ldc:], ldc, add, relu, *pt)
			}
		}
	})
}

// panelPad is the gap, in elements (one 64-byte cache line), between
// consecutive packed B panels in SgemmPacked.
const panelPad = 16

// blockedPacked is blocked for rows [i0, i0+m) of the packed a (i0 a
// multiple of MR) and columns [j0, j0+n) of B, writing the m×n block of C
// that starts at c[0].
func blockedPacked(a *PackedA, i0, m, j0, n int, packB BPacker, c []float32, ldc int, overwrite bool, ep Epilogue) {
	kern := a.kern
	mr, nr, k := kern.mr, kern.nr, a.k
	kcMax := min(kern.kc, k)
	// Panels are panelPad elements longer than they need to be, so that
	// writing one row of k into every panel (as PanelRow does) does not
	// hit a single cache set, as a power-of-two panel size would.
	pb := getBuf(roundUp(min(kern.nc, n), nr) / nr * (nr*kcMax + panelPad))
	pt := getBuf(mr * nr)
	defer bufPool.Put(pb)
	defer bufPool.Put(pt)
	bufB, tile := *pb, *pt
	for jc := 0; jc < n; jc += kern.nc {
		nb := min(kern.nc, n-jc)
		if ep.Init != nil {
			// One NC block at a time, so that the products find it
			// in cache.
			ep.Init(c[jc:], ldc, i0, m, j0+jc, nb)
		}
		for pc := 0; pc < k; pc += kern.kc {
			kb := min(kern.kc, k-pc)
			add := pc > 0 || !overwrite
			relu := ep.Relu && pc+kb == k
			ps := nr*kb + panelPad
			packB(bufB, ps, pc, kb, j0+jc, nb, nr)
			block := a.data[pc*a.mp:]
			for ic := 0; ic < m; ic += kern.mc {
				mb := min(kern.mc, m-ic)
				macroKernel(kern, block[(i0+ic)*kb:], bufB, ps, kb, mb, nb, c[ic*ldc+jc:], ldc, add, relu, tile)
			}
		}
	}
}

// reluRows clamps rows×cols of C (rows ldc apart, from c[0]) at zero; NaN
// stays NaN.
func reluRows(c []float32, ldc, rows, cols int) {
	for i := range rows {
		row := c[i*ldc:][:cols]
		vec.Relu(row, row)
	}
}

// PackB packs op(B), a k×n right operand (B row-major with row stride ldb;
// op(B) is Bᵀ when transB is set), into dst in the layout l, which must be
// for a k×n operand, for products with SgemmPrepacked: an operand used by
// many products, such as a recurrent weight, is packed once. dst must hold
// at least l.Size() elements.
func PackB(l BLayout, dst []float32, transB bool, b []float32, ldb int) {
	br, bc := l.k, l.n
	if transB {
		br, bc = l.n, l.k
	}
	checkMatrix("b", br, bc, ldb, len(b))
	if len(dst) < l.Size() {
		panic(fmt.Sprintf("gemm: PackB: dst has %d elements, the packed %d×%d operand needs %d", len(dst), l.k, l.n, l.Size()))
	}
	if l.n == 0 {
		return
	}
	for pc := 0; pc < l.k; pc += l.kc {
		kb := min(l.kc, l.k-pc)
		packB(dst[pc*l.np:], kb*l.nr, transB, b, ldb, pc, 0, kb, l.n, l.nr)
	}
}
