package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// moreCases are the layers mapped by export_more.go.
func moreCases() []exportCase {
	return []exportCase{
		{"Conv3d", func(g *tensor.Generator) nn.Module {
			return nn.NewConv3d(g, 2, 3, [3]int{3, 2, 3}, tensor.Conv3dOptions{Stride: [3]int{1, 2, 1}, Padding: [3]int{1, 0, 1}}, true)
		}, randInput(2, 5, 6, 5)},
		{"ConvTranspose3d", func(g *tensor.Generator) nn.Module {
			return nn.NewConvTranspose3d(g, 2, 3, [3]int{2, 3, 2}, tensor.ConvTranspose3dOptions{Stride: [3]int{2, 1, 2}, Padding: [3]int{0, 1, 0}}, true)
		}, randInput(2, 3, 4, 3)},
		{"MaxPool3d", fixed(nn.NewMaxPool3d(tensor.Pool3dOptions{Kernel: [3]int{2, 3, 2}, Stride: [3]int{2, 1, 2}, Padding: [3]int{1, 1, 0}})), randInput(2, 5, 5, 4)},
		{"AvgPool3d", fixed(nn.NewAvgPool3d(tensor.Pool3dOptions{Kernel: [3]int{2, 2, 2}})), randInput(2, 4, 4, 6)},
		{"BatchNorm3d", fixed(nn.NewBatchNorm3d(2, nn.BatchNormOptions{})), randInput(2, 3, 3, 3)},
		{"ConvTranspose1d", func(g *tensor.Generator) nn.Module {
			return nn.NewConvTranspose1d(g, 3, 2, 3, nn.ConvTranspose1dOptions{Stride: 2, Padding: 1}, true)
		}, randInput(3, 6)},
		{"MaxPool1d", fixed(nn.NewMaxPool1d(nn.Pool1dOptions{Kernel: 3, Stride: 2})), randInput(3, 9)},
		{"AvgPool1d", fixed(nn.NewAvgPool1d(nn.Pool1dOptions{Kernel: 2})), randInput(3, 8)},
		{"AdaptiveAvgPool1d", fixed(nn.NewAdaptiveAvgPool1d(4)), randInput(3, 8)},
		{"AdaptiveMaxPool1d", fixed(nn.NewAdaptiveMaxPool1d(4)), randInput(3, 8)},
		{"AdaptiveMaxPool2d", fixed(nn.NewAdaptiveMaxPool2d(2, 3)), randInput(3, 4, 6)},
		{"AdaptiveMaxPool2dGlobal", fixed(nn.NewAdaptiveMaxPool2d(1, 1)), randInput(3, 4, 6)},
		{"LPPool1d", fixed(nn.NewLPPool1d(2, 3, 2, false)), randInput(3, 9)},
		{"LPPool2d", fixed(nn.NewLPPool2d(3, [2]int{2, 2}, [2]int{2, 2}, false)), randInput(3, 6, 6)},
		{"InstanceNorm1d", fixed(nn.NewInstanceNorm1d(3, nn.InstanceNormOptions{})), randInput(3, 7)},
		{"InstanceNorm2dAffine", fixed(nn.NewInstanceNorm2d(3, nn.InstanceNormOptions{Affine: true})), randInput(3, 4, 5)},
		{"LocalResponseNorm", fixed(nn.NewLocalResponseNorm(3, 1e-3, 0.75, 2)), randInput(5, 4, 4)},
		{"RMSNorm", fixed(nn.NewRMSNorm([]int{5}, 1e-6, true)), randInput(3, 5)},
		{"RMSNormNoAffine", fixed(nn.NewRMSNorm([]int{3, 5}, 1e-6, false)), randInput(3, 5)},
		{"PixelShuffle", fixed(nn.NewPixelShuffle(2)), randInput(8, 3, 2)},
		{"PixelUnshuffle", fixed(nn.NewPixelUnshuffle(2)), randInput(2, 4, 6)},
		{"UpsampleNearest", fixed(nn.NewUpsample(nn.UpsampleOptions{ScaleFactor: [2]float64{2, 3}})), randInput(2, 3, 4)},
		{"UpsampleNearestSize", fixed(nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{5, 7}})), randInput(2, 3, 4)},
		{"UpsampleBilinear", fixed(nn.NewUpsample(nn.UpsampleOptions{ScaleFactor: [2]float64{2, 2}, Mode: "bilinear"})), randInput(2, 3, 4)},
		{"UpsampleBilinearAlign", fixed(nn.NewUpsample(nn.UpsampleOptions{Size: [2]int{5, 7}, Mode: "bilinear", AlignCorners: true})), randInput(2, 3, 4)},
		{"Unflatten", fixed(nn.NewUnflatten(1, 2, 3)), randInput(6, 4)},
		{"ConstantPad1d", fixed(nn.NewConstantPad1d(1.5, 2, 1)), randInput(3, 4)},
		{"ReplicationPad2d", fixed(nn.NewReplicationPad2d(1, 2, 2, 1)), randInput(2, 3, 4)},
		{"ReflectionPad3d", fixed(nn.NewReflectionPad3d(1, 1, 1, 0, 0, 1)), randInput(2, 3, 3, 3)},
		{"ConstantPad3d", fixed(nn.NewConstantPad3d(-1, 1, 0, 0, 1, 1, 0)), randInput(2, 2, 2, 2)},
		{"EmbeddingBagMean", func(g *tensor.Generator) nn.Module {
			return nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "mean"})
		},
			func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 5}, 0, 10) }},
		{"EmbeddingBagSum", func(g *tensor.Generator) nn.Module {
			return nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "sum"})
		},
			func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 5}, 0, 10) }},
		{"EmbeddingBagMax", func(g *tensor.Generator) nn.Module {
			return nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "max"})
		},
			func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 5}, 0, 10) }},
		{"EmbeddingBagPaddingMean", func(g *tensor.Generator) nn.Module {
			return nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "mean", HasPaddingIdx: true, PaddingIdx: 0})
		}, func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 5}, 0, 3) }},
		{"Dropout2dEval", func(g *tensor.Generator) nn.Module { return nn.NewDropout2d(0.5, g) }, randInput(3, 4, 4)},
		{"AlphaDropoutEval", func(g *tensor.Generator) nn.Module { return nn.NewAlphaDropout(0.5, g) }, randInput(3, 4)},
		{"RReLUEval", func(g *tensor.Generator) nn.Module { return nn.NewRReLU(0.1, 0.3, g) }, randInput(3, 4)},
	}
}

// TestExportMoreRoundTrip exports each layer of moreCases at opsets 13, 17
// and 21 with a dynamic batch axis and checks Ember's import of it at batch
// sizes 1 and 7; the opset-17 files go through onnx.checker when available.
func TestExportMoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, opset := range []int{13, 17, 21} {
		for _, tc := range moreCases() {
			t.Run(tc.name+"/opset"+strconv.Itoa(opset), func(t *testing.T) {
				g := tensor.NewGenerator(7)
				m := tc.build(g)
				b := exportModule(t, m, tc.input(g, 7), opset)
				if opset == DefaultExportOpset {
					path := filepath.Join(dir, tc.name+".onnx")
					require.NoError(t, os.WriteFile(path, b, 0o644))
					files = append(files, path)
				}
				m.Train(false)
				for _, n := range []int{1, 7} {
					x := tc.input(g, n)
					want := m.Forward(autograd.New(x)).Value()
					assertClose(t, want, runExported(t, b, x), 1e-5)
				}
			})
		}
	}
	checkWithONNX(t, files)
}

// TestExportFlipCumSumMaskedFill exports tensor ops without an nn layer:
// Flip (Slice with step -1), CumSum and MaskedFill with a mask that is a
// graph input-independent constant.
func TestExportFlipCumSumMaskedFill(t *testing.T) {
	mask := tensor.FromSlice([]bool{true, false, false, true, false}, 5)
	fn := func(in []*autograd.Var) []*autograd.Var {
		x := in[0]
		return []*autograd.Var{x.Flip(0, 2).CumSum(1).MaskedFill(mask, -3).Flip(-1)}
	}
	g := tensor.NewGenerator(5)
	x := g.Randn([]int{2, 3, 5})
	var buf bytes.Buffer
	var warned []string
	require.NoError(t, ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &buf, ExportOptions{Warn: func(s string) { warned = append(warned, s) }}))
	require.Len(t, warned, 1, "the constant mask is reported")
	want := fn([]*autograd.Var{autograd.New(x)})[0].Value()
	assertClose(t, want, runExported(t, buf.Bytes(), x), 1e-6)
	dir := t.TempDir()
	path := filepath.Join(dir, "flip.onnx")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	checkWithONNX(t, []string{path})
}

// TestExportFileExternalData exports with a tiny external-data threshold,
// checks the data file and its entries, and loads the model back with Load.
func TestExportFileExternalData(t *testing.T) {
	g := tensor.NewGenerator(9)
	m := nn.NewSequential(nn.NewLinear(g, 6, 8, true), nn.NewTanh(), nn.NewLinear(g, 8, 3, true))
	x := g.Randn([]int{7, 6})
	dir := t.TempDir()
	path := filepath.Join(dir, "mlp.onnx")
	opts := ExportOptions{ExternalDataThreshold: 16, DynamicAxes: map[string]map[int]string{"input_0": {0: "batch"}, "output_0": {0: "batch"}}}
	require.ErrorContains(t, Export(m, []*tensor.Tensor{x}, &bytes.Buffer{}, opts), "use ExportFile")
	require.NoError(t, ExportFile(path, m, []*tensor.Tensor{x}, opts))
	st, err := os.Stat(path + ".data")
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Size(), int64(4*(6*8+8+8*3+3)))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "mlp.onnx.data")
	_, err = Read(bytes.NewReader(b))
	if err == nil {
		model, _ := Read(bytes.NewReader(b))
		_, err = model.NewSession(SessionOptions{})
	}
	require.Error(t, err, "external data needs Load")
	model, err := Load(path)
	require.NoError(t, err)
	s, err := model.NewSession(SessionOptions{})
	require.NoError(t, err)
	m.Train(false)
	for _, n := range []int{1, 7} {
		x := g.Randn([]int{n, 6})
		out, err := s.Run(t.Context(), map[string]*tensor.Tensor{"input_0": x})
		require.NoError(t, err)
		assertClose(t, m.Forward(autograd.New(x)).Value(), out["output_0"], 1e-5)
	}
	checkWithONNX(t, []string{path})

	named := filepath.Join(dir, "named.onnx")
	opts.ExternalDataName = "weights.bin"
	require.NoError(t, ExportFile(named, m, []*tensor.Tensor{x}, opts))
	_, err = os.Stat(filepath.Join(dir, "weights.bin"))
	require.NoError(t, err)
	opts.ExternalDataName = "../x.bin"
	require.ErrorContains(t, ExportFile(named, m, []*tensor.Tensor{x}, opts), "without folders")
}
