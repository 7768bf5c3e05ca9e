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
