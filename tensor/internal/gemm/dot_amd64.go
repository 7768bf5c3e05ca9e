//go:build amd64 && !purego

package gemm

import "unsafe"

// dot4x4AVX512 computes the 4×4 tile of products C[i][j] = Σ_p a[i*lda+p] ·
// b[j*ldb+p] (p < k) of four rows of A and four rows of B, both running
// along k, and adds it to the tile at c (rows ldc floats apart) when add is
// 1, or stores it there when add is 0.
//
//go:noescape
func dot4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, add int)

// dot4x4Asm is dot4x4AVX512 on slices; the caller has checked that every
// row it reads or writes lies inside them.
func dot4x4Asm(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool) {
	dot4x4AVX512(k, unsafe.SliceData(a), lda, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, b2i(add))
}
