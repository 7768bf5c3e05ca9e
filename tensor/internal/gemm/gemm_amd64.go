//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// kern12x32AVX512 adds the product of a packed 12×k panel of A and a packed
// k×32 panel of B to the 12×32 tile of C at c whose rows are ldc floats apart
// (or, when add is 0, stores it there without reading C).
//
//go:noescape
func kern12x32AVX512(k int, a, b, c *float32, ldc, add int)

// kern8x32AVX512 is kern12x32AVX512 for a packed 8×k panel of A and an 8×32
// tile of C.
//
//go:noescape
func kern8x32AVX512(k int, a, b, c *float32, ldc, add int)

// kern6x16AVX2 adds the product of a packed 6×k panel of A and a packed k×16
// panel of B to the 6×16 tile of C at c whose rows are ldc floats apart (or,
// when add is 0, stores it there without reading C).
//
//go:noescape
func kern6x16AVX2(k int, a, b, c *float32, ldc, add int)

// The AVX-512 blocking was measured on a Sapphire Rapids Xeon (48 KiB L1d,
// 2 MiB L2 per core): a deeper KC with a short MC (packed A 96×384, 144 KiB,
// well inside L2) ran 3–6% faster at n = 1024…2048 than MC=144, KC=256.
// fitCaches narrows MC and NC where the caches CPUID reports are smaller
// than these blocks assume (caches.go).
//
// avx512DotRows is the most rows of A for which the AVX-512 kernels take
// the dot path for A·Bᵀ (see sgemmDot).
const avx512DotRows = 64

var (
	avx512Kernel = fitCaches(kernel{name: "avx512", mr: 12, nr: 32, mc: 96, kc: 384, nc: 2048,
		dot: dot4x4Asm, dotRows: avx512DotRows,
		fn: func(k int, a, b, c []float32, ldc int, add bool) {
			kern12x32AVX512(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, b2i(add))
		}}, isa.CPU().Caches)
	// avx512x8Kernel shares the AVX-512 blocking and B panels; PackA picks it
	// for row counts it pads much less (64 rows: 64 instead of 72).
	avx512x8Kernel = fitCaches(kernel{name: "avx512x8", mr: 8, nr: 32, mc: 96, kc: 384, nc: 2048,
		dot: dot4x4Asm, dotRows: avx512DotRows,
		fn: func(k int, a, b, c []float32, ldc int, add bool) {
			kern8x32AVX512(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, b2i(add))
		}}, isa.CPU().Caches)
	avx2Kernel = fitCaches(kernel{name: "avx2", mr: 6, nr: 16, mc: 96, kc: 256, nc: 1024,
		fn: func(k int, a, b, c []float32, ldc int, add bool) {
			kern6x16AVX2(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, b2i(add))
		}}, isa.CPU().Caches)
)

// availableKernels lists the micro-kernels this CPU can run, fastest first;
// the pure-Go kernel is always last.
func availableKernels() []*kernel {
	ks := make([]*kernel, 0, 4)
	if isa.Has(isa.AVX512) {
		ks = append(ks, avx512Kernel, avx512x8Kernel)
	}
	if isa.Has(isa.AVX2) {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, genericKernel)
}

// b2i is 1 for true and 0 for false.
func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
