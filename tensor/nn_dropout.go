package tensor

import (
	"fmt"
	"math"
)

// DropoutMask returns an inverted-dropout mask of the given shape and dtype
// (Float32 or Float64) on the CPU: each element is 0 with probability p and
// 1/(1-p) otherwise, drawn from gen (one uniform draw per element, so a
// seed fixes the mask). p = 1 gives all zeros.
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
	keep := 1 - p
	scale := 0.0
	if keep > 0 {
		scale = 1 / keep
	}
	// rng.Float64() is x/2**53 for x the low 53 bits of one Uint64 draw, so
	// Float64() < keep exactly when x < ceil(keep·2**53): the same mask,
	// drawn without the conversion and division.
	limit := uint64(math.Ceil(keep * (1 << 53)))
	out := emptyOut(cpuBackend{}, dt, shape)
	gen.mu.Lock()
	defer gen.mu.Unlock()
	switch m := out.st.buf.(*cpuBuffer).data.(type) {
	case []float32:
		dropoutFill(m, gen, limit, float32(scale))
	case []float64:
		dropoutFill(m, gen, limit, scale)
	}
	return out
}

// dropoutFill sets m[i] to scale where the i-th draw's low 53 bits are
// below limit and to 0 elsewhere.
func dropoutFill[T float32 | float64](m []T, gen *Generator, limit uint64, scale T) {
	for i := range m {
		var v T
		if gen.rng.Uint64()&(1<<53-1) < limit {
			v = scale
		}
		m[i] = v
	}
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
	return x.Mul(DropoutMaskOn(x.Device(), gen, x.shape, p, x.dtype))
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
	keep := 1 - p
	scale := 0.0
	if keep > 0 {
		scale = 1 / keep
	}
	rk.DropoutMask(out.st.buf, keep, scale, gen.Uint64())
	return out
}
