//go:build amd64 && !purego

package vec

import "github.com/emberml/ember/tensor/internal/isa"

//go:generate python3 philoxgen.py

// philoxMask32AVX512 draws len(dst) (a multiple of 64) mask elements from
// the blocks block, block+1, … (low counter words; they must not wrap)
// with high counter word hi (philox_amd64.s).
//
//go:noescape
func philoxMask32AVX512(dst []float32, block, hi uint32, keys *[2 * philoxRounds]uint32, limit uint32, scale float32)

// philoxMask32Kernel is the AVX-512 kernel where the CPU has AVX-512F, else
// nil (the pure-Go twin draws everything).
var philoxMask32Kernel = func() func([]float32, uint32, uint32, *[2 * philoxRounds]uint32, uint32, float32) {
	if isa.Has(isa.AVX512) {
		return philoxMask32AVX512
	}
	return nil
}()

// philoxDropout32AVX512 is philoxMask32AVX512 into mask that also writes
// x times the mask into out (philox_amd64.s).
//
//go:noescape
func philoxDropout32AVX512(mask, x, out []float32, block, hi uint32, keys *[2 * philoxRounds]uint32, limit uint32, scale float32)

// philoxDropout32Kernel is the fused AVX-512 kernel where the CPU has
// AVX-512F, else nil.
var philoxDropout32Kernel = func() func(mask, x, out []float32, block, hi uint32, keys *[2 * philoxRounds]uint32, limit uint32, scale float32) {
	if isa.Has(isa.AVX512) {
		return philoxDropout32AVX512
	}
	return nil
}()
