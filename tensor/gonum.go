package tensor

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// FromDense returns a 2-d Float64 CPU tensor holding a copy of m.
func FromDense(m *mat.Dense) *Tensor {
	r, c := m.Dims()
	raw := m.RawMatrix()
	v := make([]float64, r*c)
	for i := range r {
		copy(v[i*c:(i+1)*c], raw.Data[i*raw.Stride:i*raw.Stride+c])
	}
	return FromSlice(v, r, c)
}

// ToDense returns a copy of the 2-d tensor t as a gonum matrix, converting
// any dtype to float64 (bools become 0 and 1). It panics if t is not 2-d or
// has a zero dimension (gonum matrices cannot be empty).
func (t *Tensor) ToDense() *mat.Dense {
	if t.Dim() != 2 {
		panic(fmt.Sprintf("tensor.ToDense: want a 2-d tensor, got shape %v; use Reshape or Unsqueeze first", t.shape))
	}
	if t.shape[0] == 0 || t.shape[1] == 0 {
		panic(fmt.Sprintf("tensor.ToDense: shape %v is empty; gonum matrices need at least one row and column", t.shape))
	}
	return mat.NewDense(t.shape[0], t.shape[1], t.Float64s())
}

// FromVecDense returns a 1-d Float64 CPU tensor holding a copy of v.
func FromVecDense(v *mat.VecDense) *Tensor {
	n := v.Len()
	raw := v.RawVector()
	out := make([]float64, n)
	for i := range out {
		out[i] = raw.Data[i*raw.Inc]
	}
	return FromSlice(out, n)
}

// ToVecDense returns a copy of the 1-d tensor t as a gonum vector, converting
// any dtype to float64. It panics if t is not 1-d or is empty.
func (t *Tensor) ToVecDense() *mat.VecDense {
	if t.Dim() != 1 {
		panic(fmt.Sprintf("tensor.ToVecDense: want a 1-d tensor, got shape %v; use Reshape(-1) first", t.shape))
	}
	if t.shape[0] == 0 {
		panic("tensor.ToVecDense: the tensor is empty; gonum vectors need at least one element")
	}
	return mat.NewVecDense(t.shape[0], t.Float64s())
}
