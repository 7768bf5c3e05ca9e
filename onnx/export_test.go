package onnx

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// exportCase is one module exported with a dynamic batch axis.
type exportCase struct {
	name  string
	build func(g *tensor.Generator) nn.Module
	// input makes an example input of batch size n.
	input func(g *tensor.Generator, n int) *tensor.Tensor
}

func randInput(shape ...int) func(g *tensor.Generator, n int) *tensor.Tensor {
	return func(g *tensor.Generator, n int) *tensor.Tensor {
		return g.Randn(append([]int{n}, shape...))
	}
}

// quickstartCNN is the network of examples/quickstart.
func quickstartCNN(g *tensor.Generator) nn.Module {
	same := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	return nn.NewSequential(
		nn.NewConv2d(g, 1, 16, [2]int{3, 3}, same, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewConv2d(g, 16, 32, [2]int{3, 3}, same, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewFlatten(1, -1),
		nn.NewLinear(g, 32*2*2, 64, true),
		nn.NewReLU(),
		nn.NewLinear(g, 64, 10, true),
	)
}

// trainedBatchNorm returns a batch norm whose running statistics moved away
// from zero mean and unit variance.
func trainedBatchNorm(g *tensor.Generator, c int) nn.Module {
	bn := nn.NewBatchNorm2d(c, nn.BatchNormOptions{})
	for range 3 {
		bn.Forward(autograd.New(g.Normal([]int{5, c, 4, 4}, 1.5, 2)))
	}
	return bn
}

func fixed(m nn.Module) func(g *tensor.Generator) nn.Module {
	return func(*tensor.Generator) nn.Module { return m }
}

func exportCases() []exportCase {
	act := randInput(3, 5)
	return []exportCase{
		{"Linear", func(g *tensor.Generator) nn.Module { return nn.NewLinear(g, 4, 3, true) }, randInput(4)},
		{"LinearNoBias3d", func(g *tensor.Generator) nn.Module { return nn.NewLinear(g, 4, 3, false) }, randInput(2, 4)},
		{"Conv1d", func(g *tensor.Generator) nn.Module {
			return nn.NewConv1d(g, 3, 4, 3, tensor.Conv1dOptions{Stride: 2, Padding: 1}, true)
		}, randInput(3, 11)},
		{"Conv2dGroupsDilation", func(g *tensor.Generator) nn.Module {
			return nn.NewConv2d(g, 4, 6, [2]int{3, 3}, tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 2}, Dilation: [2]int{1, 2}, Groups: 2}, true)
		}, randInput(4, 9, 8)},
		{"ConvTranspose2d", func(g *tensor.Generator) nn.Module {
			return nn.NewConvTranspose2d(g, 3, 2, [2]int{3, 3}, tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}}, true)
		}, randInput(3, 4, 5)},
		{"MaxPool2d", fixed(nn.NewMaxPool2d(tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})), randInput(2, 7, 6)},
		{"AvgPool2d", fixed(nn.NewAvgPool2d(tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Padding: [2]int{1, 1}, CountIncludePad: true})), randInput(2, 6, 6)},
		{"AvgPool2dExcludePad", fixed(nn.NewAvgPool2d(tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})), randInput(2, 7, 7)},
		{"AdaptiveAvgPool2dGlobal", fixed(nn.NewAdaptiveAvgPool2d(1, 1)), randInput(3, 5, 4)},
		{"AdaptiveAvgPool2d", fixed(nn.NewAdaptiveAvgPool2d(2, 3)), randInput(3, 4, 6)},
		{"BatchNorm2d", func(g *tensor.Generator) nn.Module { return trainedBatchNorm(g, 3) }, randInput(3, 4, 4)},
		{"LayerNorm", func(*tensor.Generator) nn.Module { return nn.NewLayerNorm([]int{5}, 1e-5, true) }, randInput(3, 5)},
		{"LayerNorm2Axes", func(*tensor.Generator) nn.Module { return nn.NewLayerNorm([]int{3, 5}, 1e-5, false) }, randInput(3, 5)},
		{"GroupNorm", func(*tensor.Generator) nn.Module { return nn.NewGroupNorm(2, 4, 1e-5, true) }, randInput(4, 3, 3)},
		{"ReLU", fixed(nn.NewReLU()), act},
		{"Tanh", fixed(nn.NewTanh()), act},
		{"Sigmoid", fixed(nn.NewSigmoid()), act},
		{"GELU", fixed(nn.NewGELU("none")), act},
		{"GELUTanh", fixed(nn.NewGELU("tanh")), act},
		{"SiLU", fixed(nn.NewSiLU()), act},
		{"Mish", fixed(nn.NewMish()), act},
		{"LeakyReLU", fixed(nn.NewLeakyReLU(0.1)), act},
		{"PReLU", func(*tensor.Generator) nn.Module { return nn.NewPReLU(3, 0.2) }, act},
		{"ELU", fixed(nn.NewELU(0.7)), act},
		{"SELU", fixed(nn.NewSELU()), act},
		{"CELU", fixed(nn.NewCELU(1.3)), act},
		{"HardSigmoid", fixed(nn.NewHardSigmoid()), randInput(3, 5)},
		{"HardSwish", fixed(nn.NewHardSwish()), act},
		{"HardTanh", fixed(nn.NewHardTanh(-0.5, 0.8)), act},
		{"ReLU6", fixed(nn.NewReLU6()), act},
		{"Softplus", fixed(nn.NewSoftplus(2, 20)), act},
		{"Softsign", fixed(nn.NewSoftsign()), act},
		{"Threshold", fixed(nn.NewThreshold(0.1, -2)), act},
		{"LogSigmoid", fixed(nn.NewLogSigmoid()), act},
		{"Softshrink", fixed(nn.NewSoftshrink(0.5)), act},
		{"Hardshrink", fixed(nn.NewHardshrink(0.5)), act},
		{"Tanhshrink", fixed(nn.NewTanhshrink()), act},
		{"GLU", fixed(nn.NewGLU(-1)), randInput(3, 6)},
		{"Softmax", fixed(nn.NewSoftmax(1)), act},
		{"LogSoftmax", fixed(nn.NewLogSoftmax(-1)), act},
		{"Softmin", fixed(nn.NewSoftmin(-1)), act},
		{"DropoutEval", func(g *tensor.Generator) nn.Module {
			return nn.NewSequential(nn.NewLinear(g, 5, 5, true), nn.NewDropout(0.5, g))
		}, randInput(5)},
		{"Embedding", func(g *tensor.Generator) nn.Module { return nn.NewEmbedding(g, 10, 4, nn.EmbeddingOptions{}) },
			func(g *tensor.Generator, n int) *tensor.Tensor { return g.RandInt([]int{n, 6}, 0, 10) }},
		{"Flatten", fixed(nn.NewFlatten(1, -1)), randInput(2, 3, 4)},
		{"FlattenMiddle", fixed(nn.NewFlatten(1, 2)), randInput(2, 3, 4)},
		{"ZeroPad2d", fixed(nn.NewZeroPad2d(1, 2, 0, 1)), randInput(2, 3, 3)},
		{"ReflectionPad2d", fixed(nn.NewReflectionPad2d(1, 1, 2, 0)), randInput(2, 3, 3)},
		{"SequentialMLP", func(g *tensor.Generator) nn.Module {
			return nn.NewSequential(nn.NewLinear(g, 6, 8, true), nn.NewTanh(), nn.NewLinear(g, 8, 8, true), nn.NewGELU("none"), nn.NewLinear(g, 8, 3, true), nn.NewLogSoftmax(1))
		}, randInput(6)},
		{"QuickstartCNN", quickstartCNN, randInput(1, 8, 8)},
		{"ConvBlock", func(g *tensor.Generator) nn.Module {
			return nn.NewSequential(
				nn.NewConv2d(g, 3, 8, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, false),
				trainedBatchNorm(g, 8), nn.NewReLU6(),
				nn.NewConv2d(g, 8, 8, [2]int{3, 3}, tensor.Conv2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Groups: 8}, true),
				nn.NewGroupNorm(4, 8, 1e-5, true), nn.NewHardSwish(),
				nn.NewAdaptiveAvgPool2d(1, 1), nn.NewFlatten(1, -1), nn.NewDropout(0.2, g), nn.NewLinear(g, 8, 4, true))
		}, randInput(3, 8, 8)},
	}
}

// exportModule exports m with a dynamic batch axis on its input and output.
func exportModule(t *testing.T, m nn.Module, example *tensor.Tensor, opset int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var warnings []string
	err := Export(m, []*tensor.Tensor{example}, &buf, ExportOptions{
		Opset:       opset,
		DynamicAxes: map[string]map[int]string{"input_0": {0: "batch"}, "output_0": {0: "batch"}},
		Warn:        func(s string) { warnings = append(warnings, s) },
	})
	require.NoError(t, err)
	for _, w := range warnings {
		t.Log(w)
	}
	return buf.Bytes()
}

// runExported runs exported model bytes on x.
func runExported(t *testing.T, b []byte, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	model, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	s, err := model.NewSession(SessionOptions{})
	require.NoError(t, err)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"input_0": x})
	require.NoError(t, err)
	require.Contains(t, out, "output_0")
	return out["output_0"]
}

func assertClose(t *testing.T, want, got *tensor.Tensor, tol float64) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape())
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		require.InDelta(t, w[i], g[i], tol*(1+abs(w[i])), "element %d", i)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestExportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, opset := range []int{13, 17, 21} {
		for _, tc := range exportCases() {
			t.Run(tc.name+"/opset"+strconv.Itoa(opset), func(t *testing.T) {
				g := tensor.NewGenerator(7)
				m := tc.build(g)
				was := m.IsTraining()
				b := exportModule(t, m, tc.input(g, 7), opset)
				require.Equal(t, was, m.IsTraining(), "Export restores the module's mode")
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

// checkWithONNX runs onnx.checker.check_model(full_check=True) from Debian's
// python3-onnx on the exported files when it is installed.
func checkWithONNX(t *testing.T, files []string) {
	t.Helper()
	if _, err := exec.Command("/usr/bin/python3", "-P", "-c", "import onnx.checker").CombinedOutput(); err != nil {
		t.Log("python3-onnx not installed: onnx.checker skipped")
		return
	}
	out, err := exec.Command("/usr/bin/python3", append([]string{"../internal/golden/gen/check_onnx_export.py"}, files...)...).CombinedOutput()
	require.NoError(t, err, "onnx.checker: %s", out)
	t.Logf("onnx.checker (full_check) accepted %d files", strings.Count(string(out), ": ok"))
}
