package nn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// TestGoldenInit checks CalculateGain and the deterministic initializers
// against torch.nn.init.
func TestGoldenInit(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_init.json") {
		t.Run(c.Name, func(t *testing.T) {
			want := c.Outputs[0]
			var got *tensor.Tensor
			switch c.Op {
			case "calculate_gain":
				var g float64
				if c.Has("param") {
					g = nn.CalculateGain(c.String("nonlinearity"), c.Float("param"))
				} else {
					g = nn.CalculateGain(c.String("nonlinearity"))
				}
				got = tensor.ScalarOf(g, tensor.Float64)
			case "eye":
				got = nn.Eye(tensor.Full(c.Ints("shape"), 7, tensor.Float64))
			case "dirac":
				got = nn.Dirac(tensor.Full(c.Ints("shape"), 7, tensor.Float64), c.Int("groups"))
			case "constant":
				got = nn.Constant(tensor.Zeros(c.Ints("shape"), tensor.Float64), c.Float("value"))
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
			goldtensor.Check(t, c.Name, want, got, 1e-15, 0)
		})
	}
}

func TestInitMisuse(t *testing.T) {
	g := tensor.NewGenerator(1)
	tests := []struct {
		name string
		f    func()
	}{
		{"eye 3-D", func() { nn.Eye(tensor.Zeros([]int{2, 2, 2})) }},
		{"dirac 2-D", func() { nn.Dirac(tensor.Zeros([]int{2, 2}), 1) }},
		{"dirac groups", func() { nn.Dirac(tensor.Zeros([]int{3, 2, 3}), 2) }},
		{"trunc std", func() { nn.TruncatedNormal(g, tensor.Zeros([]int{3}), 0, 0, -1, 1) }},
		{"trunc bounds", func() { nn.TruncatedNormal(g, tensor.Zeros([]int{3}), 0, 1, 1, -1) }},
		{"orthogonal 1-D", func() { nn.Orthogonal(g, tensor.Zeros([]int{3}), 1) }},
		{"sparse 3-D", func() { nn.Sparse(g, tensor.Zeros([]int{2, 2, 2}), 0.5, 1) }},
		{"sparse sparsity", func() { nn.Sparse(g, tensor.Zeros([]int{2, 2}), 1.5, 1) }},
		{"lecun 1-D", func() { nn.LeCunNormal(g, tensor.Zeros([]int{3})) }},
		{"gain unknown", func() { nn.CalculateGain("swish") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.Panics(t, tc.f) })
	}
}

// meanStd returns the sample mean and standard deviation of v.
func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)-1))
}

func TestTruncatedNormal(t *testing.T) {
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	tests := []struct{ mean, std, a, b float64 }{
		{0, 1, -2, 2},
		{1, 0.5, 0, 1.5},
		{0, 1, 0.5, 3},
		{-2, 3, -1, 10},
	}
	for _, tc := range tests {
		x := nn.TruncatedNormal(tensor.NewGenerator(7), tensor.Zeros([]int{200, 200}, tensor.Float64), tc.mean, tc.std, tc.a, tc.b)
		v := x.Float64s()
		assert.GreaterOrEqual(t, slices.Min(v), tc.a)
		assert.LessOrEqual(t, slices.Max(v), tc.b)
		// Moments of the truncated normal.
		al, be := (tc.a-tc.mean)/tc.std, (tc.b-tc.mean)/tc.std
		z := cdf(be) - cdf(al)
		wantMean := tc.mean + tc.std*(pdf(al)-pdf(be))/z
		wantVar := tc.std * tc.std * (1 + (al*pdf(al)-be*pdf(be))/z - math.Pow((pdf(al)-pdf(be))/z, 2))
		m, s := meanStd(v)
		assert.InDelta(t, wantMean, m, 0.02*tc.std, "mean for %+v", tc)
		assert.InDelta(t, math.Sqrt(wantVar), s, 0.02*tc.std, "std for %+v", tc)
	}
	// Float32 tensors are filled through their dtype.
	f := nn.TruncatedNormal(tensor.NewGenerator(1), tensor.Zeros([]int{1000}), 0, 1, -0.1, 0.1)
	require.Equal(t, tensor.Float32, f.DType())
	for _, x := range f.Float32s() {
		require.True(t, x >= -0.1 && x <= 0.1, "value %v out of bounds", x)
	}
}

func TestOrthogonal(t *testing.T) {
	tests := []struct {
		shape []int
		gain  float64
	}{
		{[]int{5, 5}, 1},
		{[]int{8, 3}, 2},
		{[]int{3, 8}, 0.5},
		{[]int{4, 2, 3, 3}, 1.5},
		{[]int{20, 4, 3}, 1},
	}
	for _, tc := range tests {
		w := nn.Orthogonal(tensor.NewGenerator(3), tensor.Zeros(tc.shape, tensor.Float64), tc.gain)
		rows := tc.shape[0]
		m := w.Reshape(rows, -1)
		// The smaller side is orthonormal (times gain).
		var gram *tensor.Tensor
		if rows < m.Shape()[1] {
			gram = m.MatMul(m.T())
		} else {
			gram = m.T().MatMul(m)
		}
		n := gram.Shape()[0]
		want := tensor.Eye(n).To(tensor.Float64).MulScalar(tc.gain * tc.gain)
		golden.AllClose(t, "gram", golden.Tensor{Shape: []int{n, n}, DType: golden.Float64, Data: want.Float64s()},
			gram.Shape(), gram.Float64s(), 1e-12, 1e-12)
	}
	// Different seeds give different matrices; the same seed the same.
	a := nn.Orthogonal(tensor.NewGenerator(1), tensor.Zeros([]int{4, 4}, tensor.Float64), 1).Float64s()
	b := nn.Orthogonal(tensor.NewGenerator(1), tensor.Zeros([]int{4, 4}, tensor.Float64), 1).Float64s()
	c := nn.Orthogonal(tensor.NewGenerator(2), tensor.Zeros([]int{4, 4}, tensor.Float64), 1).Float64s()
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}

func TestSparse(t *testing.T) {
	tests := []struct {
		rows, cols int
		sparsity   float64
		wantZeros  int
	}{
		{10, 6, 0.1, 1},
		{10, 6, 0.25, 3},
		{7, 4, 0.5, 4},
		{5, 3, 0, 0},
		{5, 3, 1, 5},
	}
	for _, tc := range tests {
		w := nn.Sparse(tensor.NewGenerator(5), tensor.Full([]int{tc.rows, tc.cols}, 9, tensor.Float64), tc.sparsity, 0.01)
		v := w.Float64s()
		for c := range tc.cols {
			zeros := 0
			for r := range tc.rows {
				x := v[r*tc.cols+c]
				if x == 0 {
					zeros++
				} else {
					assert.Less(t, math.Abs(x), 0.1, "non-zero entries are N(0, 0.01²)")
				}
			}
			assert.Equal(t, tc.wantZeros, zeros, "column %d of %dx%d, sparsity %v", c, tc.rows, tc.cols, tc.sparsity)
		}
	}
	_, s := meanStd(nn.Sparse(tensor.NewGenerator(1), tensor.Zeros([]int{1000, 100}, tensor.Float64), 0, 2).Float64s())
	assert.InDelta(t, 2, s, 0.03)
}

func TestLeCun(t *testing.T) {
	w := nn.LeCunUniform(tensor.NewGenerator(1), tensor.Zeros([]int{300, 50, 2}, tensor.Float64))
	b := math.Sqrt(3.0 / 100)
	v := w.Float64s()
	assert.GreaterOrEqual(t, slices.Min(v), -b)
	assert.Less(t, slices.Max(v), b)
	_, s := meanStd(v)
	assert.InDelta(t, 0.1, s, 0.002)

	w = nn.LeCunNormal(tensor.NewGenerator(1), tensor.Zeros([]int{400, 25}, tensor.Float64))
	m, s := meanStd(w.Float64s())
	assert.InDelta(t, 0, m, 0.01)
	assert.InDelta(t, 0.2, s, 0.004)

	empty := tensor.Zeros([]int{3, 0}, tensor.Float64)
	assert.Same(t, empty, nn.LeCunNormal(tensor.NewGenerator(1), empty))
}
