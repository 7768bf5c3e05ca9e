package nn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// three reads a 3-int attribute.
func three(c golden.Case, name string) [3]int {
	v := c.Ints(name)
	return [3]int{v[0], v[1], v[2]}
}

// two reads a 2-int attribute.
func two(c golden.Case, name string) [2]int {
	v := c.Ints(name)
	return [2]int{v[0], v[1]}
}

// moreLayerFromCase builds the module a golden_layers_more.json case
// describes (Float64), and the function applying it to the case inputs.
func moreLayerFromCase(t *testing.T, c golden.Case) (nn.Module, func(xs []*autograd.Var, raw []*tensor.Tensor) *autograd.Var) {
	f64 := tensor.Float64
	g := tensor.NewGenerator(1)
	one := func(m nn.Module) (nn.Module, func([]*autograd.Var, []*tensor.Tensor) *autograd.Var) {
		return m, func(xs []*autograd.Var, _ []*tensor.Tensor) *autograd.Var { return m.Forward(xs[0]) }
	}
	mode := tensor.PadConstant
	if name, ok := c.Attrs["padding_mode"]; ok {
		var err error
		mode, err = tensor.ParsePadMode(name.(string))
		require.NoError(t, err)
	}
	switch c.Op {
	case "conv1d":
		m := nn.NewConv1d(g, c.Int("cin"), c.Int("cout"), c.Int("kernel"), tensor.Conv1dOptions{Stride: c.Int("stride"), Padding: c.Int("padding"),
			Dilation: c.Int("dilation"), Groups: c.Int("groups")}, c.Bool("bias"), f64)
		m.PaddingMode = mode
		return one(m)
	case "conv2d":
		m := nn.NewConv2d(g, c.Int("cin"), c.Int("cout"), two(c, "kernel"), tensor.Conv2dOptions{Stride: two(c, "stride"), Padding: two(c, "padding"),
			Dilation: two(c, "dilation"), Groups: c.Int("groups")}, c.Bool("bias"), f64)
		m.PaddingMode = mode
		return one(m)
	case "conv3d":
		opt := tensor.Conv3dOptions{Stride: three(c, "stride"), Padding: three(c, "padding"), Dilation: three(c, "dilation"), Groups: c.Int("groups")}
		m := nn.NewConv3d(g, c.Int("cin"), c.Int("cout"), three(c, "kernel"), opt, c.Bool("bias"), f64)
		m.PaddingMode = mode
		return one(m)
	case "convtranspose3d":
		opt := tensor.ConvTranspose3dOptions{Stride: three(c, "stride"), Padding: three(c, "padding"), OutputPadding: three(c, "output_padding"),
			Dilation: three(c, "dilation"), Groups: c.Int("groups")}
		return one(nn.NewConvTranspose3d(g, c.Int("cin"), c.Int("cout"), three(c, "kernel"), opt, c.Bool("bias"), f64))
	case "maxpool3d":
		return one(nn.NewMaxPool3d(tensor.Pool3dOptions{Kernel: three(c, "kernel"), Stride: three(c, "stride"), Padding: three(c, "padding"),
			Dilation: three(c, "dilation"), CeilMode: c.Bool("ceil")}))
	case "avgpool3d":
		return one(nn.NewAvgPool3d(tensor.Pool3dOptions{Kernel: three(c, "kernel"), Stride: three(c, "stride"), Padding: three(c, "padding"),
			CeilMode: c.Bool("ceil"), CountIncludePad: c.Bool("count_include_pad")}))
	case "reflectionpad3d":
		return one(nn.NewReflectionPad3d(c.Ints("padding")...))
	case "replicationpad3d":
		return one(nn.NewReplicationPad3d(c.Ints("padding")...))
	case "adaptiveavgpool1d":
		return one(nn.NewAdaptiveAvgPool1d(c.Int("out")))
	case "adaptivemaxpool1d":
		return one(nn.NewAdaptiveMaxPool1d(c.Int("out")))
	case "lppool1d":
		return one(nn.NewLPPool1d(c.Float("p"), c.Int("kernel"), c.Int("stride"), c.Bool("ceil")))
	case "lppool2d":
		return one(nn.NewLPPool2d(c.Float("p"), two(c, "kernel"), two(c, "stride"), c.Bool("ceil")))
	case "maxunpool2d":
		m := nn.NewMaxUnpool2d(two(c, "kernel"), two(c, "stride"), two(c, "padding"))
		return m, func(xs []*autograd.Var, _ []*tensor.Tensor) *autograd.Var { return m.Forward2(xs[0], xs[1]) }
	case "embeddingbag":
		opt := nn.EmbeddingBagOptions{Mode: c.String("mode")}
		if _, ok := c.Attrs["padding_idx"]; ok {
			opt.HasPaddingIdx, opt.PaddingIdx = true, c.Int("padding_idx")
		}
		_, opt.IncludeLastOffset = c.Attrs["include_last_offset"]
		if _, ok := c.Attrs["max_norm"]; ok {
			opt.MaxNorm = c.Float("max_norm")
		}
		if _, ok := c.Attrs["norm_type"]; ok {
			opt.NormType = c.Float("norm_type")
		}
		m := nn.NewEmbeddingBag(g, 10, 3, opt, f64)
		return m, func(_ []*autograd.Var, raw []*tensor.Tensor) *autograd.Var {
			switch len(raw) {
			case 1:
				return m.Forward(autograd.New(raw[0]))
			case 2:
				return m.Bag(raw[0], raw[1], nil)
			}
			return m.Bag(raw[0], raw[1], raw[2])
		}
	case "rrelu":
		return one(nn.NewRReLU(c.Float("lower"), c.Float("upper"), g))
	}
	t.Fatalf("unknown op %q", c.Op)
	return nil, nil
}

// TestLayersMoreGolden checks every case of golden_layers_more.json:
// state-dict keys and repr as torch's, the output, and the gradients of
// the inputs and parameters.
func TestLayersMoreGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_layers_more.json") {
		t.Run(c.Name, func(t *testing.T) {
			m, apply := moreLayerFromCase(t, c)
			nx := c.Int("nx")
			params := attrStrings(t, c, "params")
			assert.Equal(t, attrStrings(t, c, "keys"), append([]string{}, nn.StateDictKeys(m)...))
			assert.Equal(t, c.String("repr"), m.(fmt.Stringer).String())
			sd := map[string]*tensor.Tensor{}
			for i, name := range params {
				sd[name] = goldtensor.ToTensor(c.Inputs[nx+i])
			}
			require.NoError(t, nn.LoadStateDict(m, sd, true))
			m.Train(c.Bool("train"))
			xs := make([]*autograd.Var, nx)
			raw := make([]*tensor.Tensor, nx)
			for i := range xs {
				raw[i] = goldtensor.ToTensor(c.Inputs[i])
				if raw[i].DType().IsFloat() && c.Grads[i] != nil {
					xs[i] = autograd.Param(raw[i])
				} else {
					xs[i] = autograd.New(raw[i])
				}
			}
			out := apply(xs, raw)
			golden.AllClose(t, "output", c.Outputs[0], out.Shape(), out.Value().Float64s(), 1e-9, 1e-11)
			require.NoError(t, out.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
			for i, x := range xs {
				if c.Grads[i] == nil {
					continue
				}
				require.NotNil(t, x.Grad(), "grad of input %d", i)
				golden.AllClose(t, fmt.Sprintf("grad of input %d", i), *c.Grads[i], x.Grad().Shape(), x.Grad().Float64s(), 1e-9, 1e-11)
			}
			named := map[string]*autograd.Var{}
			for _, p := range m.NamedParameters() {
				named[p.Name] = p.Param
			}
			for i, name := range params {
				gr := named[name].Grad()
				require.NotNil(t, gr, "grad of %s", name)
				goldtensor.Check(t, "grad of "+name, *c.Grads[nx+i], gr, 1e-9, 1e-11)
			}
		})
	}
}

// TestLayersMoreGradCheck checks the gradients of the composed 3-d,
// pooling and bag ops against float64 central differences, with
// non-contiguous (transposed) inputs.
func TestLayersMoreGradCheck(t *testing.T) {
	g := tensor.NewGenerator(7)
	randn := func(shape ...int) *tensor.Tensor { return g.Randn(shape, tensor.Float64) }
	// transposed returns a non-contiguous tensor of the given shape (its
	// last two axes swapped in memory).
	transposed := func(shape ...int) *tensor.Tensor {
		s := append([]int{}, shape...)
		n := len(s)
		s[n-1], s[n-2] = s[n-2], s[n-1]
		return randn(s...).Transpose(n-1, n-2)
	}
	positive := func(t *tensor.Tensor) *tensor.Tensor { return t.Abs().AddScalar(0.2) }
	idx := tensor.FromSlice([]int64{3, 0, 5, 6, 2, 1, 4, 4, 0}, 9)
	unpoolIdx := tensor.FromSlice([]int64{0, 3, 9, 14, 5, 2, 13, 10}, 1, 2, 2, 2)
	cases := []struct {
		name   string
		f      func(in []*autograd.Var) *autograd.Var
		inputs []*tensor.Tensor
	}{
		{"conv3d/strided_padded_dilated", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv3d(in[0], in[1], in[2], tensor.Conv3dOptions{Stride: [3]int{2, 1, 1}, Padding: [3]int{1, 0, 1}, Dilation: [3]int{1, 1, 2}})
		}, []*tensor.Tensor{transposed(1, 2, 3, 3, 4), randn(2, 2, 2, 2, 2), randn(2)}},
		{"conv3d/groups", func(in []*autograd.Var) *autograd.Var {
			return autograd.Conv3d(in[0], in[1], nil, tensor.Conv3dOptions{Groups: 2, Padding: [3]int{1, 1, 0}})
		}, []*tensor.Tensor{randn(1, 4, 2, 3, 3), transposed(2, 2, 2, 2, 2)}},
		{"convtranspose3d/strided_padded", func(in []*autograd.Var) *autograd.Var {
			return autograd.ConvTranspose3d(in[0], in[1], in[2], tensor.ConvTranspose3dOptions{Stride: [3]int{2, 1, 2}, Padding: [3]int{1, 0, 0}, OutputPadding: [3]int{1, 0, 1}})
		}, []*tensor.Tensor{transposed(1, 2, 2, 2, 3), randn(2, 2, 3, 2, 2), randn(2)}},
		{"convtranspose3d/groups_dilated", func(in []*autograd.Var) *autograd.Var {
			return autograd.ConvTranspose3d(in[0], in[1], nil, tensor.ConvTranspose3dOptions{Groups: 2, Dilation: [3]int{2, 1, 1}, Stride: [3]int{2, 1, 1}})
		}, []*tensor.Tensor{randn(1, 2, 2, 2, 2), randn(2, 1, 2, 2, 2)}},
		{"conv3d/padding_mode_reflect", func(in []*autograd.Var) *autograd.Var {
			m := nn.NewConv3d(g, 2, 2, [3]int{2, 2, 2}, tensor.Conv3dOptions{Padding: [3]int{1, 1, 1}}, false, tensor.Float64)
			m.PaddingMode = tensor.PadReflect
			m.Weight = in[1]
			return m.Forward(in[0])
		}, []*tensor.Tensor{transposed(1, 2, 2, 3, 3), randn(2, 2, 2, 2, 2)}},
		{"conv1d/padding_mode_circular", func(in []*autograd.Var) *autograd.Var {
			m := nn.NewConv1d(g, 2, 2, 3, tensor.Conv1dOptions{Padding: 2}, false, tensor.Float64)
			m.PaddingMode = tensor.PadCircular
			m.Weight = in[1]
			return m.Forward(in[0])
		}, []*tensor.Tensor{transposed(2, 2, 4), randn(2, 2, 3)}},
		{"maxpool3d", func(in []*autograd.Var) *autograd.Var {
			return autograd.MaxPool3d(in[0], tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}, Stride: [3]int{1, 2, 1}, Padding: [3]int{1, 0, 1}})
		}, []*tensor.Tensor{transposed(1, 2, 3, 4, 3)}},
		{"avgpool3d/ceil_exclude", func(in []*autograd.Var) *autograd.Var {
			return autograd.AvgPool3d(in[0], tensor.Pool3dOptions{Kernel: [3]int{2, 3, 2}, Stride: [3]int{2, 2, 2}, Padding: [3]int{1, 1, 0}, CeilMode: true})
		}, []*tensor.Tensor{transposed(1, 2, 3, 4, 5)}},
		{"maxunpool2d", func(in []*autograd.Var) *autograd.Var {
			return autograd.MaxUnpool2d(in[0], unpoolIdx, 4, 4)
		}, []*tensor.Tensor{transposed(1, 2, 2, 2)}},
		{"adaptiveavgpool1d", func(in []*autograd.Var) *autograd.Var {
			return nn.NewAdaptiveAvgPool1d(3).Forward(in[0])
		}, []*tensor.Tensor{transposed(2, 7, 2).Transpose(1, 2).Transpose(1, 2)}},
		{"adaptivemaxpool1d", func(in []*autograd.Var) *autograd.Var {
			return nn.NewAdaptiveMaxPool1d(3).Forward(in[0])
		}, []*tensor.Tensor{transposed(2, 2, 7)}},
		{"lppool1d", func(in []*autograd.Var) *autograd.Var {
			return nn.NewLPPool1d(1.5, 3, 2, true).Forward(in[0])
		}, []*tensor.Tensor{positive(transposed(2, 2, 8))}},
		{"lppool2d", func(in []*autograd.Var) *autograd.Var {
			return nn.NewLPPool2d(2, [2]int{2, 3}, [2]int{1, 2}, false).Forward(in[0])
		}, []*tensor.Tensor{positive(transposed(1, 2, 4, 5))}},
		{"embeddingbag/mean", func(in []*autograd.Var) *autograd.Var {
			m := nn.NewEmbeddingBag(g, 7, 3, nn.EmbeddingBagOptions{}, tensor.Float64)
			m.Weight = in[0]
			return m.Bag(idx, tensor.FromSlice([]int64{0, 2, 2, 6}, 4), nil)
		}, []*tensor.Tensor{transposed(7, 3)}},
		{"embeddingbag/max", func(in []*autograd.Var) *autograd.Var {
			m := nn.NewEmbeddingBag(g, 7, 3, nn.EmbeddingBagOptions{Mode: "max"}, tensor.Float64)
			m.Weight = in[0]
			return m.Bag(idx, tensor.FromSlice([]int64{0, 2, 2, 6}, 4), nil)
		}, []*tensor.Tensor{randn(7, 3)}},
		{"embeddingbag/sum_weighted", func(in []*autograd.Var) *autograd.Var {
			m := nn.NewEmbeddingBag(g, 7, 3, nn.EmbeddingBagOptions{Mode: "sum"}, tensor.Float64)
			m.Weight = in[0]
			return m.Bag(idx.Reshape(3, 3), nil, tensor.Linspace(-1, 1, 9, tensor.Float64).Reshape(3, 3))
		}, []*tensor.Tensor{randn(7, 3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(tc.f, tc.inputs...))
		})
	}
}

// TestRReLUTraining checks the training-mode slopes: positive inputs pass
// unchanged, each negative input is scaled by its own slope within
// [lower, upper], the slopes vary and average near the middle, the
// gradient is the slope, and the same seed repeats the draw.
func TestRReLUTraining(t *testing.T) {
	const lower, upper = 0.1, 0.3
	x := tensor.Linspace(-2, 2, 4001, tensor.Float64)
	run := func() (*autograd.Var, *autograd.Var) {
		m := nn.NewRReLU(lower, upper, tensor.NewGenerator(42))
		require.True(t, m.IsTraining())
		in := autograd.Param(x.Clone())
		out := m.Forward(in)
		require.NoError(t, out.Sum(nil, false).Backward())
		return in, out
	}
	in, out := run()
	xs, ys, gs := x.Float64s(), out.Value().Float64s(), in.Grad().Float64s()
	var slopes []float64
	for i, v := range xs {
		switch {
		case v > 0:
			assert.Equal(t, v, ys[i])
			assert.Equal(t, 1.0, gs[i])
		case v < 0:
			a := ys[i] / v
			assert.GreaterOrEqual(t, a, lower)
			assert.LessOrEqual(t, a, upper)
			assert.InDelta(t, a, gs[i], 1e-12)
			slopes = append(slopes, a)
		}
	}
	require.Len(t, slopes, 2000)
	mean, lo, hi := 0.0, slopes[0], slopes[0]
	for _, a := range slopes {
		mean += a / float64(len(slopes))
		lo, hi = min(lo, a), max(hi, a)
	}
	assert.InDelta(t, (lower+upper)/2, mean, 0.01)
	assert.Less(t, lo, lower+0.01)
	assert.Greater(t, hi, upper-0.01)
	_, again := run()
	assert.Equal(t, ys, again.Value().Float64s())

	m := nn.NewRReLU(lower, upper, tensor.NewGenerator(1))
	m.Train(false)
	assert.Equal(t, []float64{-0.4, 0, 3}, m.Forward(autograd.New(tensor.FromSlice([]float64{-2, 0, 3}, 3))).Value().Float64s())
}

// TestLayersMorePanics checks that misuse panics with the op's name.
func TestLayersMorePanics(t *testing.T) {
	g := tensor.NewGenerator(1)
	x5 := autograd.New(tensor.Zeros([]int{1, 2, 3, 3, 3}, tensor.Float64))
	cases := []struct {
		name, want string
		f          func()
	}{
		{"conv3d channels", "Conv3d", func() { nn.NewConv3d(g, 3, 2, [3]int{1, 1, 1}, tensor.Conv3dOptions{}, true).Forward(x5) }},
		{"conv3d kernel too deep", "autograd.Conv3d", func() {
			autograd.Conv3d(x5, autograd.New(tensor.Zeros([]int{1, 2, 4, 1, 1}, tensor.Float64)), nil, tensor.Conv3dOptions{})
		}},
		{"maxpool3d rank", "MaxPool3d", func() {
			nn.NewMaxPool3d(tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}}).Forward(autograd.New(tensor.Zeros([]int{2, 2})))
		}},
		{"avgpool3d dilation", "AvgPool3d", func() { nn.NewAvgPool3d(tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}, Dilation: [3]int{2, 1, 1}}) }},
		{"unpool index range", "MaxUnpool2d", func() {
			autograd.MaxUnpool2d(autograd.New(tensor.Zeros([]int{1, 1, 1, 1})), tensor.FromSlice([]int64{9}, 1, 1, 1, 1), 2, 2)
		}},
		{"unpool forward", "Forward2", func() { nn.NewMaxUnpool2d([2]int{2, 2}, [2]int{}, [2]int{}).Forward(x5) }},
		{"bag mode", "mode", func() { nn.NewEmbeddingBag(g, 3, 2, nn.EmbeddingBagOptions{Mode: "min"}) }},
		{"bag weights need sum", "per-sample", func() {
			nn.NewEmbeddingBag(g, 3, 2, nn.EmbeddingBagOptions{}).Bag(tensor.FromSlice([]int64{0, 1}, 1, 2), nil, tensor.Ones([]int{1, 2}))
		}},
		{"bag offsets start", "offsets", func() {
			nn.NewEmbeddingBag(g, 3, 2, nn.EmbeddingBagOptions{}).Bag(tensor.FromSlice([]int64{0, 1}, 2), tensor.FromSlice([]int64{1}, 1), nil)
		}},
		{"bag id range", "out of range", func() {
			nn.NewEmbeddingBag(g, 3, 2, nn.EmbeddingBagOptions{}).Bag(tensor.FromSlice([]int64{5}, 1, 1), nil, nil)
		}},
		{"rrelu bounds", "RReLU", func() { nn.NewRReLU(0.5, 0.1, g) }},
		{"lppool norm", "LPPool2d", func() { nn.NewLPPool2d(0, [2]int{2, 2}, [2]int{}, false) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.Contains(t, fmt.Sprint(r), tc.want)
			}()
			tc.f()
		})
	}
}

// TestConv3dSecondOrder checks second-order gradients of the composed 3-d
// convolutions and pooling, and that float32 runs agree with float64.
func TestConv3dSecondOrder(t *testing.T) {
	g := tensor.NewGenerator(11)
	x, w := g.Randn([]int{1, 2, 3, 3, 3}, tensor.Float64), g.Randn([]int{2, 2, 2, 2, 2}, tensor.Float64)
	require.NoError(t, autograd.GradGradCheck(func(in []*autograd.Var) *autograd.Var {
		return autograd.Conv3d(in[0], in[1], nil, tensor.Conv3dOptions{Padding: [3]int{1, 0, 0}, Stride: [3]int{2, 1, 1}})
	}, x, w))
	require.NoError(t, autograd.GradGradCheck(func(in []*autograd.Var) *autograd.Var {
		return autograd.ConvTranspose3d(in[0], in[1], nil, tensor.ConvTranspose3dOptions{Stride: [3]int{2, 1, 1}})
	}, x, w))
	require.NoError(t, autograd.GradGradCheck(func(in []*autograd.Var) *autograd.Var {
		return autograd.AvgPool3d(in[0].Square(), tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}, Stride: [3]int{1, 1, 1}})
	}, x))

	want := autograd.Conv3d(autograd.New(x), autograd.New(w), nil, tensor.Conv3dOptions{Padding: [3]int{1, 1, 1}}).Value().Float64s()
	got := autograd.Conv3d(autograd.New(x.To(tensor.Float32)), autograd.New(w.To(tensor.Float32)), nil, tensor.Conv3dOptions{Padding: [3]int{1, 1, 1}})
	require.Equal(t, tensor.Float32, got.DType())
	assert.InDeltaSlice(t, want, got.Value().To(tensor.Float64).Float64s(), 1e-4)
}

// TestComposite3dAnnotations checks that the composed ops name themselves
// for graph readers.
func TestComposite3dAnnotations(t *testing.T) {
	g := tensor.NewGenerator(2)
	x := autograd.Param(g.Randn([]int{1, 2, 2, 4, 4}, tensor.Float64))
	w := autograd.Param(g.Randn([]int{2, 2, 1, 2, 2}, tensor.Float64))
	pool := tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}}
	for _, tc := range []struct {
		op  string
		out *autograd.Var
		n   int
	}{
		{"Conv3d", autograd.Conv3d(x, w, nil, tensor.Conv3dOptions{}), 3},
		{"ConvTranspose3d", autograd.ConvTranspose3d(x, w, nil, tensor.ConvTranspose3dOptions{}), 3},
		{"MaxPool3d", autograd.MaxPool3d(x, pool), 1},
		{"AvgPool3d", autograd.AvgPool3d(x, pool), 1},
		{"MaxUnpool2d", autograd.MaxUnpool2d(x.Select(2, 0), tensor.Zeros([]int{1, 2, 4, 4}, tensor.Int64), 5, 5), 1},
	} {
		info, ok := tc.out.Composite()
		require.True(t, ok, tc.op)
		assert.Equal(t, tc.op, info.Op)
		assert.Len(t, info.Inputs, tc.n, tc.op)
	}
}
