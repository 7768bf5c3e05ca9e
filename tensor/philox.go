package tensor

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a counter-based generator, so element i of a random tensor
// is a pure function of (seed, i) and a device can draw every element in
// parallel. Backends that implement RandomKernels use exactly this
// function; the Go version is the reference their tests compare with.

const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox4x32 returns the 4 words Philox4x32-10 gives for counter ctr and
// key key.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c, k := ctr, key
	for range 10 {
		p0 := uint64(philoxM0) * uint64(c[0])
		p1 := uint64(philoxM1) * uint64(c[2])
		c = [4]uint32{
			uint32(p1>>32) ^ c[1] ^ k[0],
			uint32(p1),
			uint32(p0>>32) ^ c[3] ^ k[1],
			uint32(p0),
		}
		k[0] += philoxW0
		k[1] += philoxW1
	}
	return c
}

// PhiloxUniform returns the uniform draw in [0, 1), with 24 random bits,
// that a RandomKernels backend uses for element i under seed: word i%4 of
// Philox4x32-10 at counter (i/4 low, i/4 high, 0, 0) and key (seed low,
// seed high).
func PhiloxUniform(seed uint64, i int64) float64 {
	g := uint64(i) / 4
	w := Philox4x32([4]uint32{uint32(g), uint32(g >> 32), 0, 0}, [2]uint32{uint32(seed), uint32(seed >> 32)})
	return float64(w[uint64(i)%4]>>8) * (1.0 / (1 << 24))
}

// RandomKernels is an optional part of the backend contract for devices
// that draw random numbers in their own memory. When a tensor's backend
// implements it, dropout masks are made there from one 64-bit seed taken
// from the host Generator, instead of being drawn on the host and copied
// over; the CPU draws its masks by the same rule, so both give the same mask
// for the same seed.
type RandomKernels interface {
	// DropoutMask fills the n elements of dst (Float32 or Float64) with
	// scale where PhiloxUniform(seed, i) < keep and with 0 elsewhere.
	DropoutMask(dst Buffer, keep, scale float64, seed uint64)
}
