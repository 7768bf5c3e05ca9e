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
					ps := nr*kb + kb%2*5 // odd depths get a gap between panels
					size := roundUp(nb, nr) / nr * ps
					row := make([]float32, nb)
					for i := range row {
						row[i] = float32(i + 1)
					}
					for p := range kb {
						dst := make([]float32, size+3)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						PanelRow(dst, ps, p, nr, row)
						for i, v := range dst {
							panel, off := i/ps, i%ps
							step, col := off/nr, off%nr
							if i >= size || step != p || off >= nr*kb {
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
	require.Panics(t, func() { PanelRow(make([]float32, 10), 8, 0, 4, make([]float32, 9)) })
	require.Panics(t, func() { PanelRow(make([]float32, 64), 8, 2, 4, make([]float32, 4)) })
}

// TestPanelRowPart checks PanelRowPart against the definition for starts
// and lengths inside, across and aligned with panels, with dst poisoned:
// exactly the given columns of step p are written.
func TestPanelRowPart(t *testing.T) {
	for _, nr := range []int{4, 16, 32} {
		for _, col0 := range []int{0, 1, nr - 1, nr, 2*nr + 3} {
			for _, n := range []int{0, 1, nr - 1, nr, nr + 2, 3*nr + 1} {
				for _, kb := range []int{1, 3} {
					t.Run(fmt.Sprintf("nr%d/col%d/n%d/kb%d", nr, col0, n, kb), func(t *testing.T) {
						ps := nr*kb + 3
						size := roundUp(col0+n+1, nr) / nr * ps
						vals := make([]float32, n)
						for i := range vals {
							vals[i] = float32(i + 1)
						}
						p := kb - 1
						dst := make([]float32, size)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						PanelRowPart(dst, ps, p, nr, col0, vals)
						for i, v := range dst {
							panel, off := i/ps, i%ps
							step, col := off/nr, off%nr
							j := panel*nr + col
							if step != p || off >= nr*kb || j < col0 || j >= col0+n {
								require.True(t, math.IsNaN(float64(v)), "cell %d (step %d, column %d) was written", i, step, j)
								continue
							}
							require.Equal(t, vals[j-col0], v, "column %d", j)
						}
					})
				}
			}
		}
	}
	require.Panics(t, func() { PanelRowPart(make([]float32, 8), 8, 0, 4, 3, make([]float32, 2)) })
	require.Panics(t, func() { PanelRowPart(make([]float32, 64), 8, 0, 4, -1, make([]float32, 2)) })
	require.Panics(t, func() { PanelRowPart(make([]float32, 64), 7, 1, 4, 0, make([]float32, 2)) })
}

// TestTranspose checks transpose (8×8 vector blocks where the CPU has them)
// and transposeGo against the definition on odd sizes, with dst poisoned:
// every cell of the kb×rows block is written, nothing else is.
func TestTranspose(t *testing.T) {
	impls := []struct {
		name string
		f    func(dst []float32, w int, a []float32, lda, rows, kb int)
	}{{"transpose", transpose}, {"transposeGo", transposeGo}}
	for _, impl := range impls {
		for _, rows := range []int{1, 3, 7, 8, 9, 12, 16, 31, 32, 67} {
			for _, kb := range []int{1, 5, 8, 15, 16, 17, 67} {
				t.Run(fmt.Sprintf("%s/rows%d/kb%d", impl.name, rows, kb), func(t *testing.T) {
					lda, w := kb+3, rows+5
					a := make([]float32, (rows-1)*lda+kb)
					for i := range a {
						a[i] = float32(i + 1)
					}
					dst := make([]float32, kb*w+7)
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					impl.f(dst, w, a, lda, rows, kb)
					for i, v := range dst {
						p, r := i/w, i%w
						if p >= kb || r >= rows {
							require.True(t, math.IsNaN(float64(v)), "element %d (step %d, row %d) was written", i, p, r)
							continue
						}
						require.Equal(t, a[r*lda+p], v, "step %d row %d", p, r)
					}
				})
			}
		}
	}
}

// BenchmarkPackBTrans measures packing a 384×512 block of op(B) = Bᵀ (the
// rows of B run along k) into panels of 32 columns.
func BenchmarkPackBTrans(b *testing.B) {
	const kb, nb, nr, ldb = 384, 512, 32, 784
	src := make([]float32, nb*ldb)
	dst := make([]float32, nb*kb)
	for b.Loop() {
		packB(dst, nr*kb, true, src, ldb, 0, 0, kb, nb, nr)
	}
	b.ReportMetric(float64(kb*nb)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gfloat/s")
}
