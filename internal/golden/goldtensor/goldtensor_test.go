package goldtensor_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

func TestToTensor(t *testing.T) {
	tests := []struct {
		name  string
		in    golden.Tensor
		dtype tensor.DType
		shape []int
		check func(t *testing.T, x *tensor.Tensor)
	}{
		{"float32", golden.Tensor{Shape: []int{2, 2}, DType: golden.Float32, Data: []float64{1.5, -2, 0.25, 3}}, tensor.Float32, []int{2, 2},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, []float32{1.5, -2, 0.25, 3}, x.Float32s()) }},
		{"float64", golden.Tensor{Shape: []int{3}, DType: golden.Float64, Data: []float64{0.1, 0.2, 0.3}}, tensor.Float64, []int{3},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, []float64{0.1, 0.2, 0.3}, x.Float64s()) }},
		{"int64", golden.Tensor{Shape: []int{1, 3}, DType: golden.Int64, Data: []float64{-4, 0, 9}}, tensor.Int64, []int{1, 3},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, []int64{-4, 0, 9}, x.Int64s()) }},
		{"int32", golden.Tensor{Shape: []int{2}, DType: golden.Int32, Data: []float64{7, -7}}, tensor.Int32, []int{2},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, []int32{7, -7}, x.Int32s()) }},
		{"bool", golden.Tensor{Shape: []int{3}, DType: golden.Bool, Data: []float64{1, 0, 1}}, tensor.Bool, []int{3},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, []bool{true, false, true}, x.Bools()) }},
		{"scalar", golden.Tensor{Shape: []int{}, DType: golden.Float64, Data: []float64{2.5}}, tensor.Float64, []int{},
			func(t *testing.T, x *tensor.Tensor) { assert.Equal(t, 2.5, x.Item()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := goldtensor.ToTensor(tc.in)
			require.Equal(t, tc.dtype, x.DType())
			require.Equal(t, len(tc.shape), x.Dim())
			if len(tc.shape) > 0 {
				require.Equal(t, tc.shape, x.Shape())
			}
			tc.check(t, x)
		})
	}
}

func TestToTensorDoesNotAliasShape(t *testing.T) {
	g := golden.Tensor{Shape: []int{2, 1}, DType: golden.Float32, Data: []float64{1, 2}}
	x := goldtensor.ToTensor(g)
	g.Shape[0] = 99
	assert.Equal(t, []int{2, 1}, x.Shape())
}

func TestToTensorUnknownDType(t *testing.T) {
	assert.PanicsWithValue(t, "goldtensor.ToTensor: unknown golden dtype complex64", func() {
		goldtensor.ToTensor(golden.Tensor{Shape: []int{1}, DType: "complex64", Data: []float64{1}})
	})
}

func TestCheck(t *testing.T) {
	want := golden.Tensor{Shape: []int{2}, DType: golden.Float32, Data: []float64{1, 2}}
	t.Run("match", func(t *testing.T) {
		assert.True(t, goldtensor.Check(t, "match", want, tensor.FromSlice([]float32{1, 2.0000001}, 2), 1e-6, 0))
	})
	tests := []struct {
		name string
		got  *tensor.Tensor
	}{
		{"value", tensor.FromSlice([]float32{1, 2.5}, 2)},
		{"shape", tensor.FromSlice([]float32{1, 2}, 1, 2)},
		{"nil", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				goldtensor.Check(rec, tc.name, want, tc.got, 1e-6, 0)
			}()
			<-done
			assert.True(t, rec.failed, "Check should fail on a %s mismatch", tc.name)
		})
	}
}

// recorder is a testing.TB that records failures instead of failing the
// enclosing test, so Check's negative cases can be asserted.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()                        {}
func (r *recorder) Errorf(format string, a ...any) { r.failed = true }
func (r *recorder) Error(a ...any)                 { r.failed = true }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Fatal(a ...any)                 { r.failed = true; runtime.Goexit() }
func (r *recorder) Fail()                          { r.failed = true }
func (r *recorder) FailNow()                       { r.failed = true; runtime.Goexit() }
func (r *recorder) Failed() bool                   { return r.failed }
