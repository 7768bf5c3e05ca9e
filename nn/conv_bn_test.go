package nn_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// newConvBN returns a convolution and a batch norm after it whose affine
// parameters and running statistics are random (variances positive), with
// gradients off, the pair in evaluation mode.
func newConvBN(seed uint64, in, out int, kernel [2]int, opt tensor.Conv2dOptions, bias bool, bnOpt nn.BatchNormOptions) (*nn.Conv2d, *nn.BatchNorm) {
	g := tensor.NewGenerator(seed)
	c := nn.NewConv2d(g, in, out, kernel, opt, bias)
	bn := nn.NewBatchNorm2d(out, bnOpt)
	if bn.Weight != nil {
		bn.Weight.Value().CopyFrom(g.Randn([]int{out}))
		bn.Bias.Value().CopyFrom(g.Randn([]int{out}))
	}
	bn.RunningMean.CopyFrom(g.Randn([]int{out}))
	bn.RunningVar.CopyFrom(g.Rand([]int{out}).AddScalar(0.5))
	setTrainable(c, false)
	setTrainable(bn, false)
	bn.Train(false)
	return c, bn
}

// separate is ForwardBatchNorm as separate module calls.
func separate(c *nn.Conv2d, bn *nn.BatchNorm, x, residual *autograd.Var, relu nn.Module) *autograd.Var {
	y := nn.Call(bn, nn.Call(c, x))
	if residual != nil {
		y = y.Add(residual)
	}
	if relu != nil {
		y = nn.Call(relu, y)
	}
	return y
}

func TestForwardBatchNormFoldsInEval(t *testing.T) {
	tests := []struct {
		name     string
		in, out  int
		kernel   [2]int
		opt      tensor.Conv2dOptions
		bias     bool
		bnOpt    nn.BatchNormOptions
		x        []int
		residual bool
		relu     bool
	}{
		{"1x1 relu", 8, 16, [2]int{1, 1}, tensor.Conv2dOptions{}, false, nn.BatchNormOptions{}, []int{2, 8, 7, 5}, false, true},
		{"1x1 residual relu", 8, 16, [2]int{1, 1}, tensor.Conv2dOptions{}, false, nn.BatchNormOptions{}, []int{1, 8, 7, 5}, true, true},
		{"1x1 stride 2 plain", 8, 16, [2]int{1, 1}, tensor.Conv2dOptions{Stride: [2]int{2, 2}}, false, nn.BatchNormOptions{}, []int{1, 8, 9, 9}, false, false},
		{"3x3 winograd relu", 16, 24, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false, nn.BatchNormOptions{}, []int{1, 16, 24, 24}, false, true},
		{"3x3 winograd residual relu", 16, 24, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false, nn.BatchNormOptions{}, []int{1, 16, 24, 24}, true, true},
		{"3x3 stride 2 conv bias", 6, 10, [2]int{3, 3}, tensor.Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, true, nn.BatchNormOptions{Eps: 1e-3}, []int{3, 6, 11, 9}, false, true},
		{"7x7 stem", 3, 8, [2]int{7, 7}, tensor.Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}, false, nn.BatchNormOptions{}, []int{1, 3, 32, 32}, false, true},
		{"no affine residual", 8, 8, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false, nn.BatchNormOptions{NoAffine: true}, []int{2, 8, 6, 6}, true, false},
		{"depthwise fallback", 8, 8, [2]int{3, 3}, tensor.Conv2dOptions{Groups: 8, Padding: [2]int{1, 1}}, true, nn.BatchNormOptions{}, []int{1, 8, 6, 6}, true, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, bn := newConvBN(uint64(i), tc.in, tc.out, tc.kernel, tc.opt, tc.bias, tc.bnOpt)
			g := tensor.NewGenerator(100 + uint64(i))
			x := autograd.New(g.Randn(tc.x))
			var res *autograd.Var
			var relu nn.Module
			if tc.relu {
				relu = nn.NewReLU()
			}
			want := separate(c, bn, x, nil, relu)
			if tc.residual {
				res = autograd.New(g.Randn(want.Shape()))
				want = separate(c, bn, x, res, relu)
			}
			for range 2 { // packs, then reuses the folded pack
				requireConvClose(t, want.Value(), c.ForwardBatchNorm(x, bn, res, relu).Value(), "folded")
				require.Same(t, bn, nn.FoldedBatchNorm(c))
			}
			// Writes to the statistics, the affine parameters and the
			// weight each invalidate the folded pack.
			for _, write := range []func(){
				func() { bn.RunningMean.AddScalarInPlace(0.25) },
				func() { bn.RunningVar.MulScalarInPlace(2) },
				func() { bn.Eps = 0.5 },
				func() { c.Weight.Value().MulScalarInPlace(-1) },
				func() {
					if bn.Weight != nil {
						bn.Weight.Value().AddScalarInPlace(1)
						bn.Bias.Value().AddScalarInPlace(-1)
					}
				},
			} {
				write()
				requireConvClose(t, separate(c, bn, x, res, relu).Value(), c.ForwardBatchNorm(x, bn, res, relu).Value(), "after a write")
			}
			// The plain forward still sees the plain weight.
			requireConvClose(t, uncachedConv(c, x.Value()), c.Forward(x).Value(), "plain forward after folding")
			require.Nil(t, nn.FoldedBatchNorm(c))
		})
	}
}

// TestForwardBatchNormUnfused requires the separate calls' exact result
// where folding does not apply: training mode (statistics updated alike),
// parameters that require gradients (gradients alike), and forward hooks.
func TestForwardBatchNormUnfused(t *testing.T) {
	mk := func() (*nn.Conv2d, *nn.BatchNorm) {
		return newConvBN(7, 6, 8, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false, nn.BatchNormOptions{})
	}
	g := tensor.NewGenerator(8)
	x := autograd.New(g.Randn([]int{2, 6, 5, 5}))
	res := autograd.New(g.Randn([]int{2, 8, 5, 5}))
	relu := nn.NewReLU()

	t.Run("training", func(t *testing.T) {
		c1, bn1 := mk()
		c2, bn2 := mk()
		bn1.Train(true)
		bn2.Train(true)
		require.Equal(t, separate(c1, bn1, x, res, relu).Value().Float32s(), c2.ForwardBatchNorm(x, bn2, res, relu).Value().Float32s())
		require.Equal(t, bn1.RunningMean.Float32s(), bn2.RunningMean.Float32s())
		require.Equal(t, bn1.RunningVar.Float32s(), bn2.RunningVar.Float32s())
		require.Equal(t, bn1.NumBatchesTracked.Float64s(), bn2.NumBatchesTracked.Float64s())
		require.Nil(t, nn.FoldedBatchNorm(c2))
	})
	t.Run("grad", func(t *testing.T) {
		c1, bn1 := mk()
		c2, bn2 := mk()
		setTrainable(c1, true)
		setTrainable(c2, true)
		setTrainable(bn1, true)
		setTrainable(bn2, true)
		y1, y2 := separate(c1, bn1, x, res, relu), c2.ForwardBatchNorm(x, bn2, res, relu)
		require.Equal(t, y1.Value().Float32s(), y2.Value().Float32s())
		require.Nil(t, nn.FoldedBatchNorm(c2))
		y1.Sum(nil, false).Backward()
		y2.Sum(nil, false).Backward()
		require.Equal(t, c1.Weight.Grad().Float32s(), c2.Weight.Grad().Float32s())
		require.Equal(t, bn1.Weight.Grad().Float32s(), bn2.Weight.Grad().Float32s())
	})
	t.Run("hooks", func(t *testing.T) {
		for _, hooked := range []string{"conv", "bn", "relu"} {
			c, bn := mk()
			r := nn.NewReLU()
			var m nn.Module = map[string]nn.Module{"conv": c, "bn": bn, "relu": r}[hooked]
			calls := 0
			m.(interface {
				RegisterForwardHook(nn.ForwardHook) *autograd.HookHandle
			}).RegisterForwardHook(func(nn.Module, *autograd.Var, *autograd.Var) *autograd.Var {
				calls++
				return nil
			})
			want := separate(c, bn, x, res, r).Value().Float32s()
			require.Equal(t, want, c.ForwardBatchNorm(x, bn, res, r).Value().Float32s(), hooked)
			require.Equal(t, 2, calls, hooked)
			require.Nil(t, nn.FoldedBatchNorm(c), hooked)
		}
	})
}

// TestForwardBatchNormConcurrent runs folded forwards from several
// goroutines at once (with -race: the pack is made once, safely).
func TestForwardBatchNormConcurrent(t *testing.T) {
	c, bn := newConvBN(9, 16, 16, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false, nn.BatchNormOptions{})
	x := autograd.New(tensor.NewGenerator(10).Randn([]int{1, 16, 12, 12}))
	relu := nn.NewReLU()
	want := separate(c, bn, x, x, relu).Value()
	var wg sync.WaitGroup
	got := make([]*tensor.Tensor, 8)
	for i := range got {
		wg.Go(func() { got[i] = c.ForwardBatchNorm(x, bn, x, relu).Value() })
	}
	wg.Wait()
	for _, y := range got {
		requireConvClose(t, want, y, "concurrent")
	}
	require.Same(t, bn, nn.FoldedBatchNorm(c))
}
