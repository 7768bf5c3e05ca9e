//go:build arm64 && !purego

package gemm

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

//go:generate sh -c "python3 asmgen_arm64.py > gemm_arm64.s"

// kern12x8NEON adds the product of a packed 12×k panel of A and a packed
// k×8 panel of B to the 12×8 tile of C at c whose rows are ldc floats apart
// (or, when add is 0, stores it there without reading C). Its 24
// accumulators, 3 registers of A and 2 of B fill 29 of the 32 NEON
// registers.
//
//go:noescape
func kern12x8NEON(k int, a, b, c *float32, ldc, add int)

// kern8x8NEON is kern12x8NEON for a packed 8×k panel of A and an 8×8 tile
// of C.
//
//go:noescape
func kern8x8NEON(k int, a, b, c *float32, ldc, add int)

// dot4x4NEON computes the 4×4 tile of products C[i][j] = Σ_p a[i*lda+p] ·
// b[j*ldb+p] (p < k) of four rows of A and four rows of B, both running
// along k, and adds it to the tile at c (rows ldc floats apart) when add is
// 1, or stores it there when add is 0.
//
//go:noescape
func dot4x4NEON(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, add int)

// dot4x4Asm is dot4x4NEON on slices; the caller has checked that every row
// it reads or writes lies inside them.
func dot4x4Asm(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, add bool) {
	dot4x4NEON(k, unsafe.SliceData(a), lda, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, b2i(add))
}

// neonDotRows is the most rows of A for which the NEON kernels take the
// dot path for A·Bᵀ (see sgemmDot). The dot path's cost model and this
// limit are the x86 ones (BenchmarkSgemmDot has not been run on arm64);
// on arm64 the panels pad a few rows to 8 or 12, which the model does not
// count, so the dot path is, if anything, chosen too rarely.
const neonDotRows = 64

// The NEON blocking follows the caches of a Neoverse N1 core (64 KiB L1d,
// 1 MiB L2): a 12×256 A micro-panel (12 KiB) and a 256×8 B micro-panel
// (8 KiB) share L1, the packed A block (96×256, 96 KiB) sits in L2, and a
// packed B block of 2048 columns (2 MiB) in the last-level cache. It was
// not tuned on hardware (none was at hand; see docs/performance-arm64.md).
// fitCaches narrows MC and NC where the caches the operating system reports
// are smaller (caches.go).
var (
	neonKernel = fitCaches(kernel{name: "neon", mr: 12, nr: 8, mc: 96, kc: 256, nc: 2048,
		dot: dot4x4Asm, dotRows: neonDotRows,
		fn: func(k int, a, b, c []float32, ldc int, add bool) {
			kern12x8NEON(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, b2i(add))
		}}, isa.CPU().Caches)
	// neon8x8Kernel shares the blocking and B panels of neonKernel; PackA
	// picks it for row counts it pads much less (64 rows: 64 instead of
	// 72).
	neon8x8Kernel = fitCaches(kernel{name: "neon8x8", mr: 8, nr: 8, mc: 96, kc: 256, nc: 2048,
		dot: dot4x4Asm, dotRows: neonDotRows,
		fn: func(k int, a, b, c []float32, ldc int, add bool) {
			kern8x8NEON(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, b2i(add))
		}}, isa.CPU().Caches)
)

// availableKernels lists the micro-kernels of this build, fastest first:
// the NEON ones (Advanced SIMD is part of every arm64 CPU Go runs on)
// unless EMBER_CPU=generic forces the twins (see package isa), then the
// pure-Go kernel.
func availableKernels() []*kernel {
	if isa.Has(isa.NEON) {
		return []*kernel{neonKernel, neon8x8Kernel, genericKernel}
	}
	return []*kernel{genericKernel}
}

// b2i is 1 for true and 0 for false.
func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
