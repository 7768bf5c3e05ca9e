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
			run("max", 1, func() { _ = im.max(x) })
			run("dot", 2, func() { _ = im.dot(x, y) })
		}
	}
}

// BenchmarkSubnormal times the optimizer kernels and a few elementwise
// kernels on 203K elements (the MNIST MLP) with ordinary operands, with
// gradients near 1e-20 (whose squares are subnormal in float32) and with
// operands that are subnormal themselves: x86 takes a microcode assist on
// each subnormal operand or result unless the kernel flushes them.
func BenchmarkSubnormal(b *testing.B) {
	const n = 203530
	c := AdamConsts{B1: 0.9, C1: 0.1, B2: 0.999, C2: 0.001, BC2: 0.0447, Eps: 1e-8, StepSize: 1e-3 / 0.1, Decay: 1}
	fill := func(s []float32, v float32) []float32 {
		for i := range s {
			s[i] = v * float32(1+i%7)
		}
		return s
	}
	cases := []struct {
		name       string
		g, m, v, x float32 // gradient, first and second moment, elementwise operand
	}{
		{"normal", 1e-3, 1e-4, 1e-7, 0.5},
		{"tiny-grad", 1e-20, 1e-21, 0, 1e-20},
		{"subnormal-state", 1e-20, 1e-21, 1e-40, 1e-40},
	}
	for _, im := range impls() {
		for _, cs := range cases {
			w := fill(make([]float32, n), 0.01)
			g := fill(make([]float32, n), cs.g)
			m0, v0 := fill(make([]float32, n), cs.m), fill(make([]float32, n), cs.v)
			m, v := make([]float32, n), make([]float32, n)
			x, d := fill(make([]float32, n), cs.x), make([]float32, n)
			run := func(kernel string, f func()) {
				b.Run(fmt.Sprintf("%s/%s/%s", kernel, cs.name, im.name), func(b *testing.B) {
					for b.Loop() {
						f()
					}
				})
			}
			// The state is copied back every step so that it stays in its
			// class (copy does no arithmetic, so it takes no assist); the
			// momentum buffer of SGD takes the second moment's values.
			run("adam", func() {
				copy(m, m0)
				copy(v, v0)
				im.adam(w, g, m, v, c)
			})
			run("sgdMomentum", func() {
				copy(m, v0)
				im.sgdMomentum(w, g, m, 0.9, 1, 0.01)
			})
			run("mul", func() { im.mul(d, x, x) })
			run("add", func() { im.add(d, x, g) })
			run("exp", func() { im.expAll(d, x) })
			run("sum", func() { _ = im.sum(x) })
		}
	}
}
