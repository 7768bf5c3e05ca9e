package tensor

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/tensor/internal/cpu"
)

// ErrDivideByZero is returned by TruncDiv, TruncRem and FloorRem when a
// divisor is zero: integer division has no value to give there.
var ErrDivideByZero = errors.New("integer division by zero")

// intDivKind selects what intDivide computes.
type intDivKind int

const (
	truncQuot intDivKind = iota // quotient rounded toward zero
	truncRem                    // remainder of truncQuot: the dividend's sign
	floorRem                    // remainder of the floored quotient: the divisor's sign
)

// TruncDiv returns a / b rounded toward zero, as Go's and C's integer
// division (-7 / 2 = -3, where FloorDiv gives -4), for integer tensors,
// broadcast together and promoted to a common integer dtype, in one exact
// pass in that dtype. The most negative value divided by -1 wraps to itself,
// as Go defines it (the true quotient does not fit). A zero divisor returns
// an error wrapping ErrDivideByZero. Operands that promote to a
// floating-point or bool dtype panic. Tensors off the CPU are divided on
// the host and the result moved back.
func TruncDiv(a, b *Tensor) (*Tensor, error) { return intDivide("TruncDiv", truncQuot, a, b) }

// TruncRem returns a % b as Go and C take it: the remainder of TruncDiv,
// a - TruncDiv(a, b)·b, which has the dividend's sign (-7 % 2 = -1; C's
// fmod, ONNX Mod with fmod=1). The most negative value % -1 is 0. Operands,
// promotion, errors and devices are as for TruncDiv.
func TruncRem(a, b *Tensor) (*Tensor, error) { return intDivide("TruncRem", truncRem, a, b) }

// FloorRem returns the remainder of FloorDiv, a - FloorDiv(a, b)·b, which
// has the divisor's sign (-7 mod 2 = 1; Python's %, torch.remainder, ONNX
// Mod with fmod=0), for integer tensors. The most negative value mod -1 is
// 0. Operands, promotion, errors and devices are as for TruncDiv.
func FloorRem(a, b *Tensor) (*Tensor, error) { return intDivide("FloorRem", floorRem, a, b) }

// intDivide runs TruncDiv, TruncRem or FloorRem (op names it) on the CPU.
func intDivide(op string, kind intDivKind, a, b *Tensor) (*Tensor, error) {
	ops := oneDevice(op, a, b)
	a, b = ops[0], ops[1]
	dt := PromoteTypes(a.dtype, b.dtype)
	if !dt.IsInt() {
		panic(fmt.Sprintf("tensor.%s: operands of dtypes %v and %v promote to %v; integer dtypes only (use Div, and Trunc or Floor, for floating point)", op, a.dtype, b.dtype, dt))
	}
	if a.Device() != CPU {
		ha, err := a.ToDevice(CPU)
		if err != nil {
			return nil, fmt.Errorf("tensor.%s: %w", op, err)
		}
		hb, err := b.ToDevice(CPU)
		if err != nil {
			return nil, fmt.Errorf("tensor.%s: %w", op, err)
		}
		out, err := intDivide(op, kind, ha, hb)
		if err != nil {
			return nil, err
		}
		return out.ToDevice(a.Device())
	}
	a, b = a.To(dt), b.To(dt)
	shape := BroadcastShapes(op, a.shape, b.shape)
	out := emptyOut(a.st.backend, dt, shape)
	la, lb := a.broadcastLayout(shape), b.broadcastLayout(shape)
	ad, bd, od := a.st.buf.(*cpuBuffer).data, b.st.buf.(*cpuBuffer).data, out.st.buf.(*cpuBuffer).data
	var ok bool
	switch d := od.(type) {
	case []int64:
		ok = divideInts(kind, d, shape, ad.([]int64), la, bd.([]int64), lb)
	case []int32:
		ok = divideInts(kind, d, shape, ad.([]int32), la, bd.([]int32), lb)
	case []int16:
		ok = divideInts(kind, d, shape, ad.([]int16), la, bd.([]int16), lb)
	case []int8:
		ok = divideInts(kind, d, shape, ad.([]int8), la, bd.([]int8), lb)
	case []uint64:
		ok = divideInts(kind, d, shape, ad.([]uint64), la, bd.([]uint64), lb)
	case []uint32:
		ok = divideInts(kind, d, shape, ad.([]uint32), la, bd.([]uint32), lb)
	case []u16:
		ok = divideInts(kind, d, shape, ad.([]u16), la, bd.([]u16), lb)
	case []uint8:
		ok = divideInts(kind, d, shape, ad.([]uint8), la, bd.([]uint8), lb)
	default:
		panic(fmt.Sprintf("tensor.%s: no integer kernel for %v", op, dt))
	}
	if !ok {
		return nil, fmt.Errorf("tensor.%s: %w", op, ErrDivideByZero)
	}
	return out, nil
}

// divideInts writes kind of a and b (views broadcast to shape) into dst in
// one pass and reports false if a divisor was zero (its elements are then
// left 0).
func divideInts[T intElem](kind intDivKind, dst []T, shape []int, a []T, la Layout, b []T, lb Layout) bool {
	var f func(x, y T) T
	switch kind {
	case truncQuot:
		f = func(x, y T) T { return x / y } // Go wraps MinInt / -1 to MinInt
	case truncRem:
		f = func(x, y T) T { return x % y }
	case floorRem:
		f = func(x, y T) T {
			// A non-zero remainder of the other sign than the divisor
			// belongs to the quotient one below: add the divisor once.
			// For unsigned T both tests are false.
			r := x % y
			if r != 0 && (r < 0) != (y < 0) {
				r += y
			}
			return r
		}
	}
	zero := false
	cpu.Zip(dst, shape, a, la.Strides, la.Offset, b, lb.Strides, lb.Offset, func(x, y T) T {
		if y == 0 {
			zero = true
			return 0
		}
		return f(x, y)
	})
	return !zero
}
