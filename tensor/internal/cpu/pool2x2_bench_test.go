package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/emberml/ember/tensor/internal/parallel"
)

// BenchmarkMaxPool2x2 times the 2×2 stride-2 pooling with positions of
// examples/ddp's first MNIST layer at a rank's batch (32 images of 16
// planes of 28×28, random values) on one goroutine: the float32 kernel
// and the generic one.
func BenchmarkMaxPool2x2(b *testing.B) {
	g := PoolGeom{Planes: 32 * 16, H: 28, W: 28, KH: 2, KW: 2, StrideH: 2, StrideW: 2, DilationH: 1, DilationW: 1, OH: 14, OW: 14}
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, g.Planes*g.H*g.W)
	for i := range src {
		src[i] = rng.Float32()
	}
	dst, idx := make([]float32, g.Planes*g.OH*g.OW), make([]int64, g.Planes*g.OH*g.OW)
	parallel.SetThreads(1)
	defer parallel.SetThreads(0)
	b.Run("float32", func(b *testing.B) {
		for b.Loop() {
			maxPool2x2F32(dst, idx, src, g)
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			maxPool2x2Generic(dst, idx, src, g)
		}
	})
}
