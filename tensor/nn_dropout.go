package tensor

import "fmt"

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
	n := numel(shape)
	keep := 1 - p
	scale := 0.0
	if keep > 0 {
		scale = 1 / keep
	}
	gen.mu.Lock()
	defer gen.mu.Unlock()
	switch dt {
	case Float32:
		m := make([]float32, n)
		s := float32(scale)
		for i := range m {
			if gen.rng.Float64() < keep {
				m[i] = s
			}
		}
		return FromSlice(m, shape...)
	default:
		m := make([]float64, n)
		for i := range m {
			if gen.rng.Float64() < keep {
				m[i] = scale
			}
		}
		return FromSlice(m, shape...)
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
