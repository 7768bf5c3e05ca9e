package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// intDivElem is the set of element types TruncDiv, TruncRem and FloorRem
// take.
type intDivElem interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64
}

// intElems returns t's elements as T, through Uint64s for unsigned T so
// that values past MaxInt64 survive.
func intElems[T intDivElem](t *tensor.Tensor) []T {
	var out []T
	if T(0)-1 > 0 {
		for _, v := range t.Uint64s() {
			out = append(out, T(v))
		}
		return out
	}
	for _, v := range t.Int64s() {
		out = append(out, T(v))
	}
	return out
}

// checkIntDivide divides every value of vals (a column) by every non-zero
// one (a row, broadcast against it) and compares TruncDiv and TruncRem with
// Go's / and %, and FloorRem with a - FloorDiv(a, b)·b in T's wrapping
// arithmetic; then a zero divisor must give ErrDivideByZero.
func checkIntDivide[T intDivElem](t *testing.T, dt tensor.DType, vals []T) {
	var nz []T
	for _, v := range vals {
		if v != 0 {
			nz = append(nz, v)
		}
	}
	a, b := tensor.FromSlice(vals, len(vals), 1), tensor.FromSlice(nz, 1, len(nz))
	q, err := tensor.TruncDiv(a, b)
	require.NoError(t, err)
	r, err := tensor.TruncRem(a, b)
	require.NoError(t, err)
	m, err := tensor.FloorRem(a, b)
	require.NoError(t, err)
	for _, out := range []*tensor.Tensor{q, r, m} {
		require.Equal(t, dt, out.DType())
		require.Equal(t, []int{len(vals), len(nz)}, out.Shape())
	}
	gq, gr, gm, fd := intElems[T](q), intElems[T](r), intElems[T](m), intElems[T](a.FloorDiv(b))
	for i, x := range vals {
		for j, y := range nz {
			k := i*len(nz) + j
			assert.Equal(t, x/y, gq[k], "%v / %v", x, y)
			assert.Equal(t, x%y, gr[k], "%v %% %v", x, y)
			assert.Equal(t, x-fd[k]*y, gm[k], "%v mod %v", x, y)
		}
	}
	withZero := tensor.FromSlice([]T{1, 0, 1}, 3)
	for _, f := range []func(a, b *tensor.Tensor) (*tensor.Tensor, error){tensor.TruncDiv, tensor.TruncRem, tensor.FloorRem} {
		out, err := f(a, withZero)
		require.ErrorIs(t, err, tensor.ErrDivideByZero)
		require.Nil(t, out)
	}
}

// TestTruncDivMatchesGo covers every integer dtype with its extreme values,
// small values of both signs and zero.
func TestTruncDivMatchesGo(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"int8", func(t *testing.T) {
			checkIntDivide(t, tensor.Int8, []int8{math.MinInt8, math.MinInt8 + 1, -7, -2, -1, 0, 1, 2, 7, math.MaxInt8 - 1, math.MaxInt8})
		}},
		{"int16", func(t *testing.T) {
			checkIntDivide(t, tensor.Int16, []int16{math.MinInt16, math.MinInt16 + 1, -300, -7, -1, 0, 1, 3, 7, math.MaxInt16})
		}},
		{"int32", func(t *testing.T) {
			checkIntDivide(t, tensor.Int32, []int32{math.MinInt32, math.MinInt32 + 1, -70000, -7, -1, 0, 1, 2, 7, math.MaxInt32 - 1, math.MaxInt32})
		}},
		{"int64", func(t *testing.T) {
			checkIntDivide(t, tensor.Int64, []int64{math.MinInt64, math.MinInt64 + 1, -1 << 53, -(1 << 53) - 1, -7, -1, 0, 1, 2, 7, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64})
		}},
		{"uint8", func(t *testing.T) {
			checkIntDivide(t, tensor.Uint8, []uint8{0, 1, 2, 7, 128, math.MaxUint8 - 1, math.MaxUint8})
		}},
		{"uint16", func(t *testing.T) {
			checkIntDivide(t, tensor.Uint16, []uint16{0, 1, 3, 7, 1 << 15, math.MaxUint16 - 1, math.MaxUint16})
		}},
		{"uint32", func(t *testing.T) {
			checkIntDivide(t, tensor.Uint32, []uint32{0, 1, 2, 7, 1 << 31, math.MaxUint32 - 1, math.MaxUint32})
		}},
		{"uint64", func(t *testing.T) {
			checkIntDivide(t, tensor.Uint64, []uint64{0, 1, 2, 7, 1<<53 + 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// TestTruncDivValues pins the three rules on the cases where they part:
// operands of opposite signs, and the most negative value over -1.
func TestTruncDivValues(t *testing.T) {
	a := tensor.FromSlice([]int8{-7, 7, -7, 7, math.MinInt8, 6}, 6)
	b := tensor.FromSlice([]int8{2, -2, -2, 2, -1, 3}, 6)
	cases := []struct {
		name string
		f    func(a, b *tensor.Tensor) (*tensor.Tensor, error)
		want []int64
	}{
		{"TruncDiv", tensor.TruncDiv, []int64{-3, -3, 3, 3, math.MinInt8, 2}},
		{"TruncRem", tensor.TruncRem, []int64{-1, 1, -1, 1, 0, 0}},
		{"FloorRem", tensor.FloorRem, []int64{1, -1, -1, 1, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f(a, b)
			require.NoError(t, err)
			require.Equal(t, tensor.Int8, got.DType())
			assert.Equal(t, c.want, got.Int64s())
		})
	}
}

// TestTruncDivPromotesAndBroadcasts divides an int8 matrix by a 0-d int32
// and a strided view, and refuses floating-point operands.
func TestTruncDivPromotesAndBroadcasts(t *testing.T) {
	a := tensor.FromSlice([]int8{-9, -4, 4, 9, 100, -100}, 2, 3)
	q, err := tensor.TruncDiv(a, tensor.ScalarOf(-4, tensor.Int32))
	require.NoError(t, err)
	require.Equal(t, tensor.Int32, q.DType())
	assert.Equal(t, []int64{2, 1, -1, -2, -25, 25}, q.Int64s())

	r, err := tensor.TruncRem(a.T(), tensor.FromSlice([]int8{3, -5}, 2))
	require.NoError(t, err)
	require.Equal(t, []int{3, 2}, r.Shape())
	assert.Equal(t, []int64{0, 4, -1, 0, 1, 0}, r.Int64s())

	require.Panics(t, func() { _, _ = tensor.TruncDiv(tensor.FromSlice([]float32{1}), a) })
}
