package nn_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// block is a custom module with a parameter, a buffer and sub-modules.
type block struct {
	nn.Base
	scale *autograd.Var
	seq   *nn.Sequential
}

func newBlock(g *tensor.Generator) *block {
	b := &block{}
	b.scale = b.RegisterParameter("scale", autograd.Param(tensor.Ones([]int{3})))
	b.RegisterBuffer("running_mean", tensor.Zeros([]int{3}))
	b.seq = nn.NewSequential(nn.NewLinear(g, 2, 4, true), nn.NewReLU(), nn.NewLinear(g, 4, 3, false))
	b.RegisterModule("features", b.seq)
	return b
}

func (b *block) Forward(x *autograd.Var) *autograd.Var { return b.seq.Forward(x).Mul(b.scale) }

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

func TestNamingAndOrder(t *testing.T) {
	b := newBlock(tensor.NewGenerator(1))
	outer := nn.NewSequential(nn.NewFlatten(1, -1), b)
	assert.Equal(t, []string{"1.scale", "1.features.0.weight", "1.features.0.bias", "1.features.2.weight"},
		names(outer.NamedParameters(), func(p nn.NamedParam) string { return p.Name }))
	assert.Equal(t, []string{"1.running_mean"},
		names(outer.NamedBuffers(), func(p nn.NamedBuffer) string { return p.Name }))
	assert.Len(t, outer.Parameters(), 4)
	// PyTorch's state-dict order: a module's own parameters and buffers,
	// then its children's.
	assert.Equal(t, []string{"1.scale", "1.running_mean", "1.features.0.weight", "1.features.0.bias", "1.features.2.weight"},
		nn.StateDictKeys(outer))
	assert.Len(t, nn.StateDict(outer), 5)
	assert.Equal(t, 2, outer.Len())
	assert.Same(t, b, outer.At(1))
	assert.Equal(t, "Sequential(\n  (0): Flatten(start_dim=1, end_dim=-1)\n  (1): *nn_test.block\n)", outer.String())
}

func TestTiedParametersCountOnce(t *testing.T) {
	l := nn.NewLinear(tensor.NewGenerator(1), 3, 3, true)
	s := nn.NewSequential(l, nn.NewTanh(), l)
	assert.Len(t, s.NamedParameters(), 4)
	assert.Len(t, s.Parameters(), 2)
}

func TestRegisterMisuse(t *testing.T) {
	var b nn.Base
	b.RegisterParameter("w", autograd.Param(tensor.Zeros([]int{1})))
	assert.PanicsWithValue(t, `nn.RegisterBuffer: name "w" is already a parameter`, func() {
		b.RegisterBuffer("w", tensor.Zeros([]int{1}))
	})
	assert.Panics(t, func() { b.RegisterModule("a.b", nn.NewReLU()) })
	assert.Panics(t, func() { b.RegisterParameter("", autograd.Param(tensor.Zeros([]int{1}))) })
	assert.Panics(t, func() { b.RegisterModule("m", nil) })
}

func TestTrainEvalAndZeroGrad(t *testing.T) {
	g := tensor.NewGenerator(2)
	d := nn.NewDropout(0.5, g)
	m := nn.NewSequential(nn.NewLinear(g, 3, 2, true), d)
	assert.True(t, m.IsTraining())
	assert.True(t, d.IsTraining())
	m.Train(false)
	assert.False(t, m.IsTraining())
	assert.False(t, d.IsTraining())
	m.Train(true)
	assert.True(t, d.IsTraining())

	x := autograd.New(g.Randn([]int{4, 3}))
	require.NoError(t, m.Forward(x).Sum(nil, false).Backward())
	for _, p := range m.Parameters() {
		require.NotNil(t, p.Grad())
	}
	m.ZeroGrad()
	for _, p := range m.Parameters() {
		assert.Nil(t, p.Grad())
	}
}

func TestLinearInitAndShape(t *testing.T) {
	g := tensor.NewGenerator(7)
	l := nn.NewLinear(g, 50, 40, true, tensor.Float64)
	bound := 1 / math.Sqrt(50)
	for _, p := range []*autograd.Var{l.Weight, l.Bias} {
		assert.Equal(t, tensor.Float64, p.DType())
		assert.True(t, p.RequiresGrad())
		vals := p.Value().Float64s()
		lo, hi := vals[0], vals[0]
		for _, v := range vals {
			lo, hi = min(lo, v), max(hi, v)
		}
		assert.GreaterOrEqual(t, lo, -bound)
		assert.Less(t, hi, bound)
		assert.Less(t, lo, -0.8*bound, "spread should reach near the bound")
		assert.Greater(t, hi, 0.8*bound)
	}
	assert.Equal(t, []int{40, 50}, l.Weight.Shape())
	assert.Equal(t, "Linear(in_features=50, out_features=40, bias=True)", l.String())

	// Same seed, same weights; the generator is the only randomness.
	a := nn.NewLinear(tensor.NewGenerator(9), 3, 2, true)
	b := nn.NewLinear(tensor.NewGenerator(9), 3, 2, true)
	assert.Equal(t, a.Weight.Value().Float32s(), b.Weight.Value().Float32s())
	assert.Equal(t, a.Bias.Value().Float32s(), b.Bias.Value().Float32s())

	assert.PanicsWithValue(t, "nn.Linear.Forward: input shape [2 4] must end in in_features=3", func() {
		a.Forward(autograd.New(tensor.Zeros([]int{2, 4})))
	})
	assert.Panics(t, func() { nn.NewLinear(nil, 3, 2, true) })
}

func TestInitializers(t *testing.T) {
	g := tensor.NewGenerator(3)
	fi, fo := nn.FanInOut([]int{16, 8, 3, 3})
	assert.Equal(t, []int{72, 144}, []int{fi, fo})
	assert.Panics(t, func() { nn.FanInOut([]int{5}) })
	assert.InDelta(t, 1/math.Sqrt(3), nn.CalculateGain("leaky_relu", math.Sqrt(5)), 1e-15)
	assert.InDelta(t, 5.0/3, nn.CalculateGain("tanh"), 1e-15)
	assert.Panics(t, func() { nn.CalculateGain("swish") })

	w := tensor.Zeros([]int{200, 100}, tensor.Float64)
	cases := []struct {
		name      string
		fill      func()
		bound     float64 // uniform bound, or 0
		std       float64 // expected standard deviation
		relTolStd float64
	}{
		{"kaiming_uniform", func() { nn.KaimingUniform(g, w, math.Sqrt(5), nn.FanIn, "leaky_relu") }, 0.1, 0.1 / math.Sqrt(3), 0.05},
		{"kaiming_normal_fan_out", func() { nn.KaimingNormal(g, w, 0, nn.FanOut, "relu") }, 0, math.Sqrt(2.0 / 200), 0.05},
		{"xavier_uniform", func() { nn.XavierUniform(g, w, 1) }, math.Sqrt(6.0 / 300), math.Sqrt(2.0 / 300), 0.05},
		{"xavier_normal", func() { nn.XavierNormal(g, w, 2) }, 0, 2 * math.Sqrt(2.0/300), 0.05},
		{"normal", func() { nn.Normal(g, w, 0, 0.3) }, 0, 0.3, 0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fill()
			vals := w.Float64s()
			var sum, sq float64
			for _, v := range vals {
				if tc.bound > 0 {
					require.LessOrEqual(t, math.Abs(v), tc.bound)
				}
				sum += v
				sq += v * v
			}
			n := float64(len(vals))
			std := math.Sqrt(sq/n - (sum/n)*(sum/n))
			assert.InEpsilon(t, tc.std, std, tc.relTolStd)
		})
	}
	nn.Constant(w, 2.5)
	assert.Equal(t, 2.5, w.At(3, 4))
	nn.Zeros(w)
	assert.Equal(t, 0.0, w.Sum(nil, false).Item())
	nn.Ones(w.Narrow(0, 0, 1))
	assert.Equal(t, 100.0, w.Sum(nil, false).Item())
}

func TestDropout(t *testing.T) {
	x := autograd.Param(tensor.Ones([]int{1000}, tensor.Float64))
	run := func(seed uint64) []float64 {
		return nn.NewDropout(0.25, tensor.NewGenerator(seed)).Forward(x).Value().Float64s()
	}
	a, b := run(5), run(5)
	assert.Equal(t, a, b, "same seed, same mask")
	zeros := 0
	for _, v := range a {
		if v == 0 {
			zeros++
		} else {
			require.InDelta(t, 1/0.75, v, 1e-12)
		}
	}
	assert.InDelta(t, 250, zeros, 60)

	d := nn.NewDropout(0.25, tensor.NewGenerator(1))
	d.Train(false)
	assert.Same(t, x, d.Forward(x))
	assert.Panics(t, func() { nn.NewDropout(1.5, tensor.NewGenerator(1)) })
	assert.Panics(t, func() { nn.NewDropout(0.5, nil) })
}

func TestLoadStateDictErrors(t *testing.T) {
	g := tensor.NewGenerator(4)
	m := newBlock(g)
	before := m.seq.At(0).(*nn.Linear).Weight.Value().Float32s()

	sd := map[string]*tensor.Tensor{}
	for k, v := range nn.StateDict(newBlock(tensor.NewGenerator(5))) {
		sd[k] = v.Clone()
	}
	delete(sd, "features.0.bias")
	sd["extra"] = tensor.Zeros([]int{1})
	sd["scale"] = tensor.Zeros([]int{4})
	sd["running_mean"] = tensor.Zeros([]int{3}, tensor.Float64)

	err := nn.LoadStateDict(m, sd, true)
	require.Error(t, err)
	e, ok := nn.AsStateDictError(err)
	require.True(t, ok)
	assert.Equal(t, []string{"features.0.bias"}, e.Missing)
	assert.Equal(t, []string{"extra"}, e.Unexpected)
	assert.Equal(t, []string{
		`"scale" has shape [4] in the state dict, [3] in the module`,
		`"running_mean" has dtype float64 in the state dict, float32 in the module`,
	}, e.Mismatched)
	assert.Contains(t, err.Error(), `missing keys: "features.0.bias"`)
	assert.Contains(t, err.Error(), `unexpected keys: "extra"`)
	// Nothing was copied.
	assert.Equal(t, before, m.seq.At(0).(*nn.Linear).Weight.Value().Float32s())

	// Non-strict still refuses mismatches...
	err = nn.LoadStateDict(m, sd, false)
	e, _ = nn.AsStateDictError(err)
	require.NotNil(t, e)
	assert.Empty(t, e.Missing)
	assert.Empty(t, e.Unexpected)
	assert.Len(t, e.Mismatched, 2)
	// ...and loads the rest once they are gone.
	delete(sd, "scale")
	delete(sd, "running_mean")
	require.NoError(t, nn.LoadStateDict(m, sd, false))
	assert.Equal(t, sd["features.0.weight"].Float32s(), m.seq.At(0).(*nn.Linear).Weight.Value().Float32s())
}

func TestSafetensorsRoundTrip(t *testing.T) {
	src := newBlock(tensor.NewGenerator(1))
	src.NamedBuffers()[0].Buffer.CopyFrom(tensor.FromSlice([]float32{1, 2, 3}))
	var buf bytes.Buffer
	require.NoError(t, nn.WriteSafetensors(&buf, src))

	dst := newBlock(tensor.NewGenerator(2))
	require.NoError(t, nn.ReadSafetensors(bytes.NewReader(buf.Bytes()), dst))
	want := nn.StateDict(src)
	for k, v := range nn.StateDict(dst) {
		assert.Equal(t, want[k].Float32s(), v.Float32s(), k)
	}
	x := autograd.New(tensor.NewGenerator(3).Randn([]int{2, 2}))
	assert.Equal(t, src.Forward(x).Value().Float32s(), dst.Forward(x).Value().Float32s())

	// File variants.
	path := t.TempDir() + "/m.safetensors"
	require.NoError(t, nn.SaveSafetensors(path, src))
	dst2 := newBlock(tensor.NewGenerator(3))
	require.NoError(t, nn.LoadSafetensors(path, dst2))
	assert.Equal(t, src.scale.Value().Float32s(), dst2.scale.Value().Float32s())
	_, meta, err := nn.LoadTensors(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt"}, meta)

	// A model of another shape is refused with a state-dict error.
	other := nn.NewSequential(nn.NewLinear(tensor.NewGenerator(1), 2, 2, true))
	err = nn.UnmarshalSafetensors(buf.Bytes(), other)
	_, ok := nn.AsStateDictError(err)
	assert.True(t, ok, "%v", err)
	// Corrupt bytes are an error, not a panic.
	assert.Error(t, nn.UnmarshalSafetensors(buf.Bytes()[:20], dst))
}

func TestEncodeTensorsDTypes(t *testing.T) {
	in := map[string]*tensor.Tensor{
		"f32":    tensor.FromSlice([]float32{1.5, -2, 3}, 3),
		"f64":    tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3).T(), // non-contiguous
		"i64":    tensor.FromSlice([]int64{-1, 1 << 40}),
		"i32":    tensor.FromSlice([]int32{-7, 7}),
		"bool":   tensor.FromSlice([]bool{true, false, true}),
		"i16":    tensor.FromSlice([]int16{-32768, 5, 32767}),
		"i8":     tensor.FromSlice([]int8{-128, -1, 127, 0}, 2, 2).T(), // non-contiguous
		"u8":     tensor.FromSlice([]uint8{0, 128, 255}),
		"u16":    tensor.FromSlice([]uint16{0, 32768, 65535}),
		"u32":    tensor.FromSlice([]uint32{0, 1 << 31, 1<<32 - 1}),
		"u64":    tensor.FromSlice([]uint64{0, 1 << 63, 1<<64 - 1}),
		"f16":    tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0xc000}, 2),
		"bf16":   tensor.FromHalfBits(tensor.BFloat16, []uint16{0x3f80}, 1),
		"scalar": tensor.Scalar(2.5),
		"empty":  tensor.Zeros([]int{0, 3}),
	}
	var buf bytes.Buffer
	require.NoError(t, nn.EncodeTensors(&buf, in, map[string]string{"k": "v"}))
	out, meta, err := nn.DecodeTensors(buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, meta)
	require.Len(t, out, len(in))
	for k, want := range in {
		got := out[k]
		assert.Equal(t, want.Shape(), got.Shape(), k)
		assert.Equal(t, want.DType(), got.DType(), k)
		switch want.DType() {
		case tensor.Float16, tensor.BFloat16:
			assert.Equal(t, want.HalfBits(), got.HalfBits(), k)
		case tensor.Bool:
			assert.Equal(t, want.Bools(), got.Bools(), k)
		case tensor.Int64:
			assert.Equal(t, want.Int64s(), got.Int64s(), k)
		case tensor.Uint64: // beyond float64's exact range
			assert.Equal(t, want.Uint64s(), got.Uint64s(), k)
		default:
			assert.Equal(t, want.Float64s(), got.Float64s(), k)
		}
	}
	assert.Equal(t, 0, out["scalar"].Dim())
	assert.Error(t, nn.EncodeTensors(&buf, map[string]*tensor.Tensor{"x": nil}, nil))
}

func TestConv2dLayer(t *testing.T) {
	g := tensor.NewGenerator(5)
	c := nn.NewConv2d(g, 4, 6, [2]int{3, 2}, tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 2}, true, tensor.Float64)
	assert.Equal(t, []int{6, 2, 3, 2}, c.Weight.Shape())
	assert.Equal(t, []int{6}, c.Bias.Shape())
	bound := 1 / math.Sqrt(2*3*2)
	for _, v := range append(c.Weight.Value().Float64s(), c.Bias.Value().Float64s()...) {
		require.LessOrEqual(t, math.Abs(v), bound)
	}
	assert.Equal(t, "Conv2d(4, 6, kernel_size=(3, 2), stride=(1, 1), padding=(1, 1), groups=2)", c.String())
	y := c.Forward(autograd.New(g.Randn([]int{2, 4, 5, 5}, tensor.Float64)))
	assert.Equal(t, []int{2, 6, 5, 6}, y.Shape())

	assert.PanicsWithValue(t, "nn.NewConv2d: groups=3 must divide in=4 and out=6", func() {
		nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Groups: 3}, true)
	})
	assert.PanicsWithValue(t, "nn.Conv2d.Forward: input shape [2 3 5 5] must be [N, 4, H, W] or [4, H, W]", func() {
		c.Forward(autograd.New(tensor.Zeros([]int{2, 3, 5, 5})))
	})

	// Gradients by finite differences, through a transposed (non-contiguous)
	// input and the whole conv -> pool -> flatten -> linear stack.
	net := nn.NewSequential(
		nn.NewConv2d(g, 2, 3, [2]int{2, 2}, tensor.Conv2dOptions{Stride: [2]int{1, 2}}, true, tensor.Float64),
		nn.NewTanh(),
		nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 1}}),
		nn.NewFlatten(1, -1),
		nn.NewLinear(g, 6, 2, true, tensor.Float64),
		nn.NewLogSoftmax(1),
	)
	x := g.Randn([]int{2, 2, 3, 5}, tensor.Float64)
	err := autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
		return net.Forward(in[0].Transpose(2, 3))
	}, x)
	require.NoError(t, err)
}

func TestSoftmaxModules(t *testing.T) {
	x := autograd.New(tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
	p := nn.NewSoftmax(1).Forward(x).Value().Float64s()
	lp := nn.NewLogSoftmax(1).Forward(x).Value().Float64s()
	e := 1 / (1 + math.E)
	assert.InDeltaSlice(t, []float64{e, 1 - e, e, 1 - e}, p, 1e-12)
	assert.InDeltaSlice(t, []float64{math.Log(e), math.Log(1 - e), math.Log(e), math.Log(1 - e)}, lp, 1e-12)
	assert.Equal(t, "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
		nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}}).String())
}
