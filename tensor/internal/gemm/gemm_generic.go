package gemm

// genericKernel is the portable pure-Go micro-kernel, used where no assembly
// kernel applies (other architectures, the purego build tag, or x86 CPUs
// without AVX2+FMA).
var genericKernel = &kernel{name: "generic", mr: 4, nr: 4, mc: 64, kc: 256, nc: 1024, fn: kern4x4Generic}

// kern4x4Generic adds the product of a packed 4×k panel of A (4 values per
// step of k) and a packed k×4 panel of B (4 values per step of k) to the 4×4
// tile of C starting at c[0], whose rows are ldc elements apart; when add is
// false the tile is overwritten instead, so its old contents are not used.
func kern4x4Generic(k int, a, b, c []float32, ldc int, add bool) {
	if !add {
		for i := range 4 {
			clear(c[i*ldc : i*ldc+4])
		}
	}
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	a = a[:4*k]
	b = b[:4*k]
	for p := 0; p < k; p++ {
		ap := a[4*p : 4*p+4 : 4*p+4]
		bp := b[4*p : 4*p+4 : 4*p+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	r := c[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}
