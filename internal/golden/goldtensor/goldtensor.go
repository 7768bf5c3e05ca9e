// Package goldtensor converts golden-fixture tensors (package golden) to
// Ember tensors and compares Ember results against them. It exists so the
// golden tests of every package share one conversion instead of each
// repeating it; it is imported only by tests.
//
// Internal tests of package tensor cannot import it (that would be an
// import cycle); external test packages such as tensor_test can.
package goldtensor

import (
	"testing"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/tensor"
)

// ToTensor returns a contiguous CPU tensor with g's dtype, shape and values.
// The shape is copied, so the result never aliases g. It panics on a dtype
// the golden package does not define.
func ToTensor(g golden.Tensor) *tensor.Tensor {
	shape := append([]int{}, g.Shape...)
	switch g.DType {
	case golden.Float32:
		return tensor.FromSlice(g.Float32s(), shape...)
	case golden.Float64:
		return tensor.FromSlice(g.Float64s(), shape...)
	case golden.Int64:
		return tensor.FromSlice(g.Int64s(), shape...)
	case golden.Int32:
		return tensor.FromSlice(g.Int32s(), shape...)
	case golden.Bool:
		return tensor.FromSlice(g.Bools(), shape...)
	}
	panic("goldtensor.ToTensor: unknown golden dtype " + g.DType)
}

// Check reports a test error unless got has want's shape and every value of
// got is within atol + rtol*|want| of want's (see golden.AllClose, which it
// calls with got's values read as float64), and reports whether it passed.
// A nil got is a fatal error.
func Check(t testing.TB, name string, want golden.Tensor, got *tensor.Tensor, rtol, atol float64) bool {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: got nil tensor, want shape %v", name, want.Shape)
		return false
	}
	return golden.AllClose(t, name, want, got.Shape(), got.Float64s(), rtol, atol)
}
