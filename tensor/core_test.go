package tensor_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// corePanicContains asserts that f panics with a string message containing
// every part (the op name, the shapes, the rule broken).
func corePanicContains(t *testing.T, f func(), parts ...string) {
	t.Helper()
	var msg any
	func() {
		defer func() { msg = recover() }()
		f()
	}()
	require.NotNil(t, msg, "expected a panic")
	s, ok := msg.(string)
	require.True(t, ok, "panic value %T(%v) is not a string", msg, msg)
	for _, p := range parts {
		assert.Contains(t, s, p)
	}
}

func coreIota(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return tensor.FromSlice(v, shape...)
}

func TestCoreViewsShareStorage(t *testing.T) {
	views := map[string]func(x *tensor.Tensor) *tensor.Tensor{
		"Reshape":   func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(6, 4) },
		"View":      func(x *tensor.Tensor) *tensor.Tensor { return x.View(-1) },
		"Permute":   func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(2, 0, 1) },
		"Transpose": func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 2) },
		"Narrow":    func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 1, 2) },
		"Slice":     func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(2, 1, 4, 2) },
		"Select":    func(x *tensor.Tensor) *tensor.Tensor { return x.Select(1, 2) },
		"Unsqueeze": func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(1) },
		"Squeeze":   func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 1, 1).Squeeze(0) },
		"Expand":    func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 0, 1).Expand(5, 3, 4) },
		"Flatten":   func(x *tensor.Tensor) *tensor.Tensor { return x.Flatten(0, 1) },
		"T":         func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 1).T() },
		"Contiguous of contiguous": func(x *tensor.Tensor) *tensor.Tensor {
			return x.Contiguous()
		},
	}
	for name, view := range views {
		t.Run(name, func(t *testing.T) {
			x := coreIota(2, 3, 4)
			v := view(x)
			assert.True(t, v.SharesStorage(x))
			assert.True(t, x.SharesStorage(v))
		})
	}
	copies := map[string]func(x *tensor.Tensor) *tensor.Tensor{
		"Clone":                      func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() },
		"Contiguous of a transpose":  func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 1).Contiguous() },
		"Reshape of a transpose":     func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(1, 2).Reshape(-1) },
		"Flip":                       func(x *tensor.Tensor) *tensor.Tensor { return x.Flip(0) },
		"To another dtype":           func(x *tensor.Tensor) *tensor.Tensor { return x.To(tensor.Float64) },
		"Add":                        func(x *tensor.Tensor) *tensor.Tensor { return x.AddScalar(0) },
		"Concat of one":              func(x *tensor.Tensor) *tensor.Tensor { return tensor.Concat([]*tensor.Tensor{x}, 0) },
		"Float32s round trip source": func(x *tensor.Tensor) *tensor.Tensor { return tensor.FromSlice(x.Float32s(), x.Shape()...) },
	}
	for name, cp := range copies {
		t.Run(name, func(t *testing.T) {
			x := coreIota(2, 3, 4)
			c := cp(x)
			assert.False(t, c.SharesStorage(x))
			before := x.Float32s()
			if c.DType() == x.DType() && c.Shape()[0] > 0 {
				c.Fill(-1)
			}
			assert.Equal(t, before, x.Float32s(), "writing the copy changed the source")
		})
	}
}

func TestCoreCopyFromThroughViews(t *testing.T) {
	x := tensor.Zeros([]int{3, 4})
	v0 := x.Version()

	// A column (strided view) written through CopyFrom shows in the base.
	x.Select(1, 2).CopyFrom(tensor.FromSlice([]float32{1, 2, 3}))
	assert.Equal(t, []float32{0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0}, x.Float32s())
	assert.Equal(t, v0+1, x.Version())

	// Broadcasting source into a transposed, sliced view.
	x.T().Slice(0, 0, 4, 3).CopyFrom(tensor.FromSlice([]float32{7, 8, 9}, 1, 3))
	assert.Equal(t, []float32{7, 0, 1, 7, 8, 0, 2, 8, 9, 0, 3, 9}, x.Float32s())

	// The version counter is shared by every view of the storage.
	v := x.Narrow(0, 1, 1)
	assert.Equal(t, x.Version(), v.Version())
	before := x.Version()
	v.Fill(5)
	assert.Equal(t, before+1, x.Version())
	assert.Equal(t, before+1, v.Version())
	assert.Equal(t, []float32{5, 5, 5, 5}, x.Select(0, 1).Float32s())

	// Converting copy: int source into a float view.
	x.Select(0, 0).CopyFrom(tensor.FromSlice([]int64{1, 2, 3, 4}))
	assert.Equal(t, []float32{1, 2, 3, 4}, x.Select(0, 0).Float32s())

	// In-place arithmetic bumps the version once per call.
	for name, op := range map[string]func(){
		"AddInPlace":        func() { x.AddInPlace(tensor.Scalar(1)) },
		"SubInPlace":        func() { x.SubInPlace(tensor.Scalar(1)) },
		"MulInPlace":        func() { x.MulInPlace(tensor.Scalar(2)) },
		"DivInPlace":        func() { x.DivInPlace(tensor.Scalar(2)) },
		"MulScalarInPlace":  func() { x.MulScalarInPlace(3) },
		"AddScalarInPlace":  func() { x.AddScalarInPlace(3) },
		"ClampInPlace":      func() { x.ClampInPlace(-100, 100) },
		"ReluInPlace":       func() { x.ReluInPlace() },
		"Zero":              func() { x.Zero() },
		"Fill":              func() { x.Fill(2) },
		"MaskedFillInPlace": func() { x.MaskedFillInPlace(x.Gt(tensor.Scalar(1)), 0) },
	} {
		before := x.Version()
		op()
		assert.Equal(t, before+1, x.Version(), name)
	}
	// Reading never bumps the version.
	before = x.Version()
	_ = x.Sum(nil, false)
	_ = x.Float32s()
	_ = x.Clone()
	assert.Equal(t, before, x.Version())
}

func TestCoreCopyFromAliasing(t *testing.T) {
	// Source and destination overlap: the copy reads the old values.
	x := coreIota(5)
	x.Narrow(0, 1, 4).CopyFrom(x.Narrow(0, 0, 4))
	assert.Equal(t, []float32{0, 0, 1, 2, 3}, x.Float32s())

	x = coreIota(2, 2)
	x.CopyFrom(x.T())
	assert.Equal(t, []float32{0, 2, 1, 3}, x.Float32s())

	corePanicContains(t, func() { tensor.Zeros([]int{1, 3}).Expand(2, 3).CopyFrom(coreIota(2, 3)) },
		"tensor.CopyFrom", "[2 3]", "stride 0")
	corePanicContains(t, func() { tensor.Zeros([]int{2, 3}).CopyFrom(coreIota(3, 2)) },
		"tensor.CopyFrom", "[3 2]", "[2 3]")
}

func TestCoreContiguousClone(t *testing.T) {
	x := coreIota(2, 3)
	assert.Same(t, x, x.Contiguous(), "a contiguous tensor is returned as is")
	n := x.Narrow(0, 1, 1)
	assert.True(t, n.IsContiguous())
	assert.Same(t, n, n.Contiguous(), "a contiguous view with an offset is returned as is")

	tr := x.T()
	assert.False(t, tr.IsContiguous())
	c := tr.Contiguous()
	assert.True(t, c.IsContiguous())
	assert.Equal(t, []int{2, 1}, c.Strides())
	assert.Equal(t, 0, c.Offset())
	assert.Equal(t, []float32{0, 3, 1, 4, 2, 5}, c.Float32s())

	cl := x.Clone()
	assert.NotSame(t, x, cl)
	assert.False(t, cl.SharesStorage(x))
	assert.Equal(t, uint64(0), cl.Version())
	cl.Fill(9)
	assert.Equal(t, []float32{0, 1, 2, 3, 4, 5}, x.Float32s())

	// Clone of a strided view is dense.
	s := coreIota(4, 6).Slice(1, 1, 6, 2).Clone()
	assert.True(t, s.IsContiguous())
	assert.Equal(t, []int{4, 3}, s.Shape())
	assert.Equal(t, []float32{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}, s.Float32s())
}

func TestCoreLayouts(t *testing.T) {
	x := coreIota(2, 3, 4)
	cases := []struct {
		name            string
		v               *tensor.Tensor
		shape, strides  []int
		offset          int
		first, contigOK bool
	}{
		{"permute", x.Permute(2, 0, 1), []int{4, 2, 3}, []int{1, 12, 4}, 0, true, false},
		{"narrow", x.Narrow(2, 1, 2), []int{2, 3, 2}, []int{12, 4, 1}, 1, true, false},
		{"slice step", x.Slice(1, 0, 3, 2), []int{2, 2, 4}, []int{12, 8, 1}, 0, true, false},
		{"select", x.Select(2, 3), []int{2, 3}, []int{12, 4}, 3, true, false},
		{"unsqueeze mid", x.Unsqueeze(1), []int{2, 1, 3, 4}, []int{12, 12, 4, 1}, 0, true, true},
		{"unsqueeze end", x.Unsqueeze(-1), []int{2, 3, 4, 1}, []int{12, 4, 1, 1}, 0, true, true},
		{"expand", x.Narrow(1, 0, 1).Expand(3, 2, 5, 4), []int{3, 2, 5, 4}, []int{0, 12, 0, 1}, 0, true, false},
		{"view of narrow", x.Narrow(2, 0, 2).View(6, 2), []int{6, 2}, []int{4, 1}, 0, true, false},
		{"view splitting a transposed axis", x.Transpose(0, 1).View(3, 2, 2, 2), []int{3, 2, 2, 2}, []int{4, 12, 2, 1}, 0, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.shape, c.v.Shape())
			assert.Equal(t, c.strides, c.v.Strides())
			assert.Equal(t, c.offset, c.v.Offset())
			assert.Equal(t, c.contigOK, c.v.IsContiguous())
			assert.True(t, c.v.SharesStorage(x))
		})
	}
	// Reshape of a 0-d tensor and to a 0-d tensor.
	s := tensor.Scalar(3)
	assert.Equal(t, []int{1, 1}, s.Reshape(1, 1).Shape())
	assert.Empty(t, s.Reshape(1, 1).Reshape().Shape())
	assert.Equal(t, []int{1}, s.Flatten(0, -1).Shape())
	// Size-0 tensors reshape freely.
	z := tensor.Zeros([]int{0, 3})
	assert.Equal(t, []int{3, 0}, z.Reshape(3, 0).Shape())
	assert.Equal(t, []int{0}, z.Reshape(-1).Shape())
}

func TestCoreShapePanics(t *testing.T) {
	x := coreIota(2, 3, 4)
	cases := []struct {
		name  string
		f     func()
		parts []string
	}{
		{"reshape count", func() { x.Reshape(5, 5) }, []string{"tensor.Reshape", "[5 5]", "[2 3 4]"}},
		{"reshape two -1", func() { x.Reshape(-1, -1) }, []string{"tensor.Reshape", "[-1 -1]"}},
		{"reshape infer", func() { x.Reshape(5, -1) }, []string{"tensor.Reshape", "[5 -1]", "24"}},
		{"view non-contiguous", func() { x.Transpose(0, 1).View(-1) }, []string{"tensor.View", "[3 2 4]", "Reshape"}},
		{"permute count", func() { x.Permute(0, 1) }, []string{"tensor.Permute", "[2 3 4]"}},
		{"permute repeat", func() { x.Permute(0, 1, 1) }, []string{"tensor.Permute", "repeated"}},
		{"transpose axis", func() { x.Transpose(0, 3) }, []string{"tensor.Transpose", "axis 3", "3-d"}},
		{"T of 3-d", func() { x.T() }, []string{"tensor.T", "[2 3 4]"}},
		{"narrow", func() { x.Narrow(1, 2, 2) }, []string{"tensor.Narrow", "[2 3 4]"}},
		{"slice step", func() { x.Slice(0, 0, 2, 0) }, []string{"tensor.Slice", "step"}},
		{"select", func() { x.Select(2, 4) }, []string{"tensor.Select", "index 4", "[2 3 4]"}},
		{"squeeze", func() { x.Squeeze(1) }, []string{"tensor.Squeeze", "size 3", "[2 3 4]"}},
		{"unsqueeze", func() { x.Unsqueeze(4) }, []string{"tensor.Unsqueeze", "axis 4"}},
		{"expand", func() { x.Expand(2, 5, 4) }, []string{"tensor.Expand", "[2 3 4]", "[2 5 4]"}},
		{"expand fewer", func() { x.Expand(3, 4) }, []string{"tensor.Expand", "[3 4]"}},
		{"expand negative", func() { coreIota(1).Expand(-2) }, []string{"tensor.Expand", "-2"}},
		{"flatten", func() { x.Flatten(2, 1) }, []string{"tensor.Flatten"}},
		{"add", func() { x.Add(coreIota(3)) }, []string{"tensor.Add", "[2 3 4]", "[3]", "broadcastable"}},
		{"where", func() { tensor.Where(tensor.Ones([]int{2}, tensor.Bool), x, x) }, []string{"tensor.Where", "broadcastable"}},
		{"matmul inner", func() { coreIota(2, 3).MatMul(coreIota(4, 2)) }, []string{"tensor.MatMul", "[2 3]", "[4 2]", "3 vs 4"}},
		{"matmul batch", func() { coreIota(2, 2, 3).MatMul(coreIota(3, 3, 2)) }, []string{"tensor.MatMul", "broadcastable"}},
		{"matmul scalar", func() { tensor.Scalar(1).MatMul(coreIota(2)) }, []string{"tensor.MatMul", "at least 1-d"}},
		{"dot", func() { coreIota(2).Dot(coreIota(3)) }, []string{"tensor.Dot", "[2]", "[3]"}},
		{"sum axis", func() { x.Sum([]int{3}, false) }, []string{"tensor.Sum", "axis 3"}},
		{"sum repeat", func() { x.Sum([]int{1, -2}, false) }, []string{"tensor.Sum", "repeated"}},
		{"max empty", func() { tensor.Zeros([]int{2, 0}).Max([]int{1}, false) }, []string{"tensor.Max", "[2 0]"}},
		{"argmax axis", func() { x.ArgMax(-4, false) }, []string{"tensor.ArgMax", "axis -4"}},
		{"cumsum axis", func() { x.CumSum(3) }, []string{"tensor.CumSum", "axis 3"}},
		{"concat rank", func() { tensor.Concat([]*tensor.Tensor{x, coreIota(2, 3)}, 0) }, []string{"tensor.Concat", "[2 3]", "[2 3 4]"}},
		{"concat axis size", func() { tensor.Concat([]*tensor.Tensor{x, coreIota(2, 4, 4)}, 0) }, []string{"tensor.Concat", "axis 1"}},
		{"concat none", func() { tensor.Concat(nil, 0) }, []string{"tensor.Concat"}},
		{"stack shapes", func() { tensor.Stack([]*tensor.Tensor{x, coreIota(2, 3, 5)}, 0) }, []string{"tensor.Stack", "[2 3 5]"}},
		{"flip repeat", func() { x.Flip(0, -3) }, []string{"tensor.Flip", "repeated"}},
		{"clamp", func() { x.Clamp(2, 1) }, []string{"tensor.Clamp", "min 2", "max 1"}},
		{"norm p", func() { x.Norm(-1, nil, false) }, []string{"tensor.Norm", "-1"}},
		{"item", func() { x.Item() }, []string{"tensor.Item", "[2 3 4]"}},
		{"fromslice", func() { tensor.FromSlice([]float32{1, 2, 3}, 2, 2) }, []string{"tensor.FromSlice", "[2 2]"}},
		{"zeros negative", func() { tensor.Zeros([]int{2, -1}) }, []string{"tensor", "negative", "[2 -1]"}},
		{"arange sign", func() { tensor.Arange(3, 1, 1) }, []string{"tensor.Arange", "step 1"}},
		{"arange zero step", func() { tensor.Arange(0, 1, 0) }, []string{"tensor.Arange"}},
		{"linspace", func() { tensor.Linspace(0, 1, -1) }, []string{"tensor.Linspace", "-1"}},
		{"half unary", func() { x.To(tensor.Float16).Exp() }, []string{"tensor.Exp", "float16", "To(Float32)"}},
		{"bool neg", func() { tensor.Ones([]int{2}, tensor.Bool).Neg() }, []string{"tensor.Neg", "bool"}},
		{"bool sub", func() { tensor.Ones([]int{2}, tensor.Bool).Sub(tensor.Ones([]int{2}, tensor.Bool)) }, []string{"tensor.Sub", "bool"}},
		{"uniform", func() { tensor.NewGenerator(1).Uniform([]int{2}, 1, 0) }, []string{"tensor.Uniform"}},
		{"randint", func() { tensor.NewGenerator(1).RandInt([]int{2}, 3, 3) }, []string{"tensor.RandInt", "[3, 3)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { corePanicContains(t, c.f, c.parts...) })
	}
	assert.PanicsWithValue(t, "tensor.T: want a 2-d tensor, got shape [2 3 4]; use Transpose or Permute", func() { x.T() })
	assert.PanicsWithValue(t, "tensor.MatMul: inner dimensions differ: [2 3] @ [4 2] (3 vs 4)", func() { coreIota(2, 3).MatMul(coreIota(4, 2)) })
}

func TestCoreCastEdges(t *testing.T) {
	// int64 -> float32 rounds once, like a C cast (not through float64).
	big := tensor.FromSlice([]int64{1<<62 + 1<<38 + 1, -(1<<62 + 1<<38 + 1), 1<<24 + 1})
	assert.Equal(t, []float32{float32(1<<62 + 1<<39), -float32(1<<62 + 1<<39), 1 << 24}, big.Float32s())
	// int64 -> int32 wraps, even beyond 2**53.
	w := tensor.FromSlice([]int64{1<<60 + 7, -(1 << 40) - 3, math.MaxInt64, math.MinInt64})
	assert.Equal(t, []int32{7, -3, -1, 0}, w.Int32s())
	// int64 survives int64 -> float64 -> int64 only up to 2**53; int64 -> int64 is exact.
	assert.Equal(t, []int64{1<<60 + 7, -(1 << 40) - 3, math.MaxInt64, math.MinInt64}, w.Int64s())
	// Bool conversions: NaN is true, -0 is false.
	b := tensor.FromSlice([]float64{math.NaN(), -0.0, 1e-300, math.Inf(-1)}).Bools()
	assert.Equal(t, []bool{true, false, true, true}, b)
	// Half <-> other dtypes go through float32.
	h := tensor.FromSlice([]int64{3, 2049, 70000}).To(tensor.Float16)
	assert.Equal(t, []float64{3, 2048, math.Inf(1)}, h.Float64s())
	bf := tensor.FromSlice([]bool{true, false}).To(tensor.BFloat16)
	assert.Equal(t, []uint16{0x3f80, 0}, bf.HalfBits())
	assert.Equal(t, []int64{1, 0}, bf.Int64s())
	// Half -> half of the other kind.
	assert.Equal(t, []float64{1, 0}, bf.To(tensor.Float16).Float64s())
	// A strided half view converts element by element.
	hv := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3).To(tensor.Float16).T()
	assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, hv.Float32s())
}

// TestCoreHalfRoundTrip checks every 16-bit pattern: converting to float32
// and back gives the same bits (NaNs stay NaN).
func TestCoreHalfRoundTrip(t *testing.T) {
	for b := range 1 << 16 {
		h := uint16(b)
		f := tensor.Float16ToFloat32(h)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			require.True(t, math.IsNaN(float64(f)), "f16 %#04x", h)
			require.True(t, math.IsNaN(float64(tensor.Float16ToFloat32(tensor.Float16FromFloat32(f)))))
		} else {
			require.Equal(t, h, tensor.Float16FromFloat32(f), "f16 %#04x -> %v", h, f)
		}
		g := tensor.BFloat16ToFloat32(h)
		if h&0x7f80 == 0x7f80 && h&0x7f != 0 {
			require.True(t, math.IsNaN(float64(g)), "bf16 %#04x", h)
			require.True(t, math.IsNaN(float64(tensor.BFloat16ToFloat32(tensor.BFloat16FromFloat32(g)))))
		} else {
			require.Equal(t, h, tensor.BFloat16FromFloat32(g), "bf16 %#04x -> %v", h, g)
		}
	}
}

// TestCoreHalfNearest checks rounding of random float32 values: the result
// is a nearest representable value and ties go to the even pattern.
func TestCoreHalfNearest(t *testing.T) {
	g := tensor.NewGenerator(7)
	vals := g.Normal([]int{20000}, 0, 1, tensor.Float64).Float64s()
	type conv struct {
		name string
		from func(float32) uint16
		to   func(uint16) float32
	}
	for _, c := range []conv{
		{"float16", tensor.Float16FromFloat32, tensor.Float16ToFloat32},
		{"bfloat16", tensor.BFloat16FromFloat32, tensor.BFloat16ToFloat32},
	} {
		for i, v := range vals {
			// Spread magnitudes over the whole half range, subnormals included.
			x := float32(v * math.Exp2(float64(i%48-26)))
			h := c.from(x)
			got := float64(c.to(h))
			if math.IsInf(got, 0) {
				continue
			}
			// Neighbours of h with the same sign.
			for _, nb := range []uint16{h + 1, h - 1} {
				if nb&0x7fff == 0x7fff || (h&0x7fff == 0 && nb == h-1) {
					continue
				}
				n := float64(c.to(nb))
				if math.IsNaN(n) || math.IsInf(n, 0) {
					continue
				}
				dGot, dN := math.Abs(float64(x)-got), math.Abs(float64(x)-n)
				require.LessOrEqual(t, dGot, dN, "%s(%v) = %v, but %v is nearer", c.name, x, got, n)
				if dGot == dN {
					require.Zero(t, h&1, "%s(%v): tie must round to even", c.name, x)
				}
			}
		}
	}
}

func TestCoreTypePromotion(t *testing.T) {
	i64 := tensor.FromSlice([]int64{7, -7})
	i32 := tensor.FromSlice([]int32{2, 2})
	f32 := tensor.FromSlice([]float32{0.5, 0.5})
	f64 := tensor.FromSlice([]float64{0.5, 0.5})
	bl := tensor.FromSlice([]bool{true, false})
	cases := []struct {
		name string
		got  *tensor.Tensor
		dt   tensor.DType
		vals []float64
	}{
		{"int64+float32", i64.Add(f32), tensor.Float32, []float64{7.5, -6.5}},
		{"int32+int64", i32.Add(i64), tensor.Int64, []float64{9, -5}},
		{"float32+float64", f32.Add(f64), tensor.Float64, []float64{1, 1}},
		{"int/int true division", i64.Div(i32), tensor.Float32, []float64{3.5, -3.5}},
		{"int floor division", i64.FloorDiv(i32), tensor.Int64, []float64{3, -4}},
		{"float floor division", f32.AddScalar(6.5).FloorDiv(tensor.FromSlice([]float32{2, -2})), tensor.Float32, []float64{3, -4}},
		{"bool+int", bl.Add(i64), tensor.Int64, []float64{8, -7}},
		{"bool sum", bl.Sum(nil, false), tensor.Int64, []float64{1}},
		{"int32 sum", i32.Sum(nil, false), tensor.Int64, []float64{4}},
		{"int32 max keeps int32", i32.Max(nil, false), tensor.Int32, []float64{2}},
		{"int mean", i64.Mean(nil, false), tensor.Float32, []float64{0}},
		{"int exp", i32.Exp(), tensor.Float32, []float64{math.Exp(2), math.Exp(2)}},
		{"int scalar keeps int", i64.AddScalar(2), tensor.Int64, []float64{9, -5}},
		{"int fractional scalar", i64.MulScalar(0.5), tensor.Float32, []float64{3.5, -3.5}},
		{"int div scalar", i64.DivScalar(2), tensor.Float32, []float64{3.5, -3.5}},
		{"int clamp whole", i64.Clamp(-3, 3), tensor.Int64, []float64{3, -3}},
		{"int clamp fraction", i64.Clamp(-2.5, math.Inf(1)), tensor.Float32, []float64{7, -2.5}},
		{"int pow scalar", i64.PowScalar(2), tensor.Int64, []float64{49, 49}},
		{"int pow fraction", i32.PowScalar(0.5), tensor.Float32, []float64{math.Sqrt2, math.Sqrt2}},
		{"bool exp", bl.Exp(), tensor.Float32, []float64{math.E, 1}},
		{"float32 where float64", tensor.Where(bl, f32, f64), tensor.Float64, []float64{0.5, 0.5}},
		{"int64 cumsum", i32.CumSum(0), tensor.Int64, []float64{2, 4}},
		{"concat promotes", tensor.Concat([]*tensor.Tensor{i64, f32}, 0), tensor.Float32, []float64{7, -7, 0.5, 0.5}},
		{"int matmul", i64.MatMul(i32), tensor.Int64, []float64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.dt, c.got.DType())
			assert.InDeltaSlice(t, c.vals, c.got.Float64s(), 1e-6)
		})
	}
	assert.Equal(t, tensor.Float32, tensor.PromoteTypes(tensor.Float16, tensor.BFloat16))
	assert.Equal(t, tensor.Float16, tensor.PromoteTypes(tensor.Float16, tensor.Int64))
	assert.Equal(t, tensor.Int32, tensor.PromoteTypes(tensor.Bool, tensor.Int32))
}

func TestCoreRNG(t *testing.T) {
	shape := []int{50}
	draws := map[string]func(g *tensor.Generator) *tensor.Tensor{
		"Rand":        func(g *tensor.Generator) *tensor.Tensor { return g.Rand(shape) },
		"Uniform":     func(g *tensor.Generator) *tensor.Tensor { return g.Uniform(shape, -2, 3, tensor.Float64) },
		"Randn":       func(g *tensor.Generator) *tensor.Tensor { return g.Randn(shape) },
		"Normal":      func(g *tensor.Generator) *tensor.Tensor { return g.Normal(shape, 1, 2, tensor.Float64) },
		"RandInt":     func(g *tensor.Generator) *tensor.Tensor { return g.RandInt(shape, -100, 100) },
		"Bernoulli":   func(g *tensor.Generator) *tensor.Tensor { return g.Bernoulli(tensor.Full(shape, 0.5)) },
		"Permutation": func(g *tensor.Generator) *tensor.Tensor { return g.Permutation(50) },
	}
	for name, draw := range draws {
		t.Run(name, func(t *testing.T) {
			a1, a2 := tensor.NewGenerator(42), tensor.NewGenerator(42)
			b := tensor.NewGenerator(43)
			x, y, z := draw(a1), draw(a2), draw(b)
			assert.Equal(t, x.Float64s(), y.Float64s(), "same seed, same values")
			assert.NotEqual(t, x.Float64s(), z.Float64s(), "different seeds differ")
			// The sequence goes on: a second draw differs from the first.
			x2 := draw(a1)
			assert.NotEqual(t, x.Float64s(), x2.Float64s())
			assert.Equal(t, x2.Float64s(), draw(a2).Float64s())
		})
	}

	g := tensor.NewGenerator(1)
	const n = 100000
	u := g.Uniform([]int{n}, -2, 3, tensor.Float64).Float64s()
	lo, hi := slices.Min(u), slices.Max(u)
	assert.GreaterOrEqual(t, lo, -2.0)
	assert.Less(t, hi, 3.0)
	assert.Less(t, lo, -1.99)
	assert.Greater(t, hi, 2.99)
	assert.InDelta(t, 0.5, coreMean(u), 0.05)

	// Float32 values never round up to hi, even for hi just above lo.
	u32 := g.Uniform([]int{n}, 1, 1+1e-6, tensor.Float32).Float32s()
	for _, v := range u32 {
		require.True(t, v >= 1 && v < float32(1+1e-6), "value %v outside [1, 1+1e-6)", v)
	}
	r := g.Rand([]int{n}).Float32s()
	assert.Less(t, slices.Max(r), float32(1))
	assert.GreaterOrEqual(t, slices.Min(r), float32(0))

	nv := g.Normal([]int{n}, 3, 2, tensor.Float64).Float64s()
	m := coreMean(nv)
	assert.InDelta(t, 3, m, 0.05)
	var ss float64
	for _, v := range nv {
		ss += (v - m) * (v - m)
	}
	assert.InDelta(t, 2, math.Sqrt(ss/float64(n-1)), 0.05)

	ri := g.RandInt([]int{n}, -3, 4).Int64s()
	assert.Equal(t, int64(-3), slices.Min(ri))
	assert.Equal(t, int64(3), slices.Max(ri))

	bern := g.Bernoulli(tensor.Full([]int{n}, 0.25, tensor.Float64)).Float64s()
	assert.InDelta(t, 0.25, coreMean(bern), 0.01)

	for _, size := range []int{0, 1, 7, 1000} {
		p := g.Permutation(size)
		assert.Equal(t, tensor.Int64, p.DType())
		got := p.Int64s()
		slices.Sort(got)
		for i, v := range got {
			require.Equal(t, int64(i), v, "Permutation(%d) is not a permutation", size)
		}
	}
	assert.NotEqual(t, g.Perm(20), g.Perm(20))
}

func coreMean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func TestCoreMatMulLayouts(t *testing.T) {
	// Every combination of row-major, transposed, strided and broadcast
	// operands agrees with a naive float64 product.
	g := tensor.NewGenerator(3)
	base := g.Randn([]int{2, 6, 10}, tensor.Float64)
	naive := func(a, b *tensor.Tensor) []float64 {
		as, bs := a.Shape(), b.Shape()
		m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
		av, bv := a.Float64s(), b.Float64s()
		batch := len(av) / (m * k)
		bBatch := len(bv) / (k * n)
		out := make([]float64, 0, batch*m*n)
		for p := range batch {
			q := p % bBatch
			for i := range m {
				for j := range n {
					var s float64
					for l := range k {
						s += av[p*m*k+i*k+l] * bv[q*k*n+l*n+j]
					}
					out = append(out, s)
				}
			}
		}
		return out
	}
	operands := map[string]func(x *tensor.Tensor) *tensor.Tensor{
		"dense":      func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 0, 3).Narrow(2, 0, 4) },
		"transposed": func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 0, 4).Narrow(2, 0, 3).Transpose(1, 2) },
		"strided":    func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(2, 0, 8, 2).Narrow(1, 0, 3) },
		"rows":       func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(1, 0, 6, 2).Narrow(2, 0, 4) },
		"expanded":   func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 0, 1).Narrow(2, 0, 4).Expand(2, 3, 4) },
	}
	for na, fa := range operands {
		for nb, fb := range operands {
			t.Run(na+"@"+nb, func(t *testing.T) {
				a := fa(base)                         // [2, 3, 4]
				b := fb(base.Flip(2)).Transpose(1, 2) // [2, 4, 3]
				got := a.MatMul(b)
				assert.Equal(t, []int{2, 3, 3}, got.Shape())
				assert.InDeltaSlice(t, naive(a.Contiguous(), b.Contiguous()), got.Float64s(), 1e-12)
				got32 := a.To(tensor.Float32).MatMul(b.To(tensor.Float32))
				assert.InDeltaSlice(t, naive(a.Contiguous(), b.Contiguous()), got32.Float64s(), 1e-4)
			})
		}
	}
	// Vector operands with strides and broadcast batches.
	v := base.Select(0, 0).Select(1, 3)    // [6], stride 10
	m := base.Select(0, 1).Narrow(1, 0, 5) // [6, 5]
	assert.InDeltaSlice(t, naive(v.Unsqueeze(0).Contiguous(), m.Contiguous()), v.MatMul(m).Float64s(), 1e-12)
	assert.Equal(t, []int{5}, v.MatMul(m).Shape())
	assert.Empty(t, v.MatMul(v).Shape())
	// A batch sharing one right operand folds into one product: dense and
	// row-strided left operands, a 2-d and an expanded 3-d right operand.
	w := base.Select(0, 0).Narrow(1, 0, 3).Narrow(0, 0, 4) // [4, 3], row stride 10
	for name, a := range map[string]*tensor.Tensor{
		"dense":        g.Randn([]int{3, 2, 4}, tensor.Float64),
		"row strided":  base.Reshape(12, 10).Narrow(1, 2, 4).View(3, 4, 4),
		"4-d batch":    g.Randn([]int{2, 3, 2, 4}, tensor.Float64),
		"single batch": g.Randn([]int{1, 5, 4}, tensor.Float64),
	} {
		for bname, b := range map[string]*tensor.Tensor{"2-d": w, "expanded": w.Unsqueeze(0).Expand(3, 4, 3)} {
			if bname == "expanded" && (a.Dim() != 3 || a.Size(0) != 3) {
				continue
			}
			got := a.MatMul(b)
			want := naive(a.Contiguous().Reshape(-1, 4), w.Contiguous())
			require.Len(t, got.Float64s(), len(want), "%s @ %s %v", name, bname, got.Shape())
			assert.InDeltaSlice(t, want, got.Float64s(), 1e-12, "%s @ %s", name, bname)
			assert.Equal(t, append(a.Shape()[:a.Dim()-1], 3), got.Shape())
		}
	}
	// Empty products.
	assert.Equal(t, []float64{0, 0, 0, 0}, tensor.Zeros([]int{2, 0}).MatMul(tensor.Zeros([]int{0, 2})).Float64s())
	assert.Equal(t, []int{0, 3}, tensor.Zeros([]int{0, 2}).MatMul(tensor.Zeros([]int{2, 3})).Shape())
}

func TestCoreStridedKernels(t *testing.T) {
	// Unary, binary, where and reductions on views with offsets, negative
	// strides (Flip is a copy, so build them through Slice of a transpose)
	// and broadcast operands agree with the same ops on contiguous copies.
	g := tensor.NewGenerator(11)
	base := g.Randn([]int{4, 5, 6}, tensor.Float64)
	views := map[string]*tensor.Tensor{
		"permuted": base.Permute(2, 0, 1).Narrow(0, 1, 4),
		"sliced":   base.Slice(2, 1, 6, 2).Narrow(0, 1, 2),
		"selected": base.Select(1, 3).Unsqueeze(1),
		"expanded": base.Narrow(1, 0, 1).Expand(4, 3, 6),
	}
	for name, v := range views {
		t.Run(name, func(t *testing.T) {
			c := v.Contiguous().Clone()
			assert.Equal(t, c.Exp().Float64s(), v.Exp().Float64s())
			assert.Equal(t, c.To(tensor.Float32).Tanh().Float32s(), v.To(tensor.Float32).Tanh().Float32s())
			assert.Equal(t, c.Mul(c.Flip(0)).Float64s(), v.Mul(v.Flip(0)).Float64s())
			assert.Equal(t, c.Add(c.Select(0, 0)).Float64s(), v.Add(v.Select(0, 0)).Float64s())
			assert.Equal(t, tensor.Where(c.Gt(tensor.ScalarOf(0, tensor.Float64)), c, c.Neg()).Float64s(),
				tensor.Where(v.Gt(tensor.ScalarOf(0, tensor.Float64)), v, v.Neg()).Float64s())
			for _, axes := range [][]int{nil, {0}, {1, 2}, {-1}} {
				assert.InDeltaSlice(t, c.Sum(axes, false).Float64s(), v.Sum(axes, false).Float64s(), 1e-12, fmt.Sprint(axes))
				assert.Equal(t, c.Max(axes, true).Float64s(), v.Max(axes, true).Float64s(), fmt.Sprint(axes))
			}
			assert.Equal(t, c.ArgMax(1, false).Int64s(), v.ArgMax(1, false).Int64s())
			assert.InDeltaSlice(t, c.CumSum(-1).Float64s(), v.CumSum(-1).Float64s(), 1e-12)
			assert.Equal(t, c.Flip(0, 2).Float64s(), v.Flip(0, 2).Float64s())
		})
	}
}

func TestCoreScalarOps(t *testing.T) {
	b := tensor.FromSlice([]bool{true, false})
	i := tensor.FromSlice([]int32{3, -4})
	cases := []struct {
		name string
		got  *tensor.Tensor
		dt   tensor.DType
		vals []float64
	}{
		{"bool+1", b.AddScalar(1), tensor.Int64, []float64{2, 1}},
		{"bool*0.5", b.MulScalar(0.5), tensor.Float32, []float64{0.5, 0}},
		{"int32+2", i.AddScalar(2), tensor.Int32, []float64{5, -2}},
		{"int32-inf", i.SubScalar(math.Inf(1)), tensor.Float32, []float64{math.Inf(-1), math.Inf(-1)}},
		{"int32 affine whole", i.Affine(2, 1), tensor.Int32, []float64{7, -7}},
		{"int32 affine fraction", i.Affine(0.5, 1), tensor.Float32, []float64{2.5, -1}},
		{"float32 affine", tensor.FromSlice([]float32{1, 2}).Affine(-1, 0.5), tensor.Float32, []float64{-0.5, -1.5}},
		{"logsumexp empty", tensor.Zeros([]int{2, 0}).LogSumExp([]int{1}, false), tensor.Float32, []float64{math.Inf(-1), math.Inf(-1)}},
		{"sum 0-d axis", tensor.Scalar(2).Sum([]int{0}, true), tensor.Float32, []float64{2}},
		{"argmax 0-d", tensor.Scalar(2).ArgMax(-1, false), tensor.Int64, []float64{0}},
		{"cumsum 0-d", tensor.Scalar(2).CumSum(0), tensor.Float32, []float64{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.dt, c.got.DType())
			assert.Equal(t, c.vals, c.got.Float64s())
		})
	}
}

// TestCoreViewRandom reshapes random strided views (permuted, sliced,
// narrowed, expanded, with size-1 axes) into random shapes: whenever View
// succeeds its elements must be the row-major elements of the source, and
// Reshape must always give them.
func TestCoreViewRandom(t *testing.T) {
	g := tensor.NewGenerator(9)
	rnd := func(n int) int { return int(g.RandInt([]int{1}, 0, int64(n)).Int64s()[0]) }
	factor := func(n int) []int {
		var shape []int
		for n > 1 {
			d := 2 + rnd(n-1)
			for n%d != 0 {
				d++
			}
			shape = append(shape, d)
			n /= d
		}
		for range rnd(3) {
			shape = slices.Insert(shape, rnd(len(shape)+1), 1)
		}
		return shape
	}
	views := 0
	for trial := range 3000 {
		x := coreIota(4, 3, 2, 6)
		for range 1 + rnd(3) {
			switch rnd(6) {
			case 0:
				p := make([]int, x.Dim())
				for i := range p {
					p[i] = i
				}
				for i := range p {
					j := rnd(i + 1)
					p[i], p[j] = p[j], p[i]
				}
				x = x.Permute(p...)
			case 1:
				a := rnd(x.Dim())
				if n := x.Size(a); n > 1 {
					start := rnd(n - 1)
					x = x.Narrow(a, start, 1+rnd(n-start))
				}
			case 2:
				a := rnd(x.Dim())
				x = x.Slice(a, 0, x.Size(a), 1+rnd(2))
			case 3:
				x = x.Unsqueeze(rnd(x.Dim() + 1))
			case 4:
				a := rnd(x.Dim())
				if x.Size(a) == 1 {
					shape := x.Shape()
					shape[a] = 2 + rnd(2)
					x = x.Expand(shape...)
				}
			case 5:
				if x.Dim() > 1 {
					x = x.Select(rnd(x.Dim()), 0)
				}
			}
		}
		want := x.Contiguous().Float32s()
		shape := factor(x.Numel())
		if x.Numel() == 1 && rnd(2) == 0 {
			shape = nil
		}
		require.Equal(t, want, x.Reshape(shape...).Float32s(), "trial %d: Reshape%v of shape %v strides %v", trial, shape, x.Shape(), x.Strides())
		var v *tensor.Tensor
		func() {
			defer func() { _ = recover() }()
			v = x.View(shape...)
		}()
		assert.Equal(t, coreViewable(x, shape), v != nil, "trial %d: View%v of shape %v strides %v", trial, shape, x.Shape(), x.Strides())
		if v != nil {
			views++
			require.True(t, v.SharesStorage(x))
			require.Equal(t, want, v.Float32s(), "trial %d: View%v of shape %v strides %v gave strides %v", trial, shape, x.Shape(), x.Strides(), v.Strides())
		}
	}
	assert.Greater(t, views, 500, "the random views should often be viewable")
}

// coreViewable reports, by brute force, whether some strides for shape
// enumerate x's elements in x's row-major order.
func coreViewable(x *tensor.Tensor, shape []int) bool {
	offs := coreOffsets(x.Shape(), x.Strides(), x.Offset())
	if len(offs) <= 1 {
		return true
	}
	st := make([]int, len(shape))
	for i := range shape {
		step := 1
		for _, d := range shape[i+1:] {
			step *= d
		}
		if shape[i] > 1 {
			st[i] = offs[step] - offs[0]
		}
	}
	return slices.Equal(coreOffsets(shape, st, offs[0]), offs)
}

// coreOffsets lists the storage offset of every element in row-major order.
func coreOffsets(shape, strides []int, off int) []int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]int, 0, n)
	idx := make([]int, len(shape))
	for range n {
		o := off
		for d, i := range idx {
			o += i * strides[d]
		}
		out = append(out, o)
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}
