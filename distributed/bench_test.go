package distributed

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/emberml/ember/tensor"
)

// BenchmarkAllReduce measures all-reduce of float32 tensors across
// loopback ranks in one process; b.SetBytes counts the tensor size.
func BenchmarkAllReduce(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		for _, n := range []int{1 << 10, 1 << 14, 1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/floats=%d", ranks, n), func(b *testing.B) {
				gs, err := NewLocalGroups(context.Background(), ranks)
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					for _, g := range gs {
						g.Close()
					}
				}()
				xs := make([]*tensor.Tensor, ranks)
				for i := range xs {
					xs[i] = tensor.Ones([]int{n})
				}
				b.SetBytes(int64(4 * n))
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, g := range gs {
					wg.Go(func() {
						for range b.N {
							if err := g.AllReduce(xs[g.Rank()], Sum); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}
