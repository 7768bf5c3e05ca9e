package gemm

// The pure-Go micro-kernels. Go keeps each accumulator of a tile in a
// scalar float register, so the tile must fit the architecture's register
// file: amd64 has 15 usable X registers (X15 is reserved for zero), arm64
// has 32. The compiler's scheduler also puts every multiply of a loop body
// before the adds that feed the next iteration (values with uses in the
// block go first), so in the last step of the body all mr·nr products are
// live beside the mr·nr accumulators: on amd64 a 4×4 tile spills on every
// step, a 2×4 tile two values per four steps. On panels in L1 of a Sapphire
// Rapids core (BenchmarkGenericKernel) the 4×4 kernel ran at 2.4–2.9
// GFLOP/s and the 2×4 one at 5.7–6.3, what a loop with every operand in
// registers gets from the core's multipliers and adders (6.1,
// BenchmarkScalarPeak). Both kernels compile everywhere and are tested on
// every architecture; genericKernel picks the one for this one.

// generic2x4 is the pure-Go kernel for amd64. A scalar kernel needs little
// from the caches, and at 1024² (MC, KC) = (64, 256), (128, 512), (256, 256)
// and (64, 1024) ran within the noise of each other on a Sapphire Rapids
// core (48 KiB L1d, 2 MiB L2). KC=512 halves the calls and tile updates per
// multiply-add against 256 while the 2×KC A and KC×4 B micro-panels (4 and
// 8 KiB) stay in L1, and the packed A block (MC×KC, 256 KiB) stays in L2.
var generic2x4 = &kernel{name: "generic", mr: 2, nr: 4, mc: 128, kc: 512, nc: 1024, fn: kern2x4Generic}

// generic4x4 is the pure-Go kernel for architectures with 32 float
// registers (arm64 and the others without amd64's limit): 16 accumulators
// and the 8 operands of a step fit with room to spare.
var generic4x4 = &kernel{name: "generic", mr: 4, nr: 4, mc: 128, kc: 512, nc: 1024, fn: kern4x4Generic}

// row4 is one row of a tile of C: four accumulators, which the compiler
// keeps in registers (a struct of at most four fields is split into
// separate values).
type row4 struct{ c0, c1, c2, c3 float32 }

// madd returns r plus a times the four values of b.
func (r row4) madd(a float32, b *[4]float32) row4 {
	return row4{r.c0 + a*b[0], r.c1 + a*b[1], r.c2 + a*b[2], r.c3 + a*b[3]}
}

// put adds r to dst's four values, or stores it there when add is false.
func (r row4) put(dst *[4]float32, add bool) {
	if add {
		r = row4{dst[0] + r.c0, dst[1] + r.c1, dst[2] + r.c2, dst[3] + r.c3}
	}
	dst[0], dst[1], dst[2], dst[3] = r.c0, r.c1, r.c2, r.c3
}

// tileRow returns row i of a tile of C with rows ldc elements apart.
func tileRow(c []float32, i, ldc int) *[4]float32 { return (*[4]float32)(c[i*ldc:]) }

// kern2x4Generic adds the product of a packed 2×k panel of A (2 values per
// step of k) and a packed k×4 panel of B (4 values per step of k) to the 2×4
// tile of C starting at c[0], whose rows are ldc elements apart; when add is
// false the tile is overwritten instead, so its old contents are not used.
//
// The main loop is written out, four steps of k at a time, in scalars:
// with row4.madd the inlined bodies share line numbers, the scheduler
// interleaves the steps differently, and the loop spilled twice as often
// and ran about 10% slower. One bounds check per operand per four steps
// comes from converting to fixed-size arrays.
func kern2x4Generic(k int, a, b, c []float32, ldc int, add bool) {
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	a, b = a[:2*k], b[:4*k]
	for ; len(a) >= 8 && len(b) >= 16; a, b = a[8:], b[16:] {
		ap, bp := (*[8]float32)(a), (*[16]float32)(b)
		c00 += ap[0] * bp[0]
		c01 += ap[0] * bp[1]
		c02 += ap[0] * bp[2]
		c03 += ap[0] * bp[3]
		c10 += ap[1] * bp[0]
		c11 += ap[1] * bp[1]
		c12 += ap[1] * bp[2]
		c13 += ap[1] * bp[3]

		c00 += ap[2] * bp[4]
		c01 += ap[2] * bp[5]
		c02 += ap[2] * bp[6]
		c03 += ap[2] * bp[7]
		c10 += ap[3] * bp[4]
		c11 += ap[3] * bp[5]
		c12 += ap[3] * bp[6]
		c13 += ap[3] * bp[7]

		c00 += ap[4] * bp[8]
		c01 += ap[4] * bp[9]
		c02 += ap[4] * bp[10]
		c03 += ap[4] * bp[11]
		c10 += ap[5] * bp[8]
		c11 += ap[5] * bp[9]
		c12 += ap[5] * bp[10]
		c13 += ap[5] * bp[11]

		c00 += ap[6] * bp[12]
		c01 += ap[6] * bp[13]
		c02 += ap[6] * bp[14]
		c03 += ap[6] * bp[15]
		c10 += ap[7] * bp[12]
		c11 += ap[7] * bp[13]
		c12 += ap[7] * bp[14]
		c13 += ap[7] * bp[15]
	}
	r0, r1 := row4{c00, c01, c02, c03}, row4{c10, c11, c12, c13}
	for ; len(a) >= 2 && len(b) >= 4; a, b = a[2:], b[4:] {
		bp := (*[4]float32)(b)
		r0, r1 = r0.madd(a[0], bp), r1.madd(a[1], bp)
	}
	r0.put(tileRow(c, 0, ldc), add)
	r1.put(tileRow(c, 1, ldc), add)
}

// kern4x4Generic is kern2x4Generic for a packed 4×k panel of A and a 4×4
// tile of C. On arm64 a step compiles to four paired loads and 16 FMADDS
// with no spills; unrolling two steps only trades loop counting for
// register moves at the loop's end, so it steps one at a time.
func kern4x4Generic(k int, a, b, c []float32, ldc int, add bool) {
	var r0, r1, r2, r3 row4
	a, b = a[:4*k], b[:4*k]
	for ; len(a) >= 4 && len(b) >= 4; a, b = a[4:], b[4:] {
		ap, bp := (*[4]float32)(a), (*[4]float32)(b)
		r0, r1 = r0.madd(ap[0], bp), r1.madd(ap[1], bp)
		r2, r3 = r2.madd(ap[2], bp), r3.madd(ap[3], bp)
	}
	r0.put(tileRow(c, 0, ldc), add)
	r1.put(tileRow(c, 1, ldc), add)
	r2.put(tileRow(c, 2, ldc), add)
	r3.put(tileRow(c, 3, ldc), add)
}
