package vec

import (
	"fmt"
	"testing"
)

// BenchmarkKernels times each kernel set on 1K, 64K and 1M elements;
// bytes per op count every slice read and written.
func BenchmarkKernels(b *testing.B) {
	for _, im := range impls() {
		for _, n := range []int{1 << 10, 1 << 16, 1 << 20} {
			x, y, d := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], y[i] = float32(i%97)*0.01-0.3, float32(i%89)*0.02+0.5
			}
			run := func(name string, bytes int, f func()) {
				b.Run(fmt.Sprintf("%s/%s/n=%d", name, im.name, n), func(b *testing.B) {
					b.SetBytes(int64(bytes * 4 * n))
					for b.Loop() {
						f()
					}
				})
			}
			run("add", 3, func() { im.add(d, x, y) })
			run("mul", 3, func() { im.mul(d, x, y) })
			run("relu", 2, func() { im.relu(d, x) })
			run("exp", 2, func() { im.expAll(d, x) })
			run("tanh", 2, func() { im.tanhAll(d, x) })
			run("sum", 1, func() { _ = im.sum(x) })
		}
	}
}
