package cublas

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// colMajorGemm is the reference BLAS gemm in column-major order:
// C = op(A)·op(B), C m×n with leading dimension ldc.
func colMajorGemm(tA, tB Operation, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	for j := range n {
		for i := range m {
			var s float64
			for p := range k {
				var x, y float64
				if tA == OpN {
					x = a[i+p*lda]
				} else {
					x = a[p+i*lda]
				}
				if tB == OpN {
					y = b[p+j*ldb]
				} else {
					y = b[j+p*ldb]
				}
				s += x * y
			}
			c[i+j*ldc] = s
		}
	}
}

func TestRowMajor(t *testing.T) {
	tests := []struct {
		m, n, k        int
		transA, transB bool
		padA, padB     int
	}{
		{3, 5, 4, false, false, 0, 0},
		{3, 5, 4, true, false, 0, 0},
		{3, 5, 4, false, true, 0, 0},
		{3, 5, 4, true, true, 2, 3},
		{1, 7, 3, false, false, 1, 0},
		{6, 1, 2, false, true, 0, 0},
		{2, 3, 1, true, true, 0, 0},
		{1, 1, 9, false, false, 0, 0},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%dx%d_tA%v_tB%v", tt.m, tt.n, tt.k, tt.transA, tt.transB), func(t *testing.T) {
			m, n, k := tt.m, tt.n, tt.k
			// Stored shapes (row-major) and row strides.
			ar, ac := m, k
			if tt.transA {
				ar, ac = k, m
			}
			br, bc := k, n
			if tt.transB {
				br, bc = n, k
			}
			lda, ldb := ac+tt.padA, bc+tt.padB
			a := make([]float64, ar*lda)
			b := make([]float64, br*ldb)
			for i := range a {
				a[i] = rng.Float64()*2 - 1
			}
			for i := range b {
				b[i] = rng.Float64()*2 - 1
			}
			at := func(i, p int) float64 {
				if tt.transA {
					return a[p*lda+i]
				}
				return a[i*lda+p]
			}
			bt := func(p, j int) float64 {
				if tt.transB {
					return b[j*ldb+p]
				}
				return b[p*ldb+j]
			}
			want := make([]float64, m*n)
			for i := range m {
				for j := range n {
					for p := range k {
						want[i*n+j] += at(i, p) * bt(p, j)
					}
				}
			}
			g := RowMajor(tt.transA, tt.transB, m, n, k, lda, ldb)
			// cuBLAS's own requirements on leading dimensions.
			rowsFirst, rowsSecond := g.M, g.K
			if g.TransA == OpT {
				rowsFirst = g.K
			}
			if g.TransB == OpT {
				rowsSecond = g.N
			}
			assert.GreaterOrEqual(t, g.LDA, max(1, rowsFirst))
			assert.GreaterOrEqual(t, g.LDB, max(1, rowsSecond))
			assert.GreaterOrEqual(t, g.LDC, max(1, g.M))
			got := make([]float64, m*n)
			colMajorGemm(g.TransA, g.TransB, g.M, g.N, g.K, b, g.LDA, a, g.LDB, got, g.LDC)
			require.InDeltaSlice(t, want, got, 1e-12)
		})
	}
}

func TestErrorText(t *testing.T) {
	assert.Equal(t, "cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE (7)", (&Error{Call: "cublasSgemm_v2", Status: 7}).Error())
	assert.Equal(t, "cublasCreate_v2: cublasStatus(99) (99)", (&Error{Call: "cublasCreate_v2", Status: 99}).Error())
}
