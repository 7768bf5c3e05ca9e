package tensor

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// matmulIntNaive is the textbook triple loop, the reference matmulInt is
// checked against.
func matmulIntNaive[T intElem](dst, a, b []T, p MatMulParams) {
	for bi := range p.AOffsets {
		ao, bo := p.AOffsets[bi], p.BOffsets[bi]
		c := dst[bi*p.M*p.N:]
		for i := range p.M {
			for j := range p.N {
				var s T
				for k := range p.K {
					ia, ib := ao+i*p.LDA+k, bo+k*p.LDB+j
					if p.TransA {
						ia = ao + k*p.LDA + i
					}
					if p.TransB {
						ib = bo + j*p.LDB + k
					}
					x, y := a[ia], b[ib]
					s += x * y
				}
				c[i*p.N+j] = s
			}
		}
	}
}

func TestMatMulIntMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {8, 67, 33}, {2, 0, 3}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			m, k, n := sz[0], sz[1], sz[2]
			p := MatMulParams{M: m, N: n, K: k, TransA: tr[0], TransB: tr[1], LDA: k, LDB: n, AOffsets: []int{0, m * k}, BOffsets: []int{0, k * n}}
			if tr[0] {
				p.LDA = m
			}
			if tr[1] {
				p.LDB = k
			}
			a, b := make([]int8, 2*m*k), make([]int8, 2*k*n)
			for i := range a {
				a[i] = int8(r.IntN(256) - 128)
			}
			for i := range b {
				b[i] = int8(r.IntN(256) - 128)
			}
			want, got := make([]int8, 2*m*n), make([]int8, 2*m*n)
			for i := range got {
				got[i] = 0x55 // poison: every element must be written
			}
			matmulIntNaive(want, a, b, p)
			matmulInt(got, a, b, p)
			require.Equal(t, want, got, "size %v trans %v", sz, tr)
		}
	}
}

func benchMatMulInt(bench *testing.B, f func(dst, a, b []int32, p MatMulParams)) {
	const m, k, n = 128, 768, 768
	a, b, c := make([]int32, m*k), make([]int32, k*n), make([]int32, m*n)
	for i := range a {
		a[i] = int32(i%255) - 128
	}
	for i := range b {
		b[i] = int32(i%253) - 127
	}
	p := MatMulParams{M: m, N: n, K: k, LDA: k, LDB: n, AOffsets: []int{0}, BOffsets: []int{0}}
	for bench.Loop() {
		f(c, a, b, p)
	}
}

func BenchmarkMatMulInt32Naive(b *testing.B) { benchMatMulInt(b, matmulIntNaive[int32]) }
func BenchmarkMatMulInt32(b *testing.B)      { benchMatMulInt(b, matmulInt[int32]) }
