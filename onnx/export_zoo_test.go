package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zooCases are the model-zoo networks and transformer layers exported by
// the round-trip and ONNX Runtime tests.
func zooCases() []exportCase {
	return []exportCase{
		{"ResNet18", func(g *tensor.Generator) nn.Module {
			return models.ResNet18(g, models.ResNetConfig{NumClasses: 10})
		}, randInput(3, 32, 32)},
		{"MobileNetV2", func(g *tensor.Generator) nn.Module {
			return models.NewMobileNetV2(g, models.MobileNetV2Config{NumClasses: 10, WidthMult: 0.5})
		}, randInput(3, 32, 32)},
		{"LeNet5", func(g *tensor.Generator) nn.Module {
			return models.NewLeNet5(g, models.LeNet5Config{InChannels: 1, NumClasses: 10})
		}, randInput(1, 32, 32)},
		{"MLP", func(g *tensor.Generator) nn.Module {
			return models.NewMLP(g, models.MLPConfig{InFeatures: 12, Hidden: []int{16, 8}, Dropout: 0.1})
		}, randInput(12)},
		{"TransformerEncoder", func(g *tensor.Generator) nn.Module {
			return nn.NewTransformerEncoder(g, 2, 16, 4, nn.TransformerOptions{DimFeedforward: 32, BatchFirst: true, Activation: "gelu"}, true)
		}, randInput(5, 16)},
		{"TransformerEncoderNormFirst", func(g *tensor.Generator) nn.Module {
			return nn.NewTransformerEncoder(g, 1, 8, 2, nn.TransformerOptions{DimFeedforward: 16, BatchFirst: true, NormFirst: true}, false)
		}, randInput(3, 8)},
		{"MultiheadAttention", func(g *tensor.Generator) nn.Module {
			return nn.NewMultiheadAttention(g, 8, 2, nn.MultiheadAttentionOptions{BatchFirst: true})
		}, randInput(4, 8)},
		{"GRUClassifier", func(g *tensor.Generator) nn.Module {
			return models.NewGRUClassifier(g, models.GRUClassifierConfig{VocabSize: 30, EmbedDim: 8, HiddenSize: 6,
				NumLayers: 2, NumClasses: 4, Bidirectional: true, Dropout: 0.2})
		}, func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 7}, 0, 30) }},
		{"GRUClassifierOneLayer", func(g *tensor.Generator) nn.Module {
			return models.NewGRUClassifier(g, models.GRUClassifierConfig{VocabSize: 30, EmbedDim: 8, HiddenSize: 6, NumClasses: 3})
		}, func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 5}, 0, 30) }},
		{"GPT", func(g *tensor.Generator) nn.Module {
			return models.NewGPT(g, models.GPTConfig{VocabSize: 20, BlockSize: 8, NumLayers: 2, NumHeads: 2, EmbedDim: 16})
		}, func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 8}, 0, 20) }},
	}
}

func TestExportZooModels(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, tc := range zooCases() {
		t.Run(tc.name, func(t *testing.T) {
			g := tensor.NewGenerator(3)
			m := tc.build(g)
			b := exportModule(t, m, tc.input(g, 7), 0)
			path := filepath.Join(dir, tc.name+".onnx")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			files = append(files, path)
			m.Train(false)
			for _, n := range []int{1, 7} {
				x := tc.input(g, n)
				want := m.Forward(autograd.New(x)).Value()
				assertClose(t, want, runExported(t, b, x), 1e-5)
			}
		})
	}
	checkWithONNX(t, files)
}

func TestExportGraphInterface(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := nn.NewSequential(nn.NewLinear(g, 4, 3, true), nn.NewReLU(), nn.NewLinear(g, 3, 2, true))
	var buf bytes.Buffer
	err := Export(m, []*tensor.Tensor{g.Randn([]int{5, 4})}, &buf, ExportOptions{
		InputNames:  []string{"features"},
		OutputNames: []string{"logits"},
		DynamicAxes: map[string]map[int]string{"features": {0: "N"}, "logits": {0: "N"}},
	})
	require.NoError(t, err)
	model, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, int64(DefaultExportOpset), model.Opsets[""])
	require.Len(t, model.Inputs, 1)
	assert.Equal(t, "features", model.Inputs[0].Name)
	assert.Equal(t, []Dim{{Value: -1, Param: "N"}, {Value: 4}}, model.Inputs[0].Shape)
	require.Len(t, model.Outputs, 1)
	assert.Equal(t, "logits", model.Outputs[0].Name)
	assert.Equal(t, []Dim{{Value: -1, Param: "N"}, {Value: 2}}, model.Outputs[0].Shape)
	for _, name := range []string{"0.weight", "0.bias", "2.weight", "2.bias"} {
		assert.Contains(t, model.InitializerNames(), name)
	}
	// Linear's x @ Weight.T() is Gemm(transB=1) over the named weight.
	assert.Equal(t, map[string]int{"Gemm": 2, "Add": 2, "Relu": 1}, model.OpCounts())
	assert.Len(t, model.InitializerNames(), 4, "only the parameters: nothing dead is written")
}

func TestExportFuncSeveralInputs(t *testing.T) {
	g := tensor.NewGenerator(2)
	w := autograd.Param(g.Randn([]int{3, 3}))
	fn := func(in []*autograd.Var) []*autograd.Var {
		h := in[0].MatMul(w).Add(in[1])
		return []*autograd.Var{autograd.Softmax(h, -1), h.Sum([]int{1}, false)}
	}
	a, b := g.Randn([]int{2, 3}), g.Randn([]int{2, 3})
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, []nn.NamedParam{{Name: "w", Param: w}}, nil, []*tensor.Tensor{a, b}, &buf, ExportOptions{
		InputNames: []string{"a", "b"}, OutputNames: []string{"probs", "total"},
	}))
	model, err := Read(&buf)
	require.NoError(t, err)
	s, err := model.NewSession(SessionOptions{})
	require.NoError(t, err)
	out, err := s.Run(t.Context(), map[string]*tensor.Tensor{"a": a, "b": b})
	require.NoError(t, err)
	want := fn([]*autograd.Var{autograd.New(a), autograd.New(b)})
	assertClose(t, want[0].Value(), out["probs"], 1e-6)
	assertClose(t, want[1].Value(), out["total"], 1e-6)
}

func TestExportErrors(t *testing.T) {
	g := tensor.NewGenerator(4)
	x := g.Randn([]int{2, 3})
	tril := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{in[0].Exp().Tril(0)} }
	err := ExportFunc(tril, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `op "Tril" (op 2 of the trace, output shape [2 3]) has no ONNX mapping`)

	drop := nn.NewDropout(0.5, g)
	train := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{drop.Forward(in[0])} }
	err = ExportFunc(train, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{})
	require.ErrorContains(t, err, `op "Dropout"`)

	bad := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{in[0].MatMul(in[0])} }
	require.ErrorContains(t, ExportFunc(bad, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{}), "the forward pass panicked")
	m := nn.NewLinear(g, 3, 2, true)
	require.ErrorContains(t, Export(m, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{Opset: 12}), "opset 12 unsupported")
	require.ErrorContains(t, Export(m, []*tensor.Tensor{x, x}, &bytes.Buffer{}, ExportOptions{}), "takes one input")
	require.ErrorContains(t, Export(m, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{InputNames: []string{"bias"}}), `input name "bias"`)
}

func TestExportWarnsAboutStaticReshape(t *testing.T) {
	g := tensor.NewGenerator(5)
	fn := func(in []*autograd.Var) []*autograd.Var {
		s := in[0].Shape()
		return []*autograd.Var{in[0].Reshape(s[0]*s[1], s[2])}
	}
	var warnings []string
	err := ExportFunc(fn, nil, nil, []*tensor.Tensor{g.Randn([]int{2, 3, 4})}, &bytes.Buffer{}, ExportOptions{
		DynamicAxes: map[string]map[int]string{"input_0": {0: "batch"}},
		Warn:        func(s string) { warnings = append(warnings, s) },
	})
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "op 1 (reshape of [2 3 4] to [6 4]) writes the traced shape as a constant")
}

// TestExportZooLarge round-trips the zoo models too big for the quick
// tables: ResNet-34/50 and VGG-11/16. VGG runs at 224×224 because its
// adaptive pooling to 7×7 maps to ONNX only when the feature map divides
// evenly. Skipped with -short.
func TestExportZooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large zoo models are skipped with -short")
	}
	cases := []exportCase{
		{"ResNet34", func(g *tensor.Generator) nn.Module {
			return models.ResNet34(g, models.ResNetConfig{NumClasses: 10})
		}, randInput(3, 32, 32)},
		{"ResNet50", func(g *tensor.Generator) nn.Module {
			return models.ResNet50(g, models.ResNetConfig{NumClasses: 10})
		}, randInput(3, 32, 32)},
		{"VGG11", func(g *tensor.Generator) nn.Module {
			return models.VGG11(g, models.VGGConfig{NumClasses: 10})
		}, randInput(3, 224, 224)},
		{"VGG16BN", func(g *tensor.Generator) nn.Module {
			return models.VGG16(g, models.VGGConfig{NumClasses: 10, BatchNorm: true})
		}, randInput(3, 224, 224)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tensor.NewGenerator(5)
			m := tc.build(g)
			b := exportModule(t, m, tc.input(g, 7), 0)
			m.Train(false)
			for _, n := range []int{1, 7} {
				x := tc.input(g, n)
				want := m.Forward(autograd.New(x)).Value()
				assertClose(t, want, runExported(t, b, x), 1e-5)
			}
		})
	}
}
