//go:build amd64 && !purego

package vec

import "github.com/emberml/ember/tensor/internal/isa"

// addWidenAVX512 adds x into acc for a length that is a multiple of 16
// (widen_amd64.s).
//
//go:noescape
func addWidenAVX512(acc []float64, x []float32)

// addWidenKernel is the AVX-512 kernel where the CPU has AVX-512F, else nil.
var addWidenKernel = func() func([]float64, []float32) {
	if isa.Has(isa.AVX512) {
		return addWidenAVX512
	}
	return nil
}()
