package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// adamUnfused is Adam's update written with one tensor op per term, the
// reference AdamUpdate must match bit for bit.
func adamUnfused(w, grad, m, v, mx *tensor.Tensor, p tensor.AdamStep) {
	if p.Maximize {
		grad = grad.Neg()
	}
	if p.Decoupled {
		w.CopyFrom(w.MulScalar(1 - p.LR*p.WeightDecay))
	} else if p.WeightDecay != 0 {
		grad = grad.Add(w.MulScalar(p.WeightDecay))
	}
	m.CopyFrom(m.MulScalar(p.Beta1).Add(grad.MulScalar(1 - p.Beta1)))
	v.CopyFrom(v.MulScalar(p.Beta2).Add(grad.Mul(grad).MulScalar(1 - p.Beta2)))
	stepSize := p.LR / (1 - math.Pow(p.Beta1, p.Step))
	bc2Sqrt := math.Sqrt(1 - math.Pow(p.Beta2, p.Step))
	vhat := v
	if p.AMSGrad {
		mx.CopyFrom(mx.Maximum(v))
		vhat = mx
	}
	denom := vhat.Sqrt().DivScalar(bc2Sqrt).AddScalar(p.Eps)
	w.CopyFrom(w.Sub(m.Div(denom).MulScalar(stepSize)))
}

// sgdUnfused is SGD's update written with one tensor op per term.
func sgdUnfused(w, d, buf *tensor.Tensor, p tensor.SGDStep) {
	if p.Maximize {
		d = d.Neg()
	}
	if p.WeightDecay != 0 {
		d = d.Add(w.MulScalar(p.WeightDecay))
	}
	if p.Momentum != 0 {
		if p.InitBuffer {
			buf.CopyFrom(d)
		} else {
			buf.CopyFrom(buf.MulScalar(p.Momentum).Add(d.MulScalar(1 - p.Dampening)))
		}
		if p.Nesterov {
			d = d.Add(buf.MulScalar(p.Momentum))
		} else {
			d = buf
		}
	}
	w.CopyFrom(w.Sub(d.MulScalar(p.LR)))
}

// bitsEqual asserts that a and b hold the same bits (NaNs included).
func bitsEqual(t *testing.T, want, got *tensor.Tensor, msg string) {
	t.Helper()
	w, g := want.To(tensor.Float64).Float64s(), got.To(tensor.Float64).Float64s()
	require.Len(t, g, len(w), msg)
	for i := range w {
		if math.Float64bits(w[i]) != math.Float64bits(g[i]) {
			require.Failf(t, "values differ", "%s: element %d: want %v, got %v", msg, i, w[i], g[i])
		}
	}
}

// fusedInputs returns a parameter, a non-contiguous gradient (a transposed
// view) and three state tensors of shape [4, 7] with values of mixed sign
// and magnitude, including zeros.
func fusedInputs(seed uint64, dt tensor.DType) (w, g, m, v, mx *tensor.Tensor) {
	gen := tensor.NewGenerator(seed)
	w = gen.Normal([]int{4, 7}, 0, 3, dt)
	g = gen.Normal([]int{7, 4}, 0, 2, dt).T()
	g = g.Mul(gen.Rand([]int{4, 7}, dt).Gt(tensor.ScalarOf(0.1, dt)).To(dt)) // some exact zeros
	g = g.T().Contiguous().T()                                               // strided again
	m = gen.Normal([]int{4, 7}, 0, 1, dt)
	v = gen.Rand([]int{4, 7}, dt)
	mx = gen.Rand([]int{4, 7}, dt)
	return
}

func TestAdamUpdateMatchesUnfused(t *testing.T) {
	base := tensor.AdamStep{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	cases := map[string]func(p *tensor.AdamStep){
		"plain":            func(*tensor.AdamStep) {},
		"weight_decay":     func(p *tensor.AdamStep) { p.WeightDecay = 0.1 },
		"adamw":            func(p *tensor.AdamStep) { p.WeightDecay = 0.05; p.Decoupled = true },
		"adamw_no_decay":   func(p *tensor.AdamStep) { p.Decoupled = true },
		"amsgrad":          func(p *tensor.AdamStep) { p.AMSGrad = true; p.WeightDecay = 0.01 },
		"maximize":         func(p *tensor.AdamStep) { p.Maximize = true },
		"all":              func(p *tensor.AdamStep) { p.AMSGrad, p.Maximize, p.Decoupled, p.WeightDecay = true, true, true, 0.3 },
		"odd_betas_big_lr": func(p *tensor.AdamStep) { p.Beta1, p.Beta2, p.LR, p.Eps = 0.5, 0.7, 0.3, 1e-3 },
	}
	for name, tweak := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%s/%s", name, dt), func(t *testing.T) {
				p := base
				tweak(&p)
				w1, g, m1, v1, mx1 := fusedInputs(7, dt)
				w2, m2, v2, mx2 := w1.Clone(), m1.Clone(), v1.Clone(), mx1.Clone()
				var mxArg *tensor.Tensor
				if p.AMSGrad {
					mxArg = mx2
				}
				for step := 1; step <= 3; step++ {
					p.Step = float64(step)
					adamUnfused(w1, g, m1, v1, mx1, p)
					ver := w2.Version()
					tensor.AdamUpdate(w2, g, m2, v2, mxArg, p)
					assert.Greater(t, w2.Version(), ver, "param version bumped")
				}
				bitsEqual(t, w1, w2, "param")
				bitsEqual(t, m1, m2, "exp_avg")
				bitsEqual(t, v1, v2, "exp_avg_sq")
				if p.AMSGrad {
					bitsEqual(t, mx1, mx2, "max_exp_avg_sq")
				}
			})
		}
	}
}

func TestSGDUpdateMatchesUnfused(t *testing.T) {
	cases := map[string]tensor.SGDStep{
		"plain":          {LR: 0.1},
		"weight_decay":   {LR: 0.1, WeightDecay: 0.01},
		"momentum":       {LR: 0.05, Momentum: 0.9},
		"dampening":      {LR: 0.05, Momentum: 0.9, Dampening: 0.3, WeightDecay: 0.2},
		"dampening_only": {LR: 0.05, Momentum: 0.7, Dampening: 0.25},
		"nesterov":       {LR: 0.05, Momentum: 0.8, Nesterov: true, WeightDecay: 0.1},
		"maximize":       {LR: 0.2, Momentum: 0.5, Maximize: true},
		"plain_maximize": {LR: 0.2, Maximize: true, WeightDecay: 0.5},
	}
	for name, p := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%s/%s", name, dt), func(t *testing.T) {
				w1, g, _, _, _ := fusedInputs(11, dt)
				w2 := w1.Clone()
				var b1, b2 *tensor.Tensor
				if p.Momentum != 0 {
					b1, b2 = tensor.ZerosLike(w1), tensor.ZerosLike(w1)
				}
				for step := range 3 {
					p.InitBuffer = step == 0
					sgdUnfused(w1, g, b1, p)
					ver := w2.Version()
					tensor.SGDUpdate(w2, g, b2, p)
					assert.Greater(t, w2.Version(), ver, "param version bumped")
				}
				bitsEqual(t, w1, w2, "param")
				if p.Momentum != 0 {
					bitsEqual(t, b1, b2, "momentum_buffer")
				}
			})
		}
	}
}

// A contiguous view with an offset (a row of a matrix) is updated where it
// lies, and the rest of its storage is left alone.
func TestFusedUpdateOffsetView(t *testing.T) {
	whole := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	row := whole.Select(0, 1)
	require.True(t, tensor.FusedSupported(row))
	tensor.SGDUpdate(row, tensor.FromSlice([]float64{10, 20}), nil, tensor.SGDStep{LR: 0.5})
	assert.Equal(t, []float64{1, 2, -2, -6, 5, 6}, whole.Float64s())

	buf := tensor.Zeros([]int{2}, tensor.Float64)
	tensor.SGDUpdate(row, tensor.FromSlice([]float64{1, 1}), buf, tensor.SGDStep{LR: 1, Momentum: 0.9, InitBuffer: true})
	assert.Equal(t, []float64{1, 2, -3, -7, 5, 6}, whole.Float64s())
	assert.Equal(t, []float64{1, 1}, buf.Float64s())
}

func TestFusedUpdateMisuse(t *testing.T) {
	w := tensor.Zeros([]int{2, 3}, tensor.Float32)
	g := tensor.Zeros([]int{2, 3}, tensor.Float32)
	m, v := tensor.ZerosLike(w), tensor.ZerosLike(w)
	p := tensor.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
	cases := map[string]struct {
		f    func()
		want string
	}{
		"int param": {func() {
			tensor.SGDUpdate(tensor.Zeros([]int{2}, tensor.Int64), tensor.Zeros([]int{2}, tensor.Int64), nil, tensor.SGDStep{})
		}, "dtype int64"},
		"transposed":    {func() { tensor.SGDUpdate(w.T(), g.T(), nil, tensor.SGDStep{}) }, "not contiguous"},
		"grad shape":    {func() { tensor.SGDUpdate(w, g.Reshape(3, 2), nil, tensor.SGDStep{}) }, "grad is float32 [3 2]"},
		"grad dtype":    {func() { tensor.AdamUpdate(w, g.To(tensor.Float64), m, v, nil, p) }, "grad is float64"},
		"state shape":   {func() { tensor.AdamUpdate(w, g, m.Reshape(6), v, nil, p) }, "expAvg is float32 [6]"},
		"missing buf":   {func() { tensor.SGDUpdate(w, g, nil, tensor.SGDStep{Momentum: 0.9}) }, "buf is nil"},
		"stray buf":     {func() { tensor.SGDUpdate(w, g, m, tensor.SGDStep{}) }, "zero momentum"},
		"missing max":   {func() { q := p; q.AMSGrad = true; tensor.AdamUpdate(w, g, m, v, nil, q) }, "maxExpAvgSq is nil"},
		"stray max":     {func() { tensor.AdamUpdate(w, g, m, v, tensor.ZerosLike(w), p) }, "without AMSGrad"},
		"nil grad":      {func() { tensor.AdamUpdate(w, nil, m, v, nil, p) }, "grad is nil"},
		"float16 param": {func() { tensor.SGDUpdate(w.To(tensor.Float16), g.To(tensor.Float16), nil, tensor.SGDStep{}) }, "Float32 or Float64"},
		"expanded target": {func() {
			tensor.SGDUpdate(tensor.Zeros([]int{1, 3}, tensor.Float32).Expand(2, 3), g, nil, tensor.SGDStep{})
		}, "not contiguous"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, fmt.Sprint(r), tc.want)
				assert.Contains(t, fmt.Sprint(r), "tensor.")
			}()
			tc.f()
		})
	}
	assert.False(t, tensor.FusedSupported(w.T()))
	assert.False(t, tensor.FusedSupported(nil))
	assert.True(t, tensor.FusedSupported(w))
}

// BenchmarkFusedUpdate times the fused updates over one million float32
// elements.
func BenchmarkFusedUpdate(b *testing.B) {
	gen := tensor.NewGenerator(1)
	shape := []int{1 << 20}
	w, g := gen.Randn(shape), gen.Randn(shape)
	m, v, buf := tensor.ZerosLike(w), tensor.ZerosLike(w), tensor.ZerosLike(w)
	b.Run("SGDMomentum", func(b *testing.B) {
		b.SetBytes(4 * 4 << 20)
		for b.Loop() {
			tensor.SGDUpdate(w, g, buf, tensor.SGDStep{LR: 1e-3, Momentum: 0.9})
		}
	})
	b.Run("Adam", func(b *testing.B) {
		b.SetBytes(6 * 4 << 20)
		for b.Loop() {
			tensor.AdamUpdate(w, g, m, v, nil, tensor.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 10})
		}
	})
}

func TestAddIntoMatchesAdd(t *testing.T) {
	gen := tensor.NewGenerator(4)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		base := gen.Randn([]int{3, 4}, dt)
		srcs := map[string]*tensor.Tensor{
			"contiguous": gen.Randn([]int{3, 4}, dt),
			"transposed": gen.Randn([]int{4, 3}, dt).T(),
			"broadcast":  gen.Randn([]int{1, 4}, dt).Expand(3, 4),
			"sliced":     gen.Randn([]int{3, 8}, dt).Slice(1, 1, 8, 2),
		}
		for name, src := range srcs {
			t.Run(fmt.Sprintf("%s/%s", name, dt), func(t *testing.T) {
				dst := base.Clone()
				ver := dst.Version()
				tensor.AddInto(dst, src)
				bitsEqual(t, base.Add(src), dst, "sum")
				assert.Greater(t, dst.Version(), ver)
			})
		}
	}
	t.Run("offset view", func(t *testing.T) {
		whole := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
		tensor.AddInto(whole.Select(0, 2), tensor.FromSlice([]float64{10, 20}))
		assert.Equal(t, []float64{1, 2, 3, 4, 15, 26}, whole.Float64s())
	})
	t.Run("misuse", func(t *testing.T) {
		x := tensor.Zeros([]int{2, 2}, tensor.Float32)
		assert.PanicsWithValue(t, "tensor.AddInto: src shares dst's storage", func() { tensor.AddInto(x, x.T()) })
		assert.PanicsWithValue(t, "tensor.AddInto: src is float64 [2 2] on cpu but dst is float32 [2 2] on cpu; they must match",
			func() { tensor.AddInto(x, tensor.Zeros([]int{2, 2}, tensor.Float64)) })
		assert.Panics(t, func() { tensor.AddInto(x.T(), x.Clone()) })
	})
}
