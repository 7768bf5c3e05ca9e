package nn_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

func TestEmbeddingPaddingAndInit(t *testing.T) {
	g := tensor.NewGenerator(2)
	e := nn.NewEmbedding(g, 6, 4, nn.EmbeddingOptions{HasPaddingIdx: true, PaddingIdx: -2})
	assert.Equal(t, 4, e.PaddingIdx)
	assert.Equal(t, "Embedding(6, 4, padding_idx=4)", e.String())
	w := e.Weight.Value()
	assert.Equal(t, []float32{0, 0, 0, 0}, w.Narrow(0, 4, 1).Contiguous().Float32s(), "padding row starts at zero")
	assert.NotEqual(t, []float32{0, 0, 0, 0}, w.Narrow(0, 0, 1).Contiguous().Float32s())

	y := e.Lookup(tensor.FromSlice([]int64{4, 1, 4, 1}, 2, 2))
	require.Equal(t, []int{2, 2, 4}, y.Shape())
	require.NoError(t, y.Sum(nil, false).Backward())
	grad := e.Weight.Grad()
	assert.Equal(t, []float32{0, 0, 0, 0}, grad.Narrow(0, 4, 1).Contiguous().Float32s(), "no gradient for the padding row")
	assert.Equal(t, []float32{2, 2, 2, 2}, grad.Narrow(0, 1, 1).Contiguous().Float32s())

	assert.Panics(t, func() { nn.NewEmbedding(g, 6, 4, nn.EmbeddingOptions{HasPaddingIdx: true, PaddingIdx: 6}) })
	assert.Panics(t, func() { e.Lookup(tensor.Zeros([]int{2}, tensor.Float32)) })
}

func TestEmbeddingMaxNormRenormsInPlace(t *testing.T) {
	e := nn.NewEmbedding(tensor.NewGenerator(1), 3, 2, nn.EmbeddingOptions{MaxNorm: 1}, tensor.Float64)
	e.Weight.Value().CopyFrom(tensor.FromSlice([]float64{3, 4, 0.3, 0.4, 6, 8}, 3, 2))
	y := e.Lookup(tensor.FromSlice([]int64{0, 1}))
	w := e.Weight.Value().Float64s()
	assert.InDelta(t, 0.6, w[0], 1e-6)
	assert.InDelta(t, 0.8, w[1], 1e-6)
	assert.Equal(t, []float64{0.3, 0.4, 6, 8}, w[2:], "rows within the norm and rows not looked up stay")
	assert.InDeltaSlice(t, []float64{0.6, 0.8, 0.3, 0.4}, y.Value().Float64s(), 1e-6)
}

func TestLayerDefaultInits(t *testing.T) {
	g := tensor.NewGenerator(4)
	within := func(t *testing.T, v *autograd.Var, bound float64) {
		for _, x := range v.Value().Float64s() {
			require.LessOrEqual(t, math.Abs(x), bound)
		}
	}
	c := nn.NewConvTranspose2d(g, 4, 6, [2]int{3, 3}, tensor.ConvTranspose2dOptions{Groups: 2}, true)
	assert.Equal(t, []int{4, 3, 3, 3}, c.Weight.Shape())
	within(t, c.Weight, 1/math.Sqrt(27))
	c1 := nn.NewConv1d(g, 4, 2, 5, tensor.Conv1dOptions{}, true)
	within(t, c1.Weight, 1/math.Sqrt(20))
	b := nn.NewBilinear(g, 9, 2, 3, true)
	within(t, b.Weight, 1.0/3)
	within(t, b.Bias, 1.0/3)
	bn := nn.NewBatchNorm2d(3, nn.BatchNormOptions{})
	assert.Equal(t, []float32{1, 1, 1}, bn.Weight.Value().Float32s())
	assert.Equal(t, []float32{0, 0, 0}, bn.Bias.Value().Float32s())
	assert.Equal(t, []float32{1, 1, 1}, bn.RunningVar.Float32s())
	assert.Equal(t, tensor.Int64, bn.NumBatchesTracked.DType())
	assert.Equal(t, []string{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}, nn.StateDictKeys(bn))
	assert.Equal(t, []string{"weight", "bias"}, nn.StateDictKeys(nn.NewGroupNorm(1, 3, 0, true)))
	assert.Empty(t, nn.StateDictKeys(nn.NewInstanceNorm2d(3, nn.InstanceNormOptions{})))
}

func TestLayerStrings(t *testing.T) {
	g := tensor.NewGenerator(1)
	for _, c := range []struct {
		m    interface{ String() string }
		want string
	}{
		{nn.NewDropout2d(0.3, g), "Dropout2d(p=0.3, inplace=False)"},
		{nn.NewAlphaDropout(0.2, g), "AlphaDropout(p=0.2, inplace=False)"},
		{nn.NewUpsample(nn.UpsampleOptions{ScaleFactor: [2]float64{2, 2}}), "Upsample(scale_factor=2.0, mode=nearest)"},
		{nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{3, 5}, Mode: "bilinear", AlignCorners: true}), "Upsample(size=(3, 5), mode=bilinear)"},
		{nn.NewAvgPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 3}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1}}), "AvgPool2d(kernel_size=(2, 3), stride=1, padding=1)"},
		{nn.NewMaxPool1d(nn.Pool1dOptions{Kernel: 3, Stride: 2, Padding: 1}), "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"},
		{nn.NewConvTranspose1d(g, 2, 3, 3, nn.ConvTranspose1dOptions{}, false), "ConvTranspose1d(2, 3, kernel_size=(3,), stride=(1,), bias=False)"},
		{nn.NewBatchNorm1d(4, nn.BatchNormOptions{CumulativeAverage: true, NoAffine: true}), "BatchNorm1d(4, eps=1e-05, momentum=None, affine=False, track_running_stats=True)"},
		{nn.NewModuleList(), "ModuleList()"},
	} {
		assert.Equal(t, c.want, c.m.String())
	}
}

func TestLayerUnbatchedAndModes(t *testing.T) {
	g := tensor.NewGenerator(3)
	x := g.Randn([]int{1, 3, 4, 4}, tensor.Float64)
	// Unbatched inputs give the batched result without the batch axis.
	for name, m := range map[string]nn.Module{
		"instancenorm2d":   nn.NewInstanceNorm2d(3, nn.InstanceNormOptions{Affine: true}, tensor.Float64),
		"convtranspose2d":  nn.NewConvTranspose2d(g, 3, 2, [2]int{2, 2}, tensor.ConvTranspose2dOptions{}, true, tensor.Float64),
		"adaptivemaxpool":  nn.NewAdaptiveMaxPool2d(2, 3),
		"upsamplenearest":  nn.NewUpsample(nn.UpsampleOptions{ScaleFactor: [2]float64{2, 2}}),
		"upsamplebilinear": nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{5, 3}, Mode: "bilinear"}),
		"pixelunshuffle":   nn.NewPixelUnshuffle(2),
	} {
		want := m.Forward(autograd.New(x)).Value()
		got := m.Forward(autograd.New(x.Squeeze(0))).Value()
		assert.Equal(t, want.Shape()[1:], got.Shape(), name)
		assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-12, name)
	}
	seq := g.Randn([]int{1, 2, 6}, tensor.Float64)
	for name, m := range map[string]nn.Module{
		"maxpool1d":       nn.NewMaxPool1d(nn.Pool1dOptions{Kernel: 2}),
		"avgpool1d":       nn.NewAvgPool1d(nn.Pool1dOptions{Kernel: 3, Stride: 1}),
		"convtranspose1d": nn.NewConvTranspose1d(g, 2, 2, 3, nn.ConvTranspose1dOptions{Stride: 2}, true, tensor.Float64),
		"conv1d":          nn.NewConv1d(g, 2, 3, 3, tensor.Conv1dOptions{}, false, tensor.Float64),
	} {
		want := m.Forward(autograd.New(seq)).Value()
		got := m.Forward(autograd.New(seq.Squeeze(0))).Value()
		assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-12, name)
	}
	// Dropout layers are the identity in evaluation mode.
	d := nn.NewDropout2d(0.9, g)
	d.Train(false)
	assert.Same(t, x, d.Forward(autograd.New(x)).Value())
	a := nn.NewAlphaDropout(0.9, g)
	a.Train(false)
	assert.Same(t, x, a.Forward(autograd.New(x)).Value())
	// BatchNorm without tracking normalizes with batch statistics in eval.
	bn := nn.NewBatchNorm2d(3, nn.BatchNormOptions{NoTrackRunningStats: true, NoAffine: true}, tensor.Float64)
	bn.Train(false)
	y := bn.Forward(autograd.New(g.Randn([]int{4, 3, 2, 2}, tensor.Float64).MulScalar(5).AddScalar(3)))
	assert.InDelta(t, 0, y.Value().Mean(nil, false).Item(), 1e-9)
}

func TestLayerMisusePanics(t *testing.T) {
	g := tensor.NewGenerator(1)
	x4 := autograd.New(tensor.Zeros([]int{2, 3, 4, 4}))
	for name, f := range map[string]func(){
		"bn rank":          func() { nn.NewBatchNorm1d(3, nn.BatchNormOptions{}).Forward(x4) },
		"bn channels":      func() { nn.NewBatchNorm2d(4, nn.BatchNormOptions{}).Forward(x4) },
		"bn features":      func() { nn.NewBatchNorm2d(0, nn.BatchNormOptions{}) },
		"instance rank":    func() { nn.NewInstanceNorm1d(3, nn.InstanceNormOptions{}).Forward(x4) },
		"layernorm shape":  func() { nn.NewLayerNorm([]int{3}, 0, true).Forward(x4) },
		"layernorm empty":  func() { nn.NewLayerNorm(nil, 0, true) },
		"groupnorm groups": func() { nn.NewGroupNorm(2, 3, 0, true) },
		"rmsnorm shape":    func() { nn.NewRMSNorm([]int{5}, 0, true).Forward(x4) },
		"lrn size":         func() { nn.NewLocalResponseNorm(0, 1, 1, 1) },
		"conv1d groups":    func() { nn.NewConv1d(g, 3, 4, 3, tensor.Conv1dOptions{Groups: 2}, true) },
		"conv1d input":     func() { nn.NewConv1d(g, 3, 4, 3, tensor.Conv1dOptions{}, true).Forward(x4) },
		"convt2d input": func() {
			nn.NewConvTranspose2d(g, 4, 4, [2]int{2, 2}, tensor.ConvTranspose2dOptions{}, true).Forward(x4)
		},
		"avgpool kernel":   func() { nn.NewAvgPool2d(tensor.Pool2dOptions{}) },
		"avgpool1d dil":    func() { nn.NewAvgPool1d(nn.Pool1dOptions{Kernel: 2, Dilation: 2}) },
		"maxpool1d input":  func() { nn.NewMaxPool1d(nn.Pool1dOptions{Kernel: 2}).Forward(x4) },
		"adaptive size":    func() { nn.NewAdaptiveAvgPool2d(0, 1) },
		"dropout2d p":      func() { nn.NewDropout2d(-0.1, g) },
		"alpha nil gen":    func() { nn.NewAlphaDropout(0.1, nil) },
		"bilinear forward": func() { nn.NewBilinear(g, 2, 2, 2, true).Forward(x4) },
		"unflatten sizes":  func() { nn.NewUnflatten(1, 2, 2).Forward(x4) },
		"pad sizes":        func() { nn.NewZeroPad2d(1, 2, 3) },
		"pixelshuffle r":   func() { nn.NewPixelShuffle(0) },
		"upsample both":    func() { nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{2, 2}, ScaleFactor: [2]float64{2, 2}}) },
		"upsample mode":    func() { nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{2, 2}, Mode: "bicubic"}) },
		"upsample align":   func() { nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{2, 2}, AlignCorners: true}) },
		"modulelist at":    func() { nn.NewModuleList().At(0) },
		"moduledict fwd":   func() { nn.NewModuleDict().Forward(x4) },
		"moduledict dup":   func() { nn.NewModuleDict().Set("a.b", nn.NewReLU()) },
	} {
		assert.Panics(t, f, name)
	}
}

// TestLayersFloat32 runs the composed layers on Float32 inputs and
// compares with the Float64 results.
func TestLayersFloat32(t *testing.T) {
	g := tensor.NewGenerator(9)
	x64 := g.Randn([]int{2, 4, 3, 3}, tensor.Float64)
	x32 := x64.To(tensor.Float32)
	for name, mk := range map[string]func(dt tensor.DType) nn.Module{
		"upsample bilinear": func(tensor.DType) nn.Module {
			return nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{5, 4}, Mode: "bilinear"})
		},
		"upsample nearest": func(tensor.DType) nn.Module {
			return nn.NewUpsample(nn.UpsampleOptions{ScaleFactor: [2]float64{1.5, 2}})
		},
		"lrn":     func(tensor.DType) nn.Module { return nn.NewLocalResponseNorm(3, 1e-2, 0.75, 1) },
		"rmsnorm": func(dt tensor.DType) nn.Module { return nn.NewRMSNorm([]int{3}, 1e-6, true, dt) },
		"instancenorm": func(dt tensor.DType) nn.Module {
			return nn.NewInstanceNorm2d(4, nn.InstanceNormOptions{Affine: true, TrackRunningStats: true}, dt)
		},
		"batchnorm":       func(dt tensor.DType) nn.Module { return nn.NewBatchNorm2d(4, nn.BatchNormOptions{}, dt) },
		"adaptivemaxpool": func(tensor.DType) nn.Module { return nn.NewAdaptiveMaxPool2d(2, 2) },
		"pixelunshuffle":  func(tensor.DType) nn.Module { return nn.NewPixelUnshuffle(1) },
		"reflectionpad2d": func(tensor.DType) nn.Module { return nn.NewReflectionPad2d(1) },
		"groupnorm":       func(dt tensor.DType) nn.Module { return nn.NewGroupNorm(2, 4, 0, true, dt) },
		"layernorm":       func(dt tensor.DType) nn.Module { return nn.NewLayerNorm([]int{3, 3}, 0, true, dt) },
		"convtranspose2d": func(dt tensor.DType) nn.Module {
			return nn.NewConvTranspose2d(tensor.NewGenerator(1), 4, 2, [2]int{2, 2}, tensor.ConvTranspose2dOptions{}, true, dt)
		},
		"adaptiveavgpool2d": func(tensor.DType) nn.Module { return nn.NewAdaptiveAvgPool2d(2, 1) },
	} {
		m64, m32 := mk(tensor.Float64), mk(tensor.Float32)
		want := m64.Forward(autograd.New(x64)).Value()
		got := m32.Forward(autograd.New(x32)).Value()
		require.Equal(t, tensor.Float32, got.DType(), name)
		assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-4, name)
		for _, b := range m32.NamedBuffers() {
			if b.Buffer.DType().IsFloat() {
				assert.Equal(t, tensor.Float32, b.Buffer.DType(), name)
			}
		}
	}
}
