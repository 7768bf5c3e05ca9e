package gemm

import "fmt"

// PanelRow writes row, the values of step p of k for the columns
// [0, len(row)) of a packed B block of depth kb, into dst's panels of nr
// columns, as a BPacker lays them out: each whole panel starting at column
// jr gets row[jr:jr+nr] at dst[jr*kb+p*nr], and a last partial panel gets
// the remaining values followed by zeros. It panics if dst is too short.
func PanelRow(dst []float32, p, kb, nr int, row []float32) {
	if nr <= 0 || p < 0 || p >= kb {
		panic(fmt.Sprintf("gemm: PanelRow: step p = %d must lie in [0, kb = %d) and nr = %d be positive", p, kb, nr))
	}
	nb := len(row)
	full := nb - nb%nr
	if nb == 0 {
		return
	}
	if need := (roundUp(nb, nr)-nr)*kb + p*nr + nr; len(dst) < need {
		panic(fmt.Sprintf("gemm: PanelRow: dst has %d elements, %d columns of depth %d in panels of %d need %d", len(dst), nb, kb, nr, need))
	}
	if full > 0 && !scatterPanels(dst[p*nr:], nr*kb, row[:full], nr) {
		panelRowGo(dst, p, kb, nr, row[:full])
	}
	if full < nb {
		last := dst[full*kb+p*nr:][:nr]
		copy(last, row[full:])
		clear(last[nb-full:])
	}
}

// panelRowGo is PanelRow's pure-Go copy of whole panels (len(row) a
// multiple of nr).
func panelRowGo(dst []float32, p, kb, nr int, row []float32) {
	for jr := 0; jr < len(row); jr += nr {
		copy(dst[jr*kb+p*nr:][:nr], row[jr:jr+nr])
	}
}

// PanelRowPart writes vals into columns [col0, col0+len(vals)) of step p
// of a packed B block of depth kb with panels of nr columns (column j at
// dst[(j/nr)*nr*kb + p*nr + j%nr]), leaving every other cell as it is.
// It panics if dst is too short.
func PanelRowPart(dst []float32, p, kb, nr, col0 int, vals []float32) {
	if nr <= 0 || p < 0 || p >= kb || col0 < 0 {
		panic(fmt.Sprintf("gemm: PanelRowPart: step p = %d must lie in [0, kb = %d), nr = %d be positive and col0 = %d not negative", p, kb, nr, col0))
	}
	if len(vals) == 0 {
		return
	}
	end := col0 + len(vals)
	if need := (end-1)/nr*nr*kb + p*nr + (end-1)%nr + 1; len(dst) < need {
		panic(fmt.Sprintf("gemm: PanelRowPart: dst has %d elements, columns up to %d of depth %d in panels of %d need %d", len(dst), end, kb, nr, need))
	}
	// Head: the rest of the panel col0 starts in.
	if off := col0 % nr; off != 0 {
		n := min(nr-off, len(vals))
		copy(dst[(col0-off)*kb+p*nr+off:][:n], vals[:n])
		col0, vals = col0+n, vals[n:]
	}
	// Whole panels, then the head of the last one.
	full := len(vals) - len(vals)%nr
	if full > 0 && !scatterPanels(dst[col0*kb+p*nr:], nr*kb, vals[:full], nr) {
		panelRowGo(dst[col0*kb:], p, kb, nr, vals[:full])
	}
	if full < len(vals) {
		copy(dst[(col0+full)*kb+p*nr:][:len(vals)-full], vals[full:])
	}
}
