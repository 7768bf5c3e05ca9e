package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor/internal/cpu"
)

func randF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*8 - 4
	}
	if n > 3 {
		s[1] = float32(math.NaN())
		s[2] = float32(math.Inf(-1))
		s[3] = 0
	}
	return s
}

// closeULP reports whether got is within k ulps of want (NaN matching NaN).
func closeULP(got, want float32, k float64) bool {
	if got != got || want != want {
		return got != got && want != want
	}
	if got == want {
		return true
	}
	ulp := float64(math.Nextafter32(want, float32(math.Inf(1))) - want)
	return math.Abs(float64(got)-float64(want)) <= k*ulp
}

func withThreads(t *testing.T, n int) {
	t.Helper()
	SetNumThreads(n)
	t.Cleanup(func() { SetNumThreads(0) })
}

func TestNumThreads(t *testing.T) {
	assert.Equal(t, runtime.GOMAXPROCS(0), NumThreads())
	SetNumThreads(3)
	assert.Equal(t, 3, NumThreads())
	SetNumThreads(-1)
	assert.Equal(t, runtime.GOMAXPROCS(0), NumThreads())
}

func TestParallelForCoversRange(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 7} {
		withThreads(t, threads)
		for _, n := range []int{0, 5, parallelMin - 1, parallelMin, 3*parallelMin + 17} {
			hits := make([]int32, n)
			parallelFor(n, 16, func(lo, hi int) {
				if lo != n {
					assert.Zero(t, lo%16, "lo=%d not a multiple of the grain", lo)
				}
				for i := lo; i < hi; i++ {
					hits[i]++
				}
			})
			for i, h := range hits {
				require.Equal(t, int32(1), h, "threads=%d n=%d: element %d visited %d times", threads, n, i, h)
			}
		}
	}
}

// TestUnaryFastPathMatchesGeneric runs every fast unary op on contiguous
// float32 tensors (small and split across goroutines) and compares it with
// the generic closure kernel.
func TestUnaryFastPathMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ops := []struct {
		op  UnaryOp
		ulp float64
	}{
		{UnaryOp{Kind: OpRelu}, 0},
		{UnaryOp{Kind: OpExp}, 1},
		{UnaryOp{Kind: OpSigmoid}, 4},
		{UnaryOp{Kind: OpTanh}, 4},
		{UnaryOp{Kind: OpLog}, 0},
		{UnaryOp{Kind: OpSquare}, 0},
		{UnaryOp{Kind: OpNeg}, 0},
		{UnaryOp{Kind: OpAbs}, 0},
		{UnaryOp{Kind: OpSqrt}, 0},
		{UnaryOp{Kind: OpRsqrt}, 0},
		{UnaryOp{Kind: OpRecip}, 0},
		{UnaryOp{Kind: OpClamp, A: -1.5, B: 2}, 0},
		{UnaryOp{Kind: OpClamp, A: math.Inf(-1), B: 0.5}, 0},
		{UnaryOp{Kind: OpAffine, A: 1, B: 0.25}, 0},
		{UnaryOp{Kind: OpAffine, A: -3, B: 0.5}, 0},
	}
	withThreads(t, 3)
	for _, n := range []int{1, 7, 33, 1000, 3*parallelMin + 5} {
		x := FromSlice(randF32(r, n+2), n+2).Narrow(0, 2, n) // offset view
		for _, tc := range ops {
			gotS := make([]float32, n)
			require.True(t, unaryF32Fast(tc.op, gotS, storage32(x), x.Layout()))
			want := make([]float32, n)
			cpu.Map(want, storage32(x), x.shape, x.strides, x.offset, unaryF32(tc.op))
			for i := range want {
				require.True(t, closeULP(gotS[i], want[i], tc.ulp), "op %d n=%d [%d]: got %v want %v", tc.op.Kind, n, i, gotS[i], want[i])
			}
		}
	}
	// Column slices (strided rows of 9) go row by row.
	for _, tc := range ops {
		x := FromSlice(randF32(r, 6*30), 6, 30).Narrow(1, 11, 9)
		got := make([]float32, 54)
		require.True(t, unaryF32Fast(tc.op, got, storage32(x), x.Layout()))
		want := make([]float32, 54)
		cpu.Map(want, storage32(x), x.shape, x.strides, x.offset, unaryF32(tc.op))
		for i := range want {
			require.True(t, closeULP(got[i], want[i], tc.ulp), "op %d strided [%d]: got %v want %v", tc.op.Kind, i, got[i], want[i])
		}
	}
	// Transposed input: the fast path declines and the generic one answers.
	m := FromSlice([]float32{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12}, 3, 4).T()
	assert.False(t, unaryF32Fast(UnaryOp{Kind: OpRelu}, make([]float32, 12), storage32(m), m.Layout()))
	assert.Equal(t, m.Contiguous().Relu().Float32s(), m.Relu().Float32s())
}

// TestBinaryFastPathLayouts compares the tensor-level arithmetic ops, which
// take the fast paths, with the generic kernel on contiguous, scalar,
// broadcast-row, broadcast-column and transposed operands.
func TestBinaryFastPathLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	withThreads(t, 2)
	big := parallelMin/64 + 3
	pairs := []struct {
		name   string
		sa, sb []int
		transA bool
	}{
		{"same", []int{5, 9}, []int{5, 9}, false},
		{"same-large", []int{big, 64}, []int{big, 64}, false},
		{"scalar-right", []int{big, 64}, []int{}, false},
		{"scalar-left", []int{1, 1}, []int{big, 64}, false},
		{"row-right", []int{big, 64}, []int{64}, false},
		{"row-left", []int{3, 1, 16}, []int{3, 7, 16}, false},
		{"short-row", []int{6, 4}, []int{4}, false},
		{"short-column", []int{6, 7}, []int{6, 1}, false},
		{"column-right", []int{big, 64}, []int{big, 1}, false},
		{"column-left", []int{2, 5, 1}, []int{2, 5, 9}, false},
		{"column-middle", []int{4, 1, 9}, []int{4, 3, 9}, false},
		{"column-middle-large", []int{300, 1, 64}, []int{300, 5, 64}, false},
		{"transposed", []int{9, 6}, []int{6, 9}, true},
	}
	ops := []struct {
		name string
		op   BinaryOp
		f    func(a, b *Tensor) *Tensor
	}{
		{"add", OpAdd, (*Tensor).Add},
		{"sub", OpSub, (*Tensor).Sub},
		{"mul", OpMul, (*Tensor).Mul},
		{"div", OpDiv, (*Tensor).Div},
	}
	for _, p := range pairs {
		a := FromSlice(randF32(r, numel(p.sa)), p.sa...)
		if p.transA {
			a = a.T()
		}
		if p.name == "same" {
			// Column slices of a wider matrix: strided rows.
			a = FromSlice(randF32(r, 5*27), 5, 27).Narrow(1, 9, 9)
		}
		b := FromSlice(randF32(r, numel(p.sb)), p.sb...)
		for _, op := range ops {
			t.Run(fmt.Sprintf("%s/%s", p.name, op.name), func(t *testing.T) {
				got := op.f(a, b)
				shape := got.Shape()
				ea, eb := a.Expand(shape...), b.Expand(shape...)
				want := make([]float32, numel(shape))
				cpu.Zip(want, shape, storage32(a), ea.strides, ea.offset, storage32(b), eb.strides, eb.offset, binF32(op.op))
				g := got.Float32s()
				for i := range want {
					require.True(t, closeULP(g[i], want[i], 0), "[%d]: got %v want %v", i, g[i], want[i])
				}
			})
		}
		cmps := []struct {
			name string
			f    func(a, b *Tensor) *Tensor
			ref  func(x, y float32) bool
		}{
			{"eq", (*Tensor).Eq, func(x, y float32) bool { return x == y }},
			{"ne", (*Tensor).Ne, func(x, y float32) bool { return x != y }},
			{"lt", (*Tensor).Lt, func(x, y float32) bool { return x < y }},
			{"le", (*Tensor).Le, func(x, y float32) bool { return x <= y }},
			{"gt", (*Tensor).Gt, func(x, y float32) bool { return x > y }},
			{"ge", (*Tensor).Ge, func(x, y float32) bool { return x >= y }},
		}
		for _, op := range cmps {
			t.Run(fmt.Sprintf("%s/%s", p.name, op.name), func(t *testing.T) {
				got := op.f(a, b)
				shape := got.Shape()
				ea, eb := a.Expand(shape...), b.Expand(shape...)
				want := make([]bool, numel(shape))
				cpu.Zip(want, shape, storage32(a), ea.strides, ea.offset, storage32(b), eb.strides, eb.offset, op.ref)
				require.Equal(t, want, got.Bools())
				// And back to float32, the relu-gradient mask.
				f := got.To(Float32).Float32s()
				for i, w := range want {
					require.Equal(t, map[bool]float32{false: 0, true: 1}[w], f[i])
				}
			})
		}
	}
}

func TestBoolToFloat32Layouts(t *testing.T) {
	withThreads(t, 2)
	n := parallelMin + 64
	bools := make([]bool, n)
	for i := range bools {
		bools[i] = i%3 == 0
	}
	x := FromSlice(bools, n)
	views := []*Tensor{x, x.Narrow(0, 5, n-5), x.Reshape(n/40, 40).T(), FromSlice([]bool{true}, 1).Expand(7)}
	for _, v := range views {
		got := v.To(Float32).Float32s()
		want := v.Bools()
		require.Len(t, got, len(want))
		for i, w := range want {
			require.Equal(t, map[bool]float32{false: 0, true: 1}[w], got[i], "[%d]", i)
		}
	}
}

// storage32 returns t's whole float32 storage.
func storage32(t *Tensor) []float32 { return t.st.buf.(*cpuBuffer).data.([]float32) }

func TestReduceFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, threads := range []int{1, 2, 5} {
		withThreads(t, threads)
		for _, sh := range [][]int{{7}, {3, 67}, {2 * parallelMin}, {600, 300}} {
			data := randF32(r, numel(sh))
			data[1], data[2] = 0.5, -0.25 // no NaN or Inf here
			x := FromSlice(data, sh...)
			last := len(sh) - 1
			outer, n := numel(sh)/sh[last], sh[last]
			wantSum, wantMax := make([]float32, outer), make([]float32, outer)
			cpu.Reduce(cpu.Sum, wantSum, data, outer, n)
			cpu.Reduce(cpu.Max, wantMax, data, outer, n)
			gotSum := x.Sum([]int{last}, false).Float32s()
			gotMax := x.Max([]int{last}, false).Float32s()
			for i := range wantSum {
				require.True(t, closeULP(gotSum[i], wantSum[i], 1), "sum %v row %d: got %v want %v", sh, i, gotSum[i], wantSum[i])
				require.Equal(t, wantMax[i], gotMax[i], "max %v row %d", sh, i)
			}
		}
	}
	nan := FromSlice([]float32{1, 2, float32(math.NaN()), 4, 5, 6, 7, 8, 9}, 9)
	assert.True(t, math.IsNaN(float64(nan.Max(nil, false).Item())))
	assert.True(t, math.IsNaN(float64(nan.Sum(nil, false).Item())))
}

// Sum and Max of a contiguous view with a storage offset take the fast
// path on the right elements.
func TestReduceOfOffsetView(t *testing.T) {
	for _, dt := range []DType{Float32, Float64} {
		x := Arange(0, 12, 1).To(dt).Reshape(4, 3)
		n := x.Narrow(0, 1, 2)
		assert.Equal(t, 33.0, n.Sum(nil, false).To(Float64).Item())
		assert.Equal(t, []float64{5, 8}, n.Max([]int{1}, false).To(Float64).Float64s())
	}
}

// TestBatchedMatMulThreads checks that a batch of small products, spread
// across goroutines one product each, gives the same bits as one thread
// and matches a float64 reference.
func TestBatchedMatMulThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const batch, m, k, n = 24, 17, 33, 29
	a := FromSlice(randF32(r, batch*m*k), batch, m, k)
	b := FromSlice(randF32(r, batch*n*k), batch, n, k).Transpose(1, 2)
	a = Where(a.Eq(a), a, ZerosLike(a)).Clamp(-4, 4) // no NaN or Inf
	b = Where(b.Eq(b), b, ZerosLike(b)).Clamp(-4, 4)
	var results [][]float32
	for _, threads := range []int{1, 3} {
		withThreads(t, threads)
		results = append(results, a.MatMul(b).Float32s())
	}
	require.Equal(t, results[0], results[1])
	av, bv := a.Contiguous().Float32s(), b.Contiguous().Float32s()
	for bi := range batch {
		for i := range m {
			for j := range n {
				var s float64
				for l := range k {
					s += float64(av[(bi*m+i)*k+l]) * float64(bv[(bi*k+l)*n+j])
				}
				require.InDelta(t, s, results[1][(bi*m+i)*n+j], 1e-4, "batch %d [%d,%d]", bi, i, j)
			}
		}
	}
}

func TestSoftmaxF32RowsMatchesFloat64Kernel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	withThreads(t, 2)
	for _, n := range []int{1, 2, 7, 33, 1000} {
		outer := max(3, 2*parallelMin/n)
		src := make([]float32, outer*n)
		for i := range src {
			src[i] = (r.Float32()*2 - 1) * 30
		}
		src[0] = float32(math.NaN())    // row 0 is all NaN
		src[n] = float32(math.Inf(-1))  // -Inf gives 0 (log: -Inf)
		src[2*n] = -src[2*n] * 1e3 / 30 // a wide range
		for _, log := range []bool{false, true} {
			got, want := make([]float32, len(src)), make([]float32, len(src))
			softmaxF32Rows(log, got, src, outer, n)
			cpu.Softmax(log, want, src, outer, n, 1)
			for i := range want {
				w, g := float64(want[i]), float64(got[i])
				if math.IsNaN(w) || math.IsInf(w, 0) {
					require.Equal(t, math.IsNaN(w), math.IsNaN(g), "log=%v n=%d [%d]: got %v want %v", log, n, i, g, w)
					require.Equal(t, math.IsInf(w, -1), math.IsInf(g, -1), "log=%v n=%d [%d]: got %v want %v", log, n, i, g, w)
					continue
				}
				// x - max is rounded to float32 (as in PyTorch's float32
				// kernel): |x - max| <= 60 here, so up to 60·2⁻²⁴ relative.
				tol := 5e-6*math.Abs(w) + 1e-12
				if log {
					tol = 4e-6 * max(1, math.Abs(w)) // absolute error of the shift
				}
				require.InDelta(t, w, g, tol, "log=%v n=%d [%d]", log, n, i)
			}
		}
	}
}

// TestFastPathsTaken pins which layouts the float32 fast paths accept.
func TestFastPathsTaken(t *testing.T) {
	tests := []struct {
		name   string
		sa, sb []int
		want   bool
	}{
		{"same", []int{4, 9}, []int{4, 9}, true},
		{"scalar", []int{4, 9}, []int{}, true},
		{"row", []int{4, 9}, []int{9}, true},
		{"short-row", []int{4, 5}, []int{5}, false},
		{"column", []int{4, 9}, []int{4, 1}, true},
		{"column-left", []int{4, 1}, []int{4, 9}, true},
		{"short-column", []int{4, 5}, []int{4, 1}, false},
		{"middle", []int{4, 1, 9}, []int{4, 3, 9}, true},
		{"middle-short", []int{4, 1, 5}, []int{4, 3, 5}, false},
	}
	for _, tc := range tests {
		a, b := Ones(tc.sa), Ones(tc.sb)
		shape := broadcastShapes(t, a, b)
		ea, eb := a.Expand(shape...), b.Expand(shape...)
		dst := make([]float32, numel(shape))
		got := binaryF32Fast(OpAdd, dst, shape, storage32(a), ea.Layout(), storage32(b), eb.Layout())
		assert.Equal(t, tc.want, got, tc.name)
		if got {
			for _, v := range dst {
				require.Equal(t, float32(2), v, tc.name)
			}
		}
	}
}

func broadcastShapes(t *testing.T, a, b *Tensor) []int {
	t.Helper()
	return a.Add(b).Shape()
}
