package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/emberml/ember/tensor"
)

func TestFromDense(t *testing.T) {
	m := mat.NewDense(3, 4, []float64{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
	})
	tests := []struct {
		name  string
		m     *mat.Dense
		shape []int
		want  []float64
	}{
		{"full", m, []int{3, 4}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"submatrix with stride", m.Slice(1, 3, 1, 3).(*mat.Dense), []int{2, 2}, []float64{6, 7, 10, 11}},
		{"row", m.Slice(2, 3, 0, 4).(*mat.Dense), []int{1, 4}, []float64{9, 10, 11, 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := tensor.FromDense(tt.m)
			assert.Equal(t, tensor.Float64, x.DType())
			assert.Equal(t, tt.shape, x.Shape())
			assert.Equal(t, tt.want, x.Float64s())
		})
	}
	// The tensor owns a copy.
	x := tensor.FromDense(m)
	m.Set(0, 0, 100)
	assert.Equal(t, 1.0, x.At(0, 0))
}

func TestToDense(t *testing.T) {
	tests := []struct {
		name string
		x    *tensor.Tensor
		want []float64
	}{
		{"float32", tensor.FromSlice([]float32{1.5, 2, 3, 4}, 2, 2), []float64{1.5, 2, 3, 4}},
		{"float64 transposed", tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3).T(), []float64{1, 4, 2, 5, 3, 6}},
		{"int64", tensor.FromSlice([]int64{-3, 7}, 1, 2), []float64{-3, 7}},
		{"int32", tensor.FromSlice([]int32{5, 6}, 2, 1), []float64{5, 6}},
		{"bool", tensor.FromSlice([]bool{true, false}, 1, 2), []float64{1, 0}},
		{"float16", tensor.FromHalfBits(tensor.Float16, []uint16{0x3800}, 1, 1), []float64{0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.x.ToDense()
			r, c := d.Dims()
			assert.Equal(t, tt.x.Shape(), []int{r, c})
			assert.Equal(t, tt.want, d.RawMatrix().Data)
			assert.True(t, mat.Equal(d, mat.NewDense(r, c, tt.want)))
		})
	}
	// Round trip through gonum arithmetic.
	a := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2)
	var p mat.Dense
	p.Mul(a.ToDense(), a.ToDense())
	assert.Equal(t, a.MatMul(a).Float64s(), tensor.FromDense(&p).Float64s())
}

func TestToDensePanics(t *testing.T) {
	assert.PanicsWithValue(t, "tensor.ToDense: want a 2-d tensor, got shape [3]; use Reshape or Unsqueeze first",
		func() { tensor.Zeros([]int{3}).ToDense() })
	assert.Panics(t, func() { tensor.Zeros([]int{0, 3}).ToDense() })
	assert.Panics(t, func() { tensor.Zeros([]int{2, 2}).ToVecDense() })
	assert.Panics(t, func() { tensor.Zeros([]int{0}).ToVecDense() })
}

func TestVecDense(t *testing.T) {
	v := mat.NewVecDense(5, []float64{1, 2, 3, 4, 5})
	x := tensor.FromVecDense(v)
	assert.Equal(t, []int{5}, x.Shape())
	assert.Equal(t, tensor.Float64, x.DType())
	assert.Equal(t, []float64{1, 2, 3, 4, 5}, x.Float64s())

	// A column of a matrix is a strided vector.
	m := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})
	col := m.ColView(1).(*mat.VecDense)
	assert.Equal(t, []float64{2, 5}, tensor.FromVecDense(col).Float64s())

	back := tensor.FromSlice([]int64{3, -1, 4}).ToVecDense()
	require.Equal(t, 3, back.Len())
	assert.Equal(t, []float64{3, -1, 4}, back.RawVector().Data)
	// A strided 1-d view converts to its own elements.
	column := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3).Select(1, 2)
	assert.Equal(t, []float64{3, 6}, column.ToVecDense().RawVector().Data)
}
