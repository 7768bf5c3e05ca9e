package vec

import "fmt"

// Philox4x32-10 (Salmon et al., SC 2011) constants: round multipliers and
// the Weyl increments of the key.
const (
	philoxM0     = 0xD2511F53
	philoxM1     = 0xCD9E8D57
	philoxW0     = 0x9E3779B9
	philoxW1     = 0xBB67AE85
	philoxRounds = 10
)

// philoxKeys returns the round keys of Philox4x32-10 under key (seed low,
// seed high), k0 and k1 of round r at 2r and 2r+1, so that drawing many
// blocks adds them up once.
func philoxKeys(seed uint64) [2 * philoxRounds]uint32 {
	var ks [2 * philoxRounds]uint32
	k0, k1 := uint32(seed), uint32(seed>>32)
	for r := range philoxRounds {
		ks[2*r], ks[2*r+1] = k0, k1
		k0 += philoxW0
		k1 += philoxW1
	}
	return ks
}

// PhiloxBlock returns the 4 words of Philox4x32-10 at counter (c0, c1, 0, 0)
// under key (seed low, seed high).
func PhiloxBlock(c0, c1 uint32, seed uint64) [4]uint32 {
	ks := philoxKeys(seed)
	w0, w1, w2, w3 := philoxBlock(c0, c1, &ks)
	return [4]uint32{w0, w1, w2, w3}
}

// philoxBlock is Philox4x32-10 at counter (c0, c1, 0, 0) with the round
// keys of philoxKeys, in scalars the compiler keeps in registers.
func philoxBlock(c0, c1 uint32, ks *[2 * philoxRounds]uint32) (w0, w1, w2, w3 uint32) {
	w0, w1 = c0, c1
	for r := range philoxRounds {
		p0 := uint64(philoxM0) * uint64(w0)
		p1 := uint64(philoxM1) * uint64(w2)
		w0, w1, w2, w3 = uint32(p1>>32)^w1^ks[2*r], uint32(p1), uint32(p0>>32)^w3^ks[2*r+1], uint32(p0)
	}
	return w0, w1, w2, w3
}

// PhiloxMask32 sets dst[j] to scale where the top 24 bits of word i%4 of
// the Philox4x32-10 block i/4 (counter (i/4 low, i/4 high, 0, 0), key
// (seed low, seed high)), i = first+j, are below limit, and to 0 elsewhere:
// an inverted-dropout mask that element i of a larger tensor gets the same
// whichever slice of it a call draws. first must be a multiple of 4.
func PhiloxMask32(dst []float32, first, seed uint64, limit uint32, scale float32) {
	ks := philoxKeys(seed)
	philoxRuns(len(dst), first, func(lo, hi int) {
		done := lo
		if k := philoxMask32Kernel; k != nil {
			done = lo + (hi-lo)/philoxStep*philoxStep
			if done > lo {
				g := (first + uint64(lo)) / 4
				k(dst[lo:done], uint32(g), uint32(g>>32), &ks, limit, scale)
			}
		}
		philoxMaskGo(dst[done:hi], first+uint64(done), &ks, limit, scale)
	})
}

// PhiloxDropout32 is PhiloxMask32 into mask that also sets out[j] =
// x[j]*mask[j], in the same pass.
func PhiloxDropout32(mask, x, out []float32, first, seed uint64, limit uint32, scale float32) {
	if len(x) != len(mask) || len(out) != len(mask) {
		panic(fmt.Sprintf("vec: PhiloxDropout32: len(mask) = %d, len(x) = %d, len(out) = %d; they must be equal", len(mask), len(x), len(out)))
	}
	ks := philoxKeys(seed)
	philoxRuns(len(mask), first, func(lo, hi int) {
		done := lo
		if k := philoxDropout32Kernel; k != nil {
			done = lo + (hi-lo)/philoxStep*philoxStep
			if done > lo {
				g := (first + uint64(lo)) / 4
				k(mask[lo:done], x[lo:done], out[lo:done], uint32(g), uint32(g>>32), &ks, limit, scale)
			}
		}
		philoxMaskGo(mask[done:hi], first+uint64(done), &ks, limit, scale)
		for i := done; i < hi; i++ {
			out[i] = x[i] * mask[i]
		}
	})
}

// PhiloxMask64 is PhiloxMask32 for float64 (pure Go).
func PhiloxMask64(dst []float64, first, seed uint64, limit uint32, scale float64) {
	ks := philoxKeys(seed)
	philoxRuns(len(dst), first, func(lo, hi int) {
		philoxMaskGo(dst[lo:hi], first+uint64(lo), &ks, limit, scale)
	})
}

// philoxRuns calls f on consecutive ranges [lo, hi) covering n elements
// from element first (a multiple of 4), each within one run of blocks that
// share their high counter word, as the kernels need.
func philoxRuns(n int, first uint64, f func(lo, hi int)) {
	if first%4 != 0 {
		panic(fmt.Sprintf("vec: Philox: first element %d is not a multiple of 4", first))
	}
	for lo := 0; lo < n; {
		g := (first + uint64(lo)) / 4
		hi := n
		// Blocks up to the next multiple of 2**32 share the high word.
		if left := (1<<32 - g%(1<<32)) * 4; uint64(n-lo) > left {
			hi = lo + int(left)
		}
		f(lo, hi)
		lo = hi
	}
}

// philoxStep is the element count the assembly kernel draws per iteration
// (16 blocks); its callers pass multiples of it.
const philoxStep = 64

// philoxMaskGo is the pure-Go twin of the mask kernels; first is a
// multiple of 4 and the blocks of dst share their high counter word.
func philoxMaskGo[T float32 | float64](dst []T, first uint64, ks *[2 * philoxRounds]uint32, limit uint32, scale T) {
	pick := func(w uint32) T {
		if w>>8 < limit {
			return scale
		}
		return 0
	}
	g := first / 4
	for len(dst) >= 4 {
		w0, w1, w2, w3 := philoxBlock(uint32(g), uint32(g>>32), ks)
		d := dst[:4:4]
		d[0], d[1], d[2], d[3] = pick(w0), pick(w1), pick(w2), pick(w3)
		dst = dst[4:]
		g++
	}
	if len(dst) > 0 {
		w0, w1, w2, _ := philoxBlock(uint32(g), uint32(g>>32), ks)
		ws := [3]uint32{w0, w1, w2}
		for j := range dst {
			dst[j] = pick(ws[j])
		}
	}
}
