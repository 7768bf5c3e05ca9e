package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// naiveConv2d is a direct 7-loop convolution used as an independent
// reference (float64, NCHW, groups).
func naiveConv2d(x, w []float64, xs, ws []int, o tensor.Conv2dOptions) ([]float64, []int) {
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	oc, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	gr := max(o.Groups, 1)
	st, pd, dl := o.Stride, o.Padding, o.Dilation
	for i := range 2 {
		st[i], dl[i] = max(st[i], 1), max(dl[i], 1)
	}
	oh := (h+2*pd[0]-dl[0]*(kh-1)-1)/st[0] + 1
	ow := (wd+2*pd[1]-dl[1]*(kw-1)-1)/st[1] + 1
	out := make([]float64, n*oc*oh*ow)
	og := oc / gr
	for b := range n {
		for o := range oc {
			g := o / og
			for y := range oh {
				for xx := range ow {
					var s float64
					for ci := range cg {
						cin := g*cg + ci
						for i := range kh {
							for j := range kw {
								iy, ix := y*st[0]-pd[0]+i*dl[0], xx*st[1]-pd[1]+j*dl[1]
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								s += x[((b*c+cin)*h+iy)*wd+ix] * w[((o*cg+ci)*kh+i)*kw+j]
							}
						}
					}
					out[((b*oc+o)*oh+y)*ow+xx] = s
				}
			}
		}
	}
	_ = c
	return out, []int{n, oc, oh, ow}
}

func assertClose(t *testing.T, want, got []float64, tol float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		if math.Abs(want[i]-got[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: element %d: got %v, want %v", msg, i, got[i], want[i])
		}
	}
}

// TestConv2dMatchesDirect compares the im2col+GEMM convolution with a
// direct loop on inputs large enough for the parallel kernels, for both
// float dtypes and with offset and non-contiguous inputs.
func TestConv2dMatchesDirect(t *testing.T) {
	g := tensor.NewGenerator(1)
	tests := []struct {
		xs, ws []int
		opt    tensor.Conv2dOptions
	}{
		{[]int{4, 16, 12, 12}, []int{8, 16, 3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}},
		{[]int{3, 8, 11, 9}, []int{6, 4, 3, 2}, tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{2, 1}, Dilation: [2]int{2, 3}, Groups: 2}},
		{[]int{2, 6, 7, 7}, []int{6, 1, 5, 5}, tensor.Conv2dOptions{Stride: [2]int{3, 3}, Padding: [2]int{2, 2}, Groups: 6}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			x := g.Randn(tc.xs, tensor.Float64)
			w := g.Randn(tc.ws, tensor.Float64)
			b := g.Randn(tc.ws[:1], tensor.Float64)
			want, shape := naiveConv2d(x.Float64s(), w.Float64s(), tc.xs, tc.ws, tc.opt)
			bias := b.Float64s()
			l := shape[2] * shape[3]
			for j := range want {
				want[j] += bias[(j/l)%shape[1]]
			}
			got := tensor.Conv2d(x, w, b, tc.opt)
			require.Equal(t, shape, got.Shape())
			assertClose(t, want, got.Float64s(), 1e-12, "float64")
			got32 := tensor.Conv2d(x.To(tensor.Float32), w.To(tensor.Float32), b.To(tensor.Float32), tc.opt)
			assertClose(t, want, got32.Float64s(), 1e-4, "float32")

			// An input that is a view: the second half of a batch (offset) of a
			// transposed tensor (non-contiguous).
			big := tensor.Concat([]*tensor.Tensor{x, x}, 0).Transpose(2, 3).Contiguous().Transpose(2, 3)
			view := big.Narrow(0, tc.xs[0], tc.xs[0])
			assertClose(t, want, tensor.Conv2d(view, w, b, tc.opt).Float64s(), 1e-12, "view")
		})
	}
}

// TestConvBackwardAdjoint checks <C(x,w), g> = <x, T(g,w)> = <w, W(x,g)>,
// which ties the three convolution primitives together.
func TestConvBackwardAdjoint(t *testing.T) {
	gen := tensor.NewGenerator(2)
	opt := tensor.Conv2dOptions{Stride: [2]int{2, 3}, Padding: [2]int{1, 2}, Dilation: [2]int{2, 1}, Groups: 2}
	x := gen.Randn([]int{3, 4, 9, 10}, tensor.Float64)
	w := gen.Randn([]int{6, 2, 3, 3}, tensor.Float64)
	geo := tensor.Conv2dGeometry(x.Shape(), w.Shape(), opt)
	y := tensor.ConvForward(x, w, geo, 2)
	g := gen.Randn(y.Shape(), tensor.Float64)
	lhs := y.Mul(g).Sum(nil, false).Item()
	dx := tensor.ConvBackwardInput(g, w, geo, 2)
	dw := tensor.ConvBackwardWeight(x, g, geo, 2)
	assert.InDelta(t, lhs, x.Mul(dx).Sum(nil, false).Item(), 1e-9)
	assert.InDelta(t, lhs, w.Mul(dw).Sum(nil, false).Item(), 1e-9)
}

func TestConvUnbatchedAndConv1d(t *testing.T) {
	gen := tensor.NewGenerator(3)
	x := gen.Randn([]int{3, 6, 5})
	w := gen.Randn([]int{2, 3, 2, 2})
	batched := tensor.Conv2d(x.Unsqueeze(0), w, nil, tensor.Conv2dOptions{Padding: [2]int{1, 1}})
	single := tensor.Conv2d(x, w, nil, tensor.Conv2dOptions{Padding: [2]int{1, 1}})
	assert.Equal(t, batched.Squeeze(0).Float32s(), single.Float32s())

	x1 := gen.Randn([]int{3, 7})
	w1 := gen.Randn([]int{4, 3, 3})
	y1 := tensor.Conv1d(x1, w1, nil, tensor.Conv1dOptions{Stride: 2})
	assert.Equal(t, []int{4, 3}, y1.Shape())
	y2 := tensor.Conv2d(x1.Unsqueeze(0).Unsqueeze(2), w1.Unsqueeze(2), nil, tensor.Conv2dOptions{Stride: [2]int{1, 2}})
	assert.Equal(t, y2.Float32s(), y1.Float32s())

	xt := gen.Randn([]int{2, 3, 3})
	wt := gen.Randn([]int{2, 1, 3, 3})
	yt := tensor.ConvTranspose2d(xt, wt, nil, tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}})
	assert.Equal(t, []int{1, 7, 7}, yt.Shape())
}

// TestPoolParallelAndViews pools a batch large enough for the parallel
// kernels and compares with pooling each image separately (offset views).
func TestPoolParallelAndViews(t *testing.T) {
	gen := tensor.NewGenerator(4)
	x := gen.Randn([]int{8, 16, 16, 16})
	mopt := tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}
	aopt := tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true}
	mx, idx := tensor.MaxPool2d(x, mopt)
	av := tensor.AvgPool2d(x, aopt)
	ad := tensor.AdaptiveAvgPool2d(x, 5, 3)
	for i := range 8 {
		xi := x.Narrow(0, i, 1)
		m, id := tensor.MaxPool2d(xi, mopt)
		assert.Equal(t, mx.Narrow(0, i, 1).Float32s(), m.Float32s())
		assert.Equal(t, idx.Narrow(0, i, 1).Int64s(), id.Int64s())
		assert.Equal(t, av.Narrow(0, i, 1).Float32s(), tensor.AvgPool2d(xi, aopt).Float32s())
		assert.Equal(t, ad.Narrow(0, i, 1).Float32s(), tensor.AdaptiveAvgPool2d(xi, 5, 3).Float32s())
	}
	// Unbatched input pools plane by plane as well.
	m3, _ := tensor.MaxPool2d(x.Select(0, 2), mopt)
	assert.Equal(t, mx.Select(0, 2).Float32s(), m3.Float32s())
}

func TestPoolOutputSize(t *testing.T) {
	tests := []struct {
		in   []int
		opt  tensor.Pool2dOptions
		want []int
	}{
		{[]int{1, 1, 7, 7}, tensor.Pool2dOptions{Kernel: [2]int{2, 2}}, []int{1, 1, 3, 3}},
		{[]int{1, 1, 7, 7}, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, CeilMode: true}, []int{1, 1, 4, 4}},
		// The last ceil-mode window would start in the right padding: dropped.
		{[]int{1, 1, 5, 5}, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true}, []int{1, 1, 3, 3}},
		{[]int{1, 1, 6, 6}, tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true}, []int{1, 1, 4, 4}},
		{[]int{2, 3, 5, 9}, tensor.Pool2dOptions{Kernel: [2]int{1, 3}, Stride: [2]int{1, 2}, Dilation: [2]int{1, 2}}, []int{2, 3, 5, 3}},
	}
	for _, tc := range tests {
		out, idx := tensor.MaxPool2d(tensor.Zeros(tc.in), tc.opt)
		assert.Equal(t, tc.want, out.Shape(), "%+v", tc.opt)
		assert.Equal(t, tensor.Int64, idx.DType())
	}
}

func TestSoftmaxProperties(t *testing.T) {
	gen := tensor.NewGenerator(5)
	x := gen.Randn([]int{3, 4, 5}, tensor.Float64).MulScalar(50)
	for axis := -3; axis < 3; axis++ {
		s := x.Softmax(axis)
		sums := s.Sum([]int{axis}, false).Float64s()
		for _, v := range sums {
			assert.InDelta(t, 1, v, 1e-12)
		}
		ls := x.LogSoftmax(axis)
		assertClose(t, s.Float64s(), ls.Exp().Float64s(), 1e-12, "exp(log_softmax)")
		assertClose(t, x.Sub(x.LogSumExp([]int{axis}, true)).Float64s(), ls.Float64s(), 1e-12, "x - logsumexp")
	}
	// Huge logits stay finite.
	big := tensor.FromSlice([]float32{1e4, 0, -1e4}, 3)
	assert.Equal(t, []float32{1, 0, 0}, big.Softmax(0).Float32s())
	assert.Equal(t, []float32{0, -1e4, -2e4}, big.LogSoftmax(0).Float32s())
	// Scalars softmax to one.
	assert.Equal(t, 1.0, tensor.Scalar(3).Softmax(0).Item())
}

func TestNormStats(t *testing.T) {
	gen := tensor.NewGenerator(6)
	x := gen.Randn([]int{4, 6, 3, 2}, tensor.Float64)
	m, v := tensor.BatchNormStats(x)
	assertClose(t, x.Mean([]int{0, 2, 3}, false).Float64s(), m.Float64s(), 1e-12, "bn mean")
	assertClose(t, x.Var([]int{0, 2, 3}, 0, false).Float64s(), v.Float64s(), 1e-12, "bn var")

	m, v = tensor.LayerNormStats(x, 2)
	assert.Equal(t, []int{4, 6}, m.Shape())
	assertClose(t, x.Mean([]int{2, 3}, false).Float64s(), m.Float64s(), 1e-12, "ln mean")
	assertClose(t, x.Var([]int{2, 3}, 0, false).Float64s(), v.Float64s(), 1e-12, "ln var")

	m, v = tensor.GroupNormStats(x, 3)
	assert.Equal(t, []int{4, 3}, m.Shape())
	xg := x.Reshape(4, 3, -1)
	assertClose(t, xg.Mean([]int{2}, false).Float64s(), m.Float64s(), 1e-12, "gn mean")
	assertClose(t, xg.Var([]int{2}, 0, false).Float64s(), v.Float64s(), 1e-12, "gn var")

	// Eval without running statistics normalizes with the batch's.
	w, b := gen.Randn([]int{6}, tensor.Float64), gen.Randn([]int{6}, tensor.Float64)
	assert.Equal(t, tensor.BatchNorm(x, nil, nil, w, b, true, 0.1, 1e-5).Float64s(),
		tensor.BatchNorm(x, nil, nil, w, b, false, 0.1, 1e-5).Float64s())
	// Eval leaves running statistics alone; training moves them.
	rm, rv := tensor.Zeros([]int{6}, tensor.Float64), tensor.Ones([]int{6}, tensor.Float64)
	tensor.BatchNorm(x, rm, rv, nil, nil, false, 0.1, 1e-5)
	assert.Equal(t, make([]float64, 6), rm.Float64s())
	tensor.BatchNorm(x, rm, rv, nil, nil, true, 0.5, 1e-5)
	bm, _ := tensor.BatchNormStats(x)
	assertClose(t, bm.MulScalar(0.5).Float64s(), rm.Float64s(), 1e-12, "running mean")
	unbiased := x.Var([]int{0, 2, 3}, 1, false)
	assertClose(t, unbiased.MulScalar(0.5).AddScalar(0.5).Float64s(), rv.Float64s(), 1e-12, "running var")
}

func TestDropoutMask(t *testing.T) {
	const n = 200000
	for _, p := range []float64{0.1, 0.5, 0.8} {
		m := tensor.DropoutMask(tensor.NewGenerator(42), []int{n}, p, tensor.Float32)
		vals := m.Float64s()
		zeros := 0
		for _, v := range vals {
			if v == 0 {
				zeros++
			} else {
				require.InDelta(t, 1/(1-p), v, 1e-6)
			}
		}
		// Binomial standard deviation is sqrt(p(1-p)/n) < 0.0012; allow 5 sigma.
		assert.InDelta(t, p, float64(zeros)/n, 0.006, "p=%v", p)
		assert.InDelta(t, 1, m.Mean(nil, false).Item(), 0.03, "inverted dropout keeps the mean, p=%v", p)
	}
	a := tensor.DropoutMask(tensor.NewGenerator(9), []int{4, 50}, 0.3, tensor.Float64)
	b := tensor.DropoutMask(tensor.NewGenerator(9), []int{4, 50}, 0.3, tensor.Float64)
	c := tensor.DropoutMask(tensor.NewGenerator(10), []int{4, 50}, 0.3, tensor.Float64)
	assert.Equal(t, a.Float64s(), b.Float64s(), "same seed, same mask")
	assert.NotEqual(t, a.Float64s(), c.Float64s(), "different seeds differ")
	assert.Equal(t, []int{4, 50}, a.Shape())

	assert.Equal(t, make([]float32, 10), tensor.DropoutMask(tensor.NewGenerator(1), []int{10}, 1, tensor.Float32).Float32s())
	x := tensor.Ones([]int{5})
	assert.Same(t, x, tensor.Dropout(x, 0.5, false, nil))
	assert.Same(t, x, tensor.Dropout(x, 0, true, nil))
	y := tensor.Dropout(x, 0.5, true, tensor.NewGenerator(3))
	for _, v := range y.Float32s() {
		assert.Contains(t, []float32{0, 2}, v)
	}
}

func TestEmbedding(t *testing.T) {
	w := tensor.FromSlice([]float32{0, 1, 10, 11, 20, 21}, 3, 2)
	ids := tensor.FromSlice([]int64{2, 0, 2, 1}, 2, 2)
	out := tensor.Embedding(ids, w)
	assert.Equal(t, []int{2, 2, 2}, out.Shape())
	assert.Equal(t, []float32{20, 21, 0, 1, 20, 21, 10, 11}, out.Float32s())
	g := tensor.OnesLike(out)
	assert.Equal(t, []float32{1, 1, 1, 1, 2, 2}, tensor.EmbeddingBackward(g, ids, 3).Float32s())
	assert.Panics(t, func() { tensor.Embedding(tensor.FromSlice([]int64{3}), w) })
}

// panicsWith asserts that f panics with a message containing every part.
func panicsWith(t *testing.T, f func(), parts ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		require.NotNil(t, r, "no panic")
		msg := fmt.Sprint(r)
		for _, p := range parts {
			assert.Contains(t, msg, p)
		}
	}()
	f()
}

func TestNNMisuse(t *testing.T) {
	x := tensor.Zeros([]int{2, 4, 5, 5})
	panicsWith(t, func() { tensor.Conv2d(x, tensor.Zeros([]int{3, 3, 3, 3}), nil, tensor.Conv2dOptions{}) }, "Conv2d", "[2 4 5 5]", "channels")
	panicsWith(t, func() { tensor.Conv2d(x, tensor.Zeros([]int{3, 2, 3, 3}), nil, tensor.Conv2dOptions{Groups: 2}) }, "Conv2d", "divisible by groups=2")
	panicsWith(t, func() { tensor.Conv2d(x, tensor.Zeros([]int{3, 4, 7, 7}), nil, tensor.Conv2dOptions{}) }, "Conv2d", "smaller than the dilated kernel")
	panicsWith(t, func() {
		tensor.Conv2d(x, tensor.Zeros([]int{3, 4, 3, 3}), tensor.Zeros([]int{4}), tensor.Conv2dOptions{})
	}, "Conv2d", "bias", "[3]")
	panicsWith(t, func() { tensor.Conv2d(x, tensor.Zeros([]int{3, 4, 3, 3}, tensor.Float64), nil, tensor.Conv2dOptions{}) }, "Conv2d", "float32 and float64")
	panicsWith(t, func() {
		tensor.Conv2d(x.To(tensor.Int64), tensor.Zeros([]int{3, 4, 3, 3}), nil, tensor.Conv2dOptions{})
	}, "Conv2d", "int64")
	panicsWith(t, func() {
		tensor.ConvTranspose2d(x, tensor.Zeros([]int{4, 2, 3, 3}), nil, tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}, OutputPadding: [2]int{2, 0}})
	}, "ConvTranspose2d", "output padding")
	panicsWith(t, func() { tensor.MaxPool2d(x, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Padding: [2]int{2, 0}}) }, "MaxPool2d", "half the kernel")
	panicsWith(t, func() { tensor.MaxPool2d(x, tensor.Pool2dOptions{}) }, "MaxPool2d", "positive")
	panicsWith(t, func() { tensor.AvgPool2d(x, tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Dilation: [2]int{2, 2}}) }, "AvgPool2d", "dilation")
	panicsWith(t, func() { tensor.AvgPool2d(x, tensor.Pool2dOptions{Kernel: [2]int{6, 6}}) }, "AvgPool2d", "empty")
	panicsWith(t, func() { tensor.LayerNorm(x, []int{4, 5}, nil, nil, 1e-5) }, "LayerNorm", "suffix")
	panicsWith(t, func() { tensor.GroupNorm(x, 3, nil, nil, 1e-5) }, "GroupNorm", "3 groups")
	panicsWith(t, func() { tensor.BatchNorm(x, nil, nil, tensor.Ones([]int{3}), nil, true, 0.1, 1e-5) }, "BatchNorm", "weight", "[4]")
	panicsWith(t, func() { tensor.BatchNorm(tensor.Zeros([]int{1, 3}), nil, nil, nil, nil, true, 0.1, 1e-5) }, "BatchNorm", "more than 1 value")
	panicsWith(t, func() { tensor.Arange(0, 4, 1).Softmax(0) }, "Softmax", "int64")
	panicsWith(t, func() { tensor.DropoutMask(nil, []int{3}, 0.5, tensor.Float32) }, "DropoutMask", "Generator")
	panicsWith(t, func() { tensor.Dropout(x, 1.5, true, tensor.NewGenerator(1)) }, "Dropout", "1.5")
}
