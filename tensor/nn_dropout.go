package tensor

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor/internal/vec"
)

// DropoutMask returns an inverted-dropout mask of the given shape and dtype
// (Float32 or Float64) on the CPU: each element is 0 with probability p and
// 1/(1-p) otherwise. It takes one 64-bit seed from gen and keeps element i
// where PhiloxUniform(seed, i) < 1-p, the rule a RandomKernels device
// follows, so a seed fixes the mask and the CPU and such a device draw the
// same one. Being counter-based, the mask is drawn on NumThreads
// goroutines. p = 1 gives all zeros.
func DropoutMask(gen *Generator, shape []int, p float64, dt DType) *Tensor {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("tensor.DropoutMask: probability %v out of [0, 1]", p))
	}
	if gen == nil {
		panic("tensor.DropoutMask: nil Generator; dropout needs a seeded source of randomness")
	}
	if dt != Float32 && dt != Float64 {
		panic(fmt.Sprintf("tensor.DropoutMask: dtype %s; want float32 or float64", dt))
	}
	checkShape("DropoutMask", shape)
	limit, scale := dropoutRule(p)
	out := emptyOut(cpuBackend{}, dt, shape)
	seed := gen.Uint64()
	switch m := out.st.buf.(*cpuBuffer).data.(type) {
	case []float32:
		parallelFor(len(m), dropoutGrain, func(lo, hi int) { vec.PhiloxMask32(m[lo:hi], uint64(lo), seed, limit, float32(scale)) })
	case []float64:
		parallelFor(len(m), dropoutGrain, func(lo, hi int) { vec.PhiloxMask64(m[lo:hi], uint64(lo), seed, limit, scale) })
	}
	return out
}

// dropoutGrain keeps the ranges that goroutines draw on whole Philox blocks
// and whole steps of the vector kernels.
const dropoutGrain = 64

// dropoutRule returns the integer threshold and the scale of dropout with
// probability p. PhiloxUniform is x/2**24 for x a word's top 24 bits, so
// it is below keep = 1-p exactly when x < ceil(keep·2**24): the same mask,
// compared as integers.
func dropoutRule(p float64) (limit uint32, scale float64) {
	keep := 1 - p
	if keep > 0 {
		scale = 1 / keep
	}
	return uint32(math.Ceil(keep * (1 << 24))), scale
}

// DropoutWithMask applies inverted dropout with probability p to x in
// training (as Dropout) and returns the result and the mask it multiplied
// x by (see DropoutMaskOn), which a gradient needs. On the CPU a contiguous
// float32 x is masked in the pass that draws the mask.
func DropoutWithMask(x *Tensor, p float64, gen *Generator) (out, mask *Tensor) {
	nnFloat("DropoutWithMask", x)
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("tensor.DropoutWithMask: probability %v out of [0, 1]", p))
	}
	if gen == nil {
		panic("tensor.DropoutWithMask: nil Generator; dropout needs a seeded source of randomness")
	}
	if x.dtype != Float32 || !sameFloatDense(x) {
		mask = DropoutMaskOn(x.Device(), gen, x.shape, p, x.dtype)
		return x.Mul(mask), mask
	}
	xd, _ := cpuDense[float32](x)
	limit, scale := dropoutRule(p)
	mask, out = emptyOut(cpuBackend{}, Float32, x.shape), emptyOut(cpuBackend{}, Float32, x.shape)
	md, od := mask.st.buf.(*cpuBuffer).data.([]float32), out.st.buf.(*cpuBuffer).data.([]float32)
	seed := gen.Uint64()
	parallelFor(len(xd), dropoutGrain, func(lo, hi int) {
		vec.PhiloxDropout32(md[lo:hi], xd[lo:hi], od[lo:hi], uint64(lo), seed, limit, float32(scale))
	})
	return out, mask
}

// Dropout zeroes each element of x with probability p and scales the rest
// by 1/(1-p) (inverted dropout), as torch.nn.functional.dropout, drawing the
// mask from gen. When training is false or p is 0 it returns x itself.
func Dropout(x *Tensor, p float64, training bool, gen *Generator) *Tensor {
	nnFloat("Dropout", x)
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("tensor.Dropout: probability %v out of [0, 1]", p))
	}
	if !training || p == 0 {
		return x
	}
	out, _ := DropoutWithMask(x, p, gen)
	return out
}

// DropoutMaskOn is DropoutMask made on device d. A device whose backend
// implements RandomKernels draws the mask there from one seed taken from
// gen; any other device gets the host mask copied over.
func DropoutMaskOn(d Device, gen *Generator, shape []int, p float64, dt DType) *Tensor {
	b := mustBackend("DropoutMaskOn", d)
	rk, ok := b.(RandomKernels)
	if !ok {
		m := DropoutMask(gen, shape, p, dt)
		if d == CPU {
			return m
		}
		out, err := m.ToDevice(d)
		if err != nil {
			panic(fmt.Sprintf("tensor.DropoutMaskOn: %v", err))
		}
		return out
	}
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("tensor.DropoutMaskOn: probability %v out of [0, 1]", p))
	}
	if gen == nil {
		panic("tensor.DropoutMaskOn: nil Generator; dropout needs a seeded source of randomness")
	}
	if dt != Float32 && dt != Float64 {
		panic(fmt.Sprintf("tensor.DropoutMaskOn: dtype %s; want float32 or float64", dt))
	}
	out := empty(b, dt, shape)
	_, scale := dropoutRule(p)
	rk.DropoutMask(out.st.buf, 1-p, scale, gen.Uint64())
	return out
}
