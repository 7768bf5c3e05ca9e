package gemm

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPanelRow checks PanelRow (vector copies where the CPU has them)
// against the definition on odd widths for each panel width, with dst
// poisoned: every panel cell of step p is written, nothing else is.
func TestPanelRow(t *testing.T) {
	for _, nr := range []int{4, 16, 32, 12} {
		for _, nb := range []int{1, 3, nr - 1, nr, nr + 1, 2*nr + 5, 7 * nr} {
			for _, kb := range []int{1, 3, 9} {
				t.Run(fmt.Sprintf("nr%d/nb%d/kb%d", nr, nb, kb), func(t *testing.T) {
					size := roundUp(nb, nr) * kb
					row := make([]float32, nb)
					for i := range row {
						row[i] = float32(i + 1)
					}
					for p := range kb {
						dst := make([]float32, size+3)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						PanelRow(dst, p, kb, nr, row)
						for i, v := range dst {
							panel, off := i/(nr*kb), i%(nr*kb)
							step, col := off/nr, off%nr
							if i >= size || step != p {
								require.True(t, math.IsNaN(float64(v)), "element %d (step %d) was written", i, step)
								continue
							}
							want := float32(0)
							if j := panel*nr + col; j < nb {
								want = row[j]
							}
							require.Equal(t, want, v, "panel %d column %d", panel, col)
						}
					}
				})
			}
		}
	}
	require.Panics(t, func() { PanelRow(make([]float32, 10), 0, 2, 4, make([]float32, 9)) })
	require.Panics(t, func() { PanelRow(make([]float32, 64), 2, 2, 4, make([]float32, 4)) })
}
