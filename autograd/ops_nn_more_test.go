package autograd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// moreGradCases covers the composed ops of ops_nn_more.go with small
// inputs, including transposed and strided views.
func moreGradCases() []gradCase {
	g := tensor.NewGenerator(11)
	rn := func(s ...int) *tensor.Tensor { return g.Randn(s, tensor.Float64) }
	pos := func(s ...int) *tensor.Tensor { return g.Uniform(s, 0.5, 1.5, tensor.Float64) }
	type fn = func(in []*autograd.Var) *autograd.Var
	return []gradCase{
		{"rms_norm/weight", func(in []*autograd.Var) *autograd.Var { return autograd.RMSNorm(in[0], 1, in[1], 1e-6) },
			[]*tensor.Tensor{rn(3, 4), rn(4)}, true},
		{"rms_norm/two_dims_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.RMSNorm(in[0].Transpose(0, 2), 2, nil, 1e-5)
		}, []*tensor.Tensor{rn(3, 2, 2)}, false},
		{"local_response_norm/4d", func(in []*autograd.Var) *autograd.Var {
			return autograd.LocalResponseNorm(in[0], 3, 0.5, 0.75, 1)
		}, []*tensor.Tensor{rn(2, 4, 2, 2)}, true},
		{"local_response_norm/3d_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.LocalResponseNorm(in[0].Transpose(1, 2), 2, 1, 1.2, 2)
		}, []*tensor.Tensor{rn(2, 3, 5)}, false},
		{"instance_norm/affine", func(in []*autograd.Var) *autograd.Var {
			return autograd.InstanceNorm(in[0], in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}, []*tensor.Tensor{rn(2, 3, 4), rn(3), rn(3)}, false},
		{"instance_norm/running_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.InstanceNorm(in[0].Transpose(2, 3), in[1], nil, tensor.Zeros([]int{2}, tensor.Float64),
				tensor.Ones([]int{2}, tensor.Float64), false, 0.1, 1e-5)
		}, []*tensor.Tensor{rn(2, 2, 3, 2), rn(2)}, false},
		{"adaptive_max_pool2d/overlap", func(in []*autograd.Var) *autograd.Var {
			return autograd.AdaptiveMaxPool2d(in[0], 3, 2)
		}, []*tensor.Tensor{rn(2, 2, 4, 5)}, true},
		{"adaptive_max_pool2d/unbatched_transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.AdaptiveMaxPool2d(in[0].Transpose(1, 2), 2, 2)
		}, []*tensor.Tensor{rn(2, 3, 5)}, false},
		{"pixel_shuffle", fn(func(in []*autograd.Var) *autograd.Var { return autograd.PixelShuffle(in[0], 2) }),
			[]*tensor.Tensor{rn(2, 8, 2, 3)}, true},
		{"pixel_unshuffle/transposed", func(in []*autograd.Var) *autograd.Var {
			return autograd.PixelUnshuffle(in[0].Transpose(2, 3), 2)
		}, []*tensor.Tensor{rn(1, 2, 4, 2)}, false},
		{"upsample_nearest/scale", func(in []*autograd.Var) *autograd.Var {
			return autograd.UpsampleNearest2d(in[0], 5, 7, 0, 0)
		}, []*tensor.Tensor{rn(1, 2, 3, 4)}, true},
		{"upsample_bilinear/half_pixel", func(in []*autograd.Var) *autograd.Var {
			return autograd.UpsampleBilinear2d(in[0], 5, 3, false, 0, 0)
		}, []*tensor.Tensor{rn(1, 2, 3, 4)}, true},
		{"upsample_bilinear/align_strided", func(in []*autograd.Var) *autograd.Var {
			return autograd.UpsampleBilinear2d(in[0].Slice(3, 0, 6, 2), 4, 5, true, 0, 0)
		}, []*tensor.Tensor{rn(2, 1, 3, 6)}, false},
		{"bilinear/bias", func(in []*autograd.Var) *autograd.Var {
			return autograd.Bilinear(in[0], in[1].T(), in[2], in[3])
		}, []*tensor.Tensor{rn(3, 2), rn(4, 3), rn(2, 2, 4), rn(2)}, true},
		{"dropout2d/fixed_seed", func(in []*autograd.Var) *autograd.Var {
			return autograd.Dropout2d(in[0], 0.5, true, tensor.NewGenerator(3))
		}, []*tensor.Tensor{rn(2, 3, 2, 2)}, false},
		{"alpha_dropout/fixed_seed", func(in []*autograd.Var) *autograd.Var {
			return autograd.AlphaDropout(in[0], 0.3, true, tensor.NewGenerator(3))
		}, []*tensor.Tensor{pos(3, 4)}, false},
	}
}

func TestNNMoreGradCheck(t *testing.T) {
	for _, c := range moreGradCases() {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, c.inputs...))
			if c.gradgrad {
				require.NoError(t, autograd.GradGradCheck(c.f, c.inputs...))
			}
		})
	}
}

// TestInstanceNormRunningStats checks the running statistics update: the
// batch average of the plane means and unbiased variances.
func TestInstanceNormRunningStats(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 10, 20, 30, 40}, 2, 1, 4)
	rm, rv := tensor.Zeros([]int{1}, tensor.Float64), tensor.Ones([]int{1}, tensor.Float64)
	autograd.InstanceNorm(autograd.New(x), nil, nil, rm, rv, true, 0.5, 1e-5)
	// Plane means 2.5 and 25; unbiased variances 5/3 and 500/3.
	assert.InDelta(t, 0.5*(2.5+25)/2, rm.Item(), 1e-12)
	assert.InDelta(t, 0.5+0.5*(5.0/3+500.0/3)/2, rv.Item(), 1e-12)
}

// TestDropoutVariants checks the structure of the random masks.
func TestDropoutVariants(t *testing.T) {
	g := tensor.NewGenerator(5)
	x := tensor.Ones([]int{4, 6, 3, 3}, tensor.Float64)
	y := autograd.Dropout2d(autograd.New(x), 0.5, true, g).Value().Float64s()
	zeros := 0
	for p := range 24 {
		plane := y[p*9 : (p+1)*9]
		for _, v := range plane {
			require.Equal(t, plane[0], v, "a channel shares one mask value")
		}
		require.Contains(t, []float64{0, 2}, plane[0])
		if plane[0] == 0 {
			zeros++
		}
	}
	assert.Greater(t, zeros, 3)
	assert.Less(t, zeros, 21)
	assert.Same(t, x, autograd.Dropout2d(autograd.New(x), 0.5, false, g).Value())

	// Alpha dropout keeps mean 0 and variance 1 of standard normal inputs.
	const p, alpha = 0.2, 1.7580993408473766
	z := g.Randn([]int{200000}, tensor.Float64)
	out := autograd.AlphaDropout(autograd.New(z), p, true, g).Value()
	assert.InDelta(t, 0, out.Mean(nil, false).Item(), 0.01)
	assert.InDelta(t, 1, out.Var(nil, 1, false).Item(), 0.02)
	a := 1 / math.Sqrt((alpha*alpha*p+1)*(1-p))
	dropped := a*(-alpha) + a*alpha*p
	zs, os := z.Float64s(), out.Float64s()
	kept := 0
	for i := range 1000 {
		if math.Abs(os[i]-dropped) > 1e-12 {
			kept++
			assert.InDelta(t, a*zs[i]+a*alpha*p, os[i], 1e-12)
		}
	}
	assert.InDelta(t, 800, kept, 60)
}

func TestNNMorePanics(t *testing.T) {
	x := autograd.New(tensor.Zeros([]int{2, 3, 4, 4}, tensor.Float64))
	assert.PanicsWithValue(t, "autograd.PixelShuffle: want input [..., C·r², H, W] with r=2, got shape [2 3 4 4]",
		func() { autograd.PixelShuffle(x, 2) })
	assert.Panics(t, func() { autograd.RMSNorm(x, 5, nil, 1e-5) })
	assert.Panics(t, func() { autograd.AdaptiveMaxPool2d(x, 0, 1) })
	assert.Panics(t, func() { autograd.UpsampleBilinear2d(x.Reshape(2, 48), 3, 3, false, 0, 0) })
	assert.Panics(t, func() { autograd.Bilinear(x, x, x, nil) })
	assert.Panics(t, func() { autograd.Dropout2d(x, 1.5, true, tensor.NewGenerator(1)) })
	assert.Panics(t, func() { autograd.InstanceNorm(x, nil, nil, nil, nil, false, 0.1, 1e-5) })
}
