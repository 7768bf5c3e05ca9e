package tensor_test

import (
	"testing"

	"github.com/emberml/ember/tensor"
)

// BenchmarkCoreMatMulSharedWeight is a linear layer on [batch, seq, in]
// input: every batch shares the weight.
func BenchmarkCoreMatMulSharedWeight(b *testing.B) {
	g := tensor.NewGenerator(1)
	x := g.Randn([]int{64, 4, 128})
	w := g.Randn([]int{128, 128})
	b.ResetTimer()
	for range b.N {
		x.MatMul(w)
	}
}

// BenchmarkCoreCastF32ToF64 converts a strided float32 view to float64.
func BenchmarkCoreCastF32ToF64(b *testing.B) {
	x := tensor.NewGenerator(1).Randn([]int{256, 256}).T()
	b.ResetTimer()
	for range b.N {
		x.To(tensor.Float64)
	}
}

// BenchmarkCoreExpF32 applies Exp to a float32 tensor.
func BenchmarkCoreExpF32(b *testing.B) {
	x := tensor.NewGenerator(1).Randn([]int{1 << 16})
	b.ResetTimer()
	for range b.N {
		x.Exp()
	}
}

// BenchmarkCoreSumF32 sums a float32 tensor over its last axis.
func BenchmarkCoreSumF32(b *testing.B) {
	x := tensor.NewGenerator(1).Randn([]int{256, 256})
	b.ResetTimer()
	for range b.N {
		x.Sum([]int{1}, false)
	}
}
