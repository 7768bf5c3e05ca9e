package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSgemmPrepackedMatchesSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ m, n, k int }{
		{1, 1, 1}, {5, 3, 7}, {13, 33, 17}, {64, 64, 64}, {67, 95, 400}, {100, 40, 800}, {12, 32, 384}, {3, 0, 5}, {4, 6, 0},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			a, b := make([]float32, c.m*c.k), make([]float32, c.k*c.n)
			for i := range a {
				a[i] = r.Float32()*2 - 1
			}
			for i := range b {
				b[i] = r.Float32()*2 - 1
			}
			want := make([]float32, c.m*c.n)
			Sgemm(false, false, c.m, c.n, c.k, 1, a, max(c.k, 1), b, max(c.n, 1), 0, want, max(c.n, 1))
			pa := PackA(false, c.m, c.k, 1, a, max(c.k, 1))
			l := pa.BLayout(c.n)
			packed := make([]float32, l.Size())
			for i := range packed {
				packed[i] = float32(math.NaN())
			}
			for row := range c.k {
				// Two writes per row: the panels take any split.
				h := c.n / 3
				l.WriteRow(packed, row, 0, b[row*c.n:][:h])
				l.WriteRow(packed, row, h, b[row*c.n+h:][:c.n-h])
			}
			ldc := c.n + 3
			got := make([]float32, max(c.m*ldc, 1))
			for i := range got {
				got[i] = float32(math.NaN())
			}
			SgemmPrepacked(pa, packed, c.n, got, ldc)
			for i := range c.m {
				for j := range c.n {
					require.InDelta(t, want[i*c.n+j], got[i*ldc+j], 1e-4, "C[%d][%d]", i, j)
				}
			}
		})
	}
}

func TestPackedBLayoutMatchesPackedA(t *testing.T) {
	for _, m := range []int{1, 8, 12, 16, 64, 100} {
		pa := PackA(false, m, 7, 1, make([]float32, m*7), 7)
		require.Equal(t, pa.BLayout(33), PackedBLayout(m, 7, 33), "m = %d", m)
	}
	require.Panics(t, func() { PackedBLayout(-1, 2, 3) })
}

// TestSgemmPrepackedRowsMatchesWhole checks that products computed a row
// range at a time give SgemmPrepacked's bits, on odd sizes and depths past
// one KC block, and leave the rows outside the range as they were.
func TestSgemmPrepackedRowsMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	nan := float32(math.NaN())
	for _, c := range []struct{ m, n, k int }{
		{1, 1, 1}, {13, 5, 7}, {25, 33, 17}, {67, 67, 67}, {37, 19, 400}, {50, 41, 800}, {24, 32, 384}, {30, 7, 0},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			a, b := make([]float32, c.m*c.k), make([]float32, c.k*c.n)
			randFill(r, a, c.m, c.k, c.k)
			randFill(r, b, c.k, c.n, c.n)
			pa := PackA(false, c.m, c.k, 1, a, max(c.k, 1))
			l := pa.BLayout(c.n)
			packed := make([]float32, l.Size())
			for row := range c.k {
				l.WriteRow(packed, row, 0, b[row*c.n:][:c.n])
			}
			ldc := c.n + 2
			want := make([]float32, c.m*ldc)
			SgemmPrepacked(pa, packed, c.n, want, ldc)
			mr := pa.RowAlign()
			for _, parts := range []int{1, 2, 3, 5} {
				got := make([]float32, c.m*ldc)
				for i := range got {
					got[i] = nan
				}
				panels := (c.m + mr - 1) / mr
				for p := range parts {
					i0, i1 := min(p*panels/parts*mr, c.m), min((p+1)*panels/parts*mr, c.m)
					SgemmPrepackedRows(pa, i0, i1, packed, c.n, got[i0*ldc:], ldc)
				}
				for i := range c.m {
					for j := range ldc {
						w, g := want[i*ldc+j], got[i*ldc+j]
						if j >= c.n {
							w = nan
						}
						require.Equal(t, math.Float32bits(w), math.Float32bits(g), "%d parts: C[%d][%d]", parts, i, j)
					}
				}
			}
			require.Panics(t, func() { SgemmPrepackedRows(pa, 1, c.m, packed, c.n, want[ldc:], ldc) }, "unaligned start")
		})
	}
}
