package nn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// layerFromCaseMore builds the non-normalization layers of the golden cases.
func layerFromCaseMore(t *testing.T, c golden.Case, g *tensor.Generator) nn.Module {
	f64 := tensor.Float64
	switch c.Op {
	case "conv1d":
		return nn.NewConv1d(g, c.Int("cin"), c.Int("cout"), c.Int("k"), tensor.Conv1dOptions{Stride: c.Int("stride"),
			Padding: c.Int("padding"), Dilation: c.Int("dilation"), Groups: c.Int("groups")}, c.Bool("bias"), f64)
	case "convtranspose2d":
		return nn.NewConvTranspose2d(g, c.Int("cin"), c.Int("cout"), pair(c.Ints("kernel")), tensor.ConvTranspose2dOptions{
			Stride: pair(c.Ints("stride")), Padding: pair(c.Ints("padding")), OutputPadding: pair(c.Ints("output_padding")),
			Dilation: pair(c.Ints("dilation")), Groups: c.Int("groups")}, c.Bool("bias"), f64)
	case "convtranspose1d":
		return nn.NewConvTranspose1d(g, c.Int("cin"), c.Int("cout"), c.Int("k"), nn.ConvTranspose1dOptions{
			Stride: c.Int("stride"), Padding: c.Int("padding"), OutputPadding: c.Int("output_padding"),
			Dilation: c.Int("dilation"), Groups: c.Int("groups")}, c.Bool("bias"), f64)
	case "avgpool2d":
		return nn.NewAvgPool2d(tensor.Pool2dOptions{Kernel: pair(c.Ints("kernel")), Stride: pair(c.Ints("stride")),
			Padding: pair(c.Ints("padding")), CountIncludePad: c.Bool("count_include_pad")})
	case "adaptiveavgpool2d":
		s := c.Ints("size")
		return nn.NewAdaptiveAvgPool2d(s[0], s[1])
	case "adaptivemaxpool2d":
		s := c.Ints("size")
		return nn.NewAdaptiveMaxPool2d(s[0], s[1])
	case "maxpool1d":
		return nn.NewMaxPool1d(nn.Pool1dOptions{Kernel: c.Int("kernel"), Stride: c.Int("stride"), Padding: c.Int("padding"),
			Dilation: c.Int("dilation"), CeilMode: c.Bool("ceil_mode")})
	case "avgpool1d":
		return nn.NewAvgPool1d(nn.Pool1dOptions{Kernel: c.Int("kernel"), Stride: c.Int("stride"), Padding: c.Int("padding"),
			CountIncludePad: c.Bool("count_include_pad")})
	case "embedding":
		opt := nn.EmbeddingOptions{}
		if _, ok := c.Attrs["padding_idx"]; ok {
			opt.HasPaddingIdx, opt.PaddingIdx = true, c.Int("padding_idx")
		}
		if _, ok := c.Attrs["max_norm"]; ok {
			opt.MaxNorm = c.Float("max_norm")
		}
		if _, ok := c.Attrs["norm_type"]; ok {
			opt.NormType = c.Float("norm_type")
		}
		return nn.NewEmbedding(g, c.Int("num"), c.Int("dim"), opt, f64)
	case "bilinear":
		return nn.NewBilinear(g, c.Int("in1"), c.Int("in2"), c.Int("out"), c.Bool("bias"), f64)
	case "unflatten":
		return nn.NewUnflatten(c.Int("dim"), c.Ints("sizes")...)
	case "identity":
		return &nn.Identity{}
	case "pad":
		p, v := c.Ints("pad"), c.Float("value")
		switch c.String("mode") {
		case "zero":
			return nn.NewZeroPad2d(p...)
		case "constant1d":
			return nn.NewConstantPad1d(v, p...)
		case "constant2d":
			return nn.NewConstantPad2d(v, p...)
		case "constant3d":
			return nn.NewConstantPad3d(v, p...)
		case "reflect1d":
			return nn.NewReflectionPad1d(p...)
		case "reflect2d":
			return nn.NewReflectionPad2d(p...)
		case "replicate1d":
			return nn.NewReplicationPad1d(p...)
		case "replicate2d":
			return nn.NewReplicationPad2d(p...)
		}
	case "pixelshuffle":
		return nn.NewPixelShuffle(c.Int("r"))
	case "pixelunshuffle":
		return nn.NewPixelUnshuffle(c.Int("r"))
	case "upsample":
		opt := nn.UpsampleOptions{Size: pair(c.Ints("size")), Mode: c.String("mode"), AlignCorners: c.Bool("align_corners")}
		if s := c.Float("scale"); s > 0 {
			opt.ScaleFactor = [2]float64{s, s}
		}
		return nn.NewUpsample(opt)
	}
	t.Fatalf("unknown op %q", c.Op)
	return nil
}

// containers mirrors the torch module of the "containers" golden case.
type containers struct {
	nn.Base
	layers *nn.ModuleList
	heads  *nn.ModuleDict
}

func (*containers) Forward(x *autograd.Var) *autograd.Var { return x }

// TestContainersMatchTorch checks ModuleList and ModuleDict naming and
// printing against torch.
func TestContainersMatchTorch(t *testing.T) {
	var c golden.Case
	for _, cc := range golden.Load(t, "testdata/golden_layers.json") {
		if cc.Op == "containers" {
			c = cc
		}
	}
	require.Equal(t, "containers", c.Op)
	g := tensor.NewGenerator(1)
	m := &containers{
		layers: nn.NewModuleList(nn.NewConv1d(g, 2, 3, 3, tensor.Conv1dOptions{}, true), nn.NewReLU(), nn.NewLayerNorm([]int{3}, 0, true)),
		heads:  nn.NewModuleDict().Set("b", nn.NewBilinear(g, 3, 3, 1, true)).Set("a", nn.NewEmbedding(g, 4, 3, nn.EmbeddingOptions{})),
	}
	m.RegisterModule("layers", m.layers)
	m.RegisterModule("heads", m.heads)
	m.RegisterModule("norm", nn.NewBatchNorm1d(3, nn.BatchNormOptions{}))
	assert.Equal(t, attrStrings(t, c, "keys"), nn.StateDictKeys(m))
	assert.Equal(t, c.String("layers_repr"), m.layers.String())
	assert.Equal(t, c.String("heads_repr"), m.heads.String())
	assert.Equal(t, []string{"b", "a"}, m.heads.Keys())
	assert.Equal(t, 3, m.layers.Len())
	_, isNorm := m.layers.At(-1).(*nn.LayerNorm)
	assert.True(t, isNorm)
	h, ok := m.heads.Get("a")
	require.True(t, ok)
	assert.Equal(t, "Embedding(4, 3)", h.(fmt.Stringer).String())
	// Replacing keeps the position.
	m.heads.Set("b", nn.NewLinear(g, 3, 4, true))
	assert.Equal(t, []string{"b", "a"}, m.heads.Keys())
	assert.Equal(t, []int{4, 3}, m.heads.NamedParameters()[0].Param.Shape())
	_, ok = m.heads.Get("c")
	assert.False(t, ok)
	assert.PanicsWithValue(t, "nn.ModuleList.Forward: a ModuleList has no Forward; call its modules from the parent's Forward (or use Sequential)",
		func() { m.layers.Forward(nil) })
}
