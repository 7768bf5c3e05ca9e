package gemm

import "fmt"

// BLayout is the panel layout of a k×n right operand packed ahead of time
// for SgemmPrepacked with a given PackedA: the rows in blocks of the
// micro-kernel's KC, each block's columns in panels of NR (the block of
// rows from pc holding panel j at pc·np + j·kb·NR, np being n rounded up
// to NR and kb the block's row count), each panel stored k-major, NR
// values per row. Callers that produce B in place, such as a transform of
// an image, write it straight into this layout, row by row with WriteRow,
// and run several products on it without a packing pass.
type BLayout struct {
	k, n, nr, kc, np int
}

// BLayout returns the layout SgemmPrepacked reads for an a.Depth()×n right
// operand of a.
func (p *PackedA) BLayout(n int) BLayout {
	if n < 0 {
		panic(fmt.Sprintf("gemm: BLayout: n = %d must be non-negative", n))
	}
	nr := p.kern.nr
	return BLayout{k: p.k, n: n, nr: nr, kc: p.kern.kc, np: roundUp(n, nr)}
}

// PackedBLayout returns the layout SgemmPrepacked reads for a k×n right
// operand when the left operand is an m×k PackAInto: a right operand
// packed ahead of time for products with left operands packed later.
func PackedBLayout(m, k, n int) BLayout {
	if m < 0 || k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: PackedBLayout: dimensions m=%d k=%d n=%d must be non-negative", m, k, n))
	}
	kern := packKernel(m)
	return BLayout{k: k, n: n, nr: kern.nr, kc: kern.kc, np: roundUp(n, kern.nr)}
}

// PanelCols returns NR, the column count of each panel.
func (l BLayout) PanelCols() int { return l.nr }

// Index returns the position in the packed operand of row r, column col.
// The rows from r to RowBlockEnd(r) lie PanelCols() apart.
func (l BLayout) Index(r, col int) int {
	pc := r / l.kc * l.kc
	kb := min(l.kc, l.k-pc)
	return pc*l.np + col/l.nr*kb*l.nr + (r-pc)*l.nr + col%l.nr
}

// RowBlockEnd returns the end of the block of rows that holds row r: the
// next multiple of the micro-kernel's KC, or k.
func (l BLayout) RowBlockEnd(r int) int { return min(l.k, (r/l.kc+1)*l.kc) }

// Size returns the number of float32 elements the packed operand takes.
func (l BLayout) Size() int { return l.k * l.np }

// WriteRow writes vals into columns [col0, col0+len(vals)) of row r of the
// operand packed in b, leaving the other columns as they are. Columns at
// or past n are never read by SgemmPrepacked and need not be written.
func (l BLayout) WriteRow(b []float32, r, col0 int, vals []float32) {
	if r < 0 || r >= l.k || col0 < 0 || col0+len(vals) > l.np {
		panic(fmt.Sprintf("gemm: BLayout.WriteRow: row %d, columns [%d, %d) outside the %d×%d operand", r, col0, col0+len(vals), l.k, l.n))
	}
	pc := r / l.kc * l.kc
	kb := min(l.kc, l.k-pc)
	PanelRowPart(b[pc*l.np:], kb*l.nr, r-pc, l.nr, col0, vals)
}

// SgemmPrepacked computes C = a·B on the calling goroutine, where a is a
// packed m×k operand (alpha already applied), B the k×n operand packed in
// b with a.BLayout(n), and C is m×n, row-major with row stride ldc; C is
// overwritten, not read.
func SgemmPrepacked(a *PackedA, b []float32, n int, c []float32, ldc int) {
	SgemmPrepackedRows(a, 0, a.m, b, n, c, ldc)
}

// RowAlign returns the row count of a's panels, MR: SgemmPrepackedRows
// takes row ranges that start at a multiple of it.
func (p *PackedA) RowAlign() int { return p.kern.mr }

// SgemmPrepackedRows is SgemmPrepacked for rows [i0, i1) of a only, i0 a
// multiple of a.RowAlign(): c[0] is row i0 of C, and the other rows of C
// are neither read nor written. Each element of C is computed as
// SgemmPrepacked computes it, so goroutines that share a product by rows
// get SgemmPrepacked's result.
func SgemmPrepackedRows(a *PackedA, i0, i1 int, b []float32, n int, c []float32, ldc int) {
	l := a.BLayout(n)
	k := a.k
	if i0 < 0 || i1 > a.m || i0 > i1 || i0%a.kern.mr != 0 {
		panic(fmt.Sprintf("gemm: SgemmPrepackedRows: rows [%d, %d) of %d must start at a multiple of %d", i0, i1, a.m, a.kern.mr))
	}
	if len(b) < l.Size() {
		panic(fmt.Sprintf("gemm: SgemmPrepacked: b has %d elements, the packed %d×%d operand needs %d", len(b), k, n, l.Size()))
	}
	m := i1 - i0
	checkMatrix("c", m, n, ldc, len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			clear(c[i*ldc:][:n])
		}
		return
	}
	kern := a.kern
	mr, nr := kern.mr, kern.nr
	pt := getBuf(mr * nr)
	defer bufPool.Put(pt)
	tile := *pt
	for pc := 0; pc < k; pc += kern.kc {
		kb := min(kern.kc, k-pc)
		add := pc > 0
		block := a.data[pc*a.mp+i0*kb:]
		bb := b[pc*l.np:]
		for ic := 0; ic < m; ic += kern.mc {
			mb := min(kern.mc, m-ic)
			for jr := 0; jr < n; jr += nr {
				nrr := min(nr, n-jr)
				bp := bb[jr/nr*kb*nr:]
				for ir := ic; ir < ic+mb; ir += mr {
					mrr := min(mr, ic+mb-ir)
					ap := block[ir*kb:]
					ci := ir*ldc + jr
					if mrr == mr && nrr == nr {
						kern.fn(kb, ap, bp, c[ci:], ldc, add)
						continue
					}
					kern.fn(kb, ap, bp, tile, nr, false)
					for i := range mrr {
						row := c[ci+i*ldc:][:nrr]
						t := tile[i*nr:][:nrr]
						if !add {
							copy(row, t)
							continue
						}
						for j := range row {
							row[j] += t[j]
						}
					}
				}
			}
		}
	}
}
