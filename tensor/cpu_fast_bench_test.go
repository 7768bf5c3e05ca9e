package tensor

import (
	"fmt"
	"testing"

	"github.com/emberml/ember/tensor/internal/cpu"
)

// BenchmarkElementwiseF32 compares the CPU backend's float32 fast paths
// (SIMD kernels of internal/vec, split over NumThreads goroutines from 64K
// elements) with the generic per-element closure kernels they replace, on
// contiguous operands of 1K, 64K and 1M elements. Bytes per op count every
// element read and written, so MB/s is memory throughput.
//
//	go test ./tensor -run '^$' -bench ElementwiseF32
func BenchmarkElementwiseF32(b *testing.B) {
	var be cpuBackend
	for _, n := range []int{1 << 10, 1 << 16, 1 << 20} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(i%97)*0.01-0.3, float32(i%89)*0.02+0.5
		}
		xb, yb := &cpuBuffer{dtype: Float32, data: x}, &cpuBuffer{dtype: Float32, data: y}
		d := make([]float32, n)
		db := &cpuBuffer{dtype: Float32, data: d}
		sum := &cpuBuffer{dtype: Float32, data: make([]float32, 1)}
		l := Layout{Shape: []int{n}, Strides: []int{1}}
		run := func(op, path string, words int, f func()) {
			b.Run(fmt.Sprintf("%s/n=%d/%s", op, n, path), func(b *testing.B) {
				b.SetBytes(int64(words * 4 * n))
				for b.Loop() {
					f()
				}
			})
		}
		for _, bo := range []struct {
			name string
			op   BinaryOp
		}{{"add", OpAdd}, {"mul", OpMul}} {
			run(bo.name, "generic", 3, func() { cpu.Zip(d, l.Shape, x, l.Strides, 0, y, l.Strides, 0, binF32(bo.op)) })
			run(bo.name, "fast-1thread", 3, func() {
				SetNumThreads(1)
				be.Binary(bo.op, db, xb, l, yb, l)
				SetNumThreads(0)
			})
			run(bo.name, "fast", 3, func() { be.Binary(bo.op, db, xb, l, yb, l) })
		}
		for _, uo := range []struct {
			name string
			op   UnaryOp
		}{{"relu", UnaryOp{Kind: OpRelu}}, {"exp", UnaryOp{Kind: OpExp}}} {
			run(uo.name, "generic", 2, func() { cpu.Map(d, x, l.Shape, l.Strides, 0, unaryF32(uo.op)) })
			run(uo.name, "fast-1thread", 2, func() {
				SetNumThreads(1)
				be.Unary(uo.op, db, xb, l)
				SetNumThreads(0)
			})
			run(uo.name, "fast", 2, func() { be.Unary(uo.op, db, xb, l) })
		}
		run("sum", "generic", 1, func() { cpu.Reduce(cpu.Sum, sum.data.([]float32), x, 1, n) })
		run("sum", "fast-1thread", 1, func() {
			SetNumThreads(1)
			be.Reduce(ReduceSum, sum, xb, 1, n)
			SetNumThreads(0)
		})
		run("sum", "fast", 1, func() { be.Reduce(ReduceSum, sum, xb, 1, n) })
	}
}
