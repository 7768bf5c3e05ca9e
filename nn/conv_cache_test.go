package nn_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// setTrainable turns gradient tracking of every parameter of m on or off.
func setTrainable(m nn.Module, on bool) {
	for _, p := range m.Parameters() {
		p.SetRequiresGrad(on)
	}
}

// uncachedConv is the convolution nn.Conv2d computes, through the autograd
// op that packs the weight on every call.
func uncachedConv(c *nn.Conv2d, x *tensor.Tensor) *tensor.Tensor {
	var b *autograd.Var
	if c.Bias != nil {
		b = autograd.New(c.Bias.Value())
	}
	return autograd.Conv2d(autograd.New(x), autograd.New(c.Weight.Value()), b, c.Options).Value()
}

// requireConvClose checks got against want within the convolution's
// tolerance: Winograd transforms differ from the direct product by a few
// float32 roundings.
func requireConvClose(t *testing.T, want, got *tensor.Tensor, what string) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape(), what)
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		require.InDelta(t, w[i], g[i], 1e-5*(1+math.Abs(w[i])), "%s: element %d", what, i)
	}
}

func TestConv2dCachedMatchesUncached(t *testing.T) {
	tests := []struct {
		name    string
		in, out int
		kernel  [2]int
		opt     tensor.Conv2dOptions
		bias    bool
		x       []int
	}{
		{"1x1", 8, 16, [2]int{1, 1}, tensor.Conv2dOptions{}, true, []int{2, 8, 7, 5}},
		{"3x3 winograd", 16, 24, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true, []int{2, 16, 24, 24}},
		{"3x3 stride 2 no bias", 6, 10, [2]int{3, 3}, tensor.Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, false, []int{3, 6, 11, 9}},
		{"groups dilation", 8, 12, [2]int{3, 2}, tensor.Conv2dOptions{Groups: 4, Dilation: [2]int{2, 1}}, true, []int{2, 8, 10, 9}},
		{"depthwise", 8, 8, [2]int{3, 3}, tensor.Conv2dOptions{Groups: 8, Padding: [2]int{1, 1}}, true, []int{1, 8, 6, 6}},
		{"unbatched", 5, 7, [2]int{3, 3}, tensor.Conv2dOptions{}, true, []int{5, 9, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tensor.NewGenerator(7)
			c := nn.NewConv2d(g, tc.in, tc.out, tc.kernel, tc.opt, tc.bias)
			setTrainable(c, false)
			x := g.Randn(tc.x)
			want := uncachedConv(c, x)
			for range 2 { // the second call uses the cached pack
				y := c.Forward(autograd.New(x))
				assert.False(t, y.RequiresGrad())
				requireConvClose(t, want, y.Value(), tc.name)
			}
		})
	}
}

func TestConv2dCacheFollowsWeightChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, c *nn.Conv2d, g *tensor.Generator)
	}{
		{"CopyFrom", func(t *testing.T, c *nn.Conv2d, g *tensor.Generator) {
			c.Weight.Value().CopyFrom(g.Randn(c.Weight.Shape()))
		}},
		{"optimizer step", func(t *testing.T, c *nn.Conv2d, g *tensor.Generator) {
			setTrainable(c, true)
			x := autograd.New(g.Randn([]int{2, 4, 9, 9}))
			require.NoError(t, c.Forward(x).Sum(nil, false).Backward())
			require.NoError(t, optim.NewSGD(c.Parameters(), optim.SGDOptions{LR: 0.5}).Step())
			setTrainable(c, false)
		}},
		{"LoadStateDict", func(t *testing.T, c *nn.Conv2d, g *tensor.Generator) {
			other := nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
			require.NoError(t, nn.LoadStateDict(c, nn.StateDict(other), true))
		}},
		{"new weight tensor", func(t *testing.T, c *nn.Conv2d, g *tensor.Generator) {
			c.Weight = autograd.New(g.Randn(c.Weight.Shape()))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tensor.NewGenerator(3)
			c := nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
			setTrainable(c, false)
			x := g.Randn([]int{2, 4, 9, 9})
			before := c.Forward(autograd.New(x)).Value()
			tc.change(t, c, g)
			want := uncachedConv(c, x)
			require.Greater(t, want.Sub(before).Abs().Sum(nil, false).Item(), 1e-3, "the change must alter the output")
			requireConvClose(t, want, c.Forward(autograd.New(x)).Value(), tc.name)
		})
	}
}

func TestConv2dTrainingForwardUnaffected(t *testing.T) {
	g := tensor.NewGenerator(5)
	c := nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
	xt := g.Randn([]int{2, 4, 8, 8})

	setTrainable(c, false)
	c.Forward(autograd.New(xt)) // fills the cache
	setTrainable(c, true)

	x := autograd.Param(xt.Clone())
	y := c.Forward(x)
	_, recorded := y.Node()
	require.True(t, recorded)
	require.NoError(t, y.Mul(y).Sum(nil, false).Backward())

	rx, rw, rb := autograd.Param(xt.Clone()), autograd.Param(c.Weight.Value().Clone()), autograd.Param(c.Bias.Value().Clone())
	ry := autograd.Conv2d(rx, rw, rb, c.Options)
	require.NoError(t, ry.Mul(ry).Sum(nil, false).Backward())

	assert.Equal(t, ry.Value().Float64s(), y.Value().Float64s())
	assert.Equal(t, rx.Grad().Float64s(), x.Grad().Float64s())
	assert.Equal(t, rw.Grad().Float64s(), c.Weight.Grad().Float64s())
	assert.Equal(t, rb.Grad().Float64s(), c.Bias.Grad().Float64s())
}

func TestConv2dCachedConcurrentForward(t *testing.T) {
	g := tensor.NewGenerator(9)
	c := nn.NewConv2d(g, 8, 8, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
	setTrainable(c, false)
	xs := make([]*tensor.Tensor, 8)
	want := make([]*tensor.Tensor, len(xs))
	for i := range xs {
		xs[i] = g.Randn([]int{1, 8, 10, 10})
		want[i] = uncachedConv(c, xs[i])
	}
	got := make([]*tensor.Tensor, len(xs))
	var wg sync.WaitGroup
	for i := range xs {
		wg.Go(func() { got[i] = c.Forward(autograd.New(xs[i])).Value() })
	}
	wg.Wait()
	for i := range xs {
		requireConvClose(t, want[i], got[i], "goroutine")
	}
}
