package gemm

import "fmt"

// PanelRow writes row, the values of step p of k for the columns
// [0, len(row)) of a packed B block, into dst's panels of nr columns
// stored ps elements apart, as a BPacker lays them out: each whole panel i
// gets row[i*nr:(i+1)*nr] at dst[i*ps+p*nr], and a last partial panel gets
// the remaining values followed by zeros. It panics if dst is too short or
// a panel step does not fit in ps.
func PanelRow(dst []float32, ps, p, nr int, row []float32) {
	if nr <= 0 || p < 0 || (p+1)*nr > ps {
		panic(fmt.Sprintf("gemm: PanelRow: step p = %d of %d columns must fit in the panel stride %d", p, nr, ps))
	}
	nb := len(row)
	full := nb - nb%nr
	if nb == 0 {
		return
	}
	if need := (roundUp(nb, nr)/nr-1)*ps + p*nr + nr; len(dst) < need {
		panic(fmt.Sprintf("gemm: PanelRow: dst has %d elements, %d columns in panels of %d, %d apart, need %d", len(dst), nb, nr, ps, need))
	}
	if full > 0 && !scatterPanels(dst[p*nr:], ps, row[:full], nr) {
		panelRowGo(dst[p*nr:], ps, nr, row[:full])
	}
	if full < nb {
		last := dst[full/nr*ps+p*nr:][:nr]
		copy(last, row[full:])
		clear(last[nb-full:])
	}
}

// panelRowGo copies the len(row)/nr blocks of nr values of row to dst[i*ps:]
// in Go (len(row) a multiple of nr).
func panelRowGo(dst []float32, ps, nr int, row []float32) {
	for i := 0; i*nr < len(row); i++ {
		copy(dst[i*ps:][:nr], row[i*nr:(i+1)*nr])
	}
}

// PanelRowPart writes vals into columns [col0, col0+len(vals)) of step p
// of a packed B block with panels of nr columns stored ps elements apart
// (column j at dst[(j/nr)*ps + p*nr + j%nr]), leaving every other cell as
// it is. It panics if dst is too short or a panel step does not fit in ps.
func PanelRowPart(dst []float32, ps, p, nr, col0 int, vals []float32) {
	if nr <= 0 || p < 0 || (p+1)*nr > ps || col0 < 0 {
		panic(fmt.Sprintf("gemm: PanelRowPart: step p = %d of %d columns must fit in the panel stride %d and col0 = %d not be negative", p, nr, ps, col0))
	}
	if len(vals) == 0 {
		return
	}
	end := col0 + len(vals)
	if need := (end-1)/nr*ps + p*nr + (end-1)%nr + 1; len(dst) < need {
		panic(fmt.Sprintf("gemm: PanelRowPart: dst has %d elements, columns up to %d in panels of %d, %d apart, need %d", len(dst), end, nr, ps, need))
	}
	// Head: the rest of the panel col0 starts in.
	if off := col0 % nr; off != 0 {
		n := min(nr-off, len(vals))
		copy(dst[col0/nr*ps+p*nr+off:][:n], vals[:n])
		col0, vals = col0+n, vals[n:]
	}
	// Whole panels, then the head of the last one.
	full := len(vals) - len(vals)%nr
	at := col0/nr*ps + p*nr
	if full > 0 && !scatterPanels(dst[at:], ps, vals[:full], nr) {
		panelRowGo(dst[at:], ps, nr, vals[:full])
	}
	if full < len(vals) {
		copy(dst[(col0+full)/nr*ps+p*nr:][:len(vals)-full], vals[full:])
	}
}

// transpose writes the first kb elements of rows rows of a (rows lda apart)
// into dst as kb steps w elements apart: dst[p*w+r] = a[r*lda+p]. This is
// how a panel is packed from operand rows that run along k (B transposed,
// or A as stored). Whole 8×8 and 4×8 blocks go through the vector routines
// where the CPU has them, the edges through transposeGo.
func transpose(dst []float32, w int, a []float32, lda, rows, kb int) {
	if rows <= 0 || kb <= 0 {
		return
	}
	// Every access below lies within these two.
	_ = dst[(kb-1)*w+rows-1]
	_ = a[(rows-1)*lda+kb-1]
	r4, k8 := rows&^3, kb&^7
	if r4 == 0 || k8 == 0 || !canTranspose8() {
		transposeGo(dst, w, a, lda, rows, kb)
		return
	}
	r := 0
	for ; r+8 <= r4; r += 8 {
		transpose8(dst[r:], w, a[r*lda:], lda, k8/8)
	}
	if r < r4 {
		transpose4(dst[r:], w, a[r*lda:], lda, k8/8)
	}
	if k8 < kb {
		transposeGo(dst[k8*w:], w, a[k8:], lda, r4, kb-k8)
	}
	if r4 < rows {
		transposeGo(dst[r4:], w, a[r4*lda:], lda, rows-r4, kb)
	}
}

// transposeGo is transpose in Go: four rows at a time, so each step of k
// writes four adjacent values, then the rows left one by one.
func transposeGo(dst []float32, w int, a []float32, lda, rows, kb int) {
	full := rows &^ 3
	for r := 0; r < full; r += 4 {
		interleave4(dst[r:], w, a[r*lda:], lda, kb)
	}
	for r := full; r < rows; r++ {
		src := a[r*lda:][:kb]
		for p, v := range src {
			dst[p*w+r] = v
		}
	}
}
