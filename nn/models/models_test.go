package models_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
)

// zooModel is one configuration built both here and by
// internal/golden/gen/gen_models.py under the same name.
type zooModel struct {
	build func(g *tensor.Generator) nn.Module
	// input is the shape of a small forward-shape test input; ids is its
	// exclusive upper bound for integer token inputs (0 for float images).
	input []int
	ids   int64
	// want is the expected output shape for input.
	want []int
	// heavy models (tens to hundreds of MB of weights) are skipped with
	// -short.
	heavy bool
	// backward models are checked by TestBackward (backwardShort ones also
	// with -short).
	backward, backwardShort bool
	// forward, when set, replaces m.Forward(input) in TestTorchGolden; it
	// gets every tensor of the io file.
	forward func(m nn.Module, io map[string]*tensor.Tensor) *autograd.Var
	// golden models are compared with torch's outputs by TestTorchGolden
	// (goldenShort ones also with -short).
	golden, goldenShort bool
}

var (
	gruConfig = models.GRUClassifierConfig{VocabSize: 50, EmbedDim: 8, HiddenSize: 12, NumLayers: 2, NumClasses: 3, Bidirectional: true}
	gptConfig = models.GPTConfig{VocabSize: 64, BlockSize: 16, NumLayers: 2, NumHeads: 2, EmbedDim: 16}
)

var zoo = map[string]zooModel{
	"gru_classifier": {
		build: func(g *tensor.Generator) nn.Module { return models.NewGRUClassifier(g, gruConfig) },
		input: []int{2, 7}, ids: 50, backward: true, backwardShort: true, want: []int{2, 3}, golden: true, goldenShort: true,
	},
	"gru_classifier_lengths": {
		build: func(g *tensor.Generator) nn.Module { return models.NewGRUClassifier(g, gruConfig) },
		forward: func(m nn.Module, io map[string]*tensor.Tensor) *autograd.Var {
			var lengths []int
			for _, l := range io["lengths"].Int64s() {
				lengths = append(lengths, int(l))
			}
			return m.(*models.GRUClassifier).ForwardLengths(autograd.New(io["input"]), lengths)
		},
		input: []int{2, 7}, ids: 50, want: []int{2, 3}, golden: true, goldenShort: true,
	},
	"gpt": {
		build: func(g *tensor.Generator) nn.Module { return models.NewGPT(g, gptConfig) },
		input: []int{2, 10}, ids: 64, backward: true, backwardShort: true, want: []int{2, 10, 64}, golden: true, goldenShort: true,
	},
	"gpt_tied": {
		build: func(g *tensor.Generator) nn.Module {
			cfg := gptConfig
			cfg.TiedHead = true
			return models.NewGPT(g, cfg)
		},
		input: []int{2, 10}, ids: 64, backward: true, backwardShort: true, want: []int{2, 10, 64}, golden: true, goldenShort: true,
	},
	"mlp": {
		build: func(g *tensor.Generator) nn.Module {
			return models.NewMLP(g, models.MLPConfig{InFeatures: 8, Hidden: []int{16, 16, 4}})
		},
		input: []int{3, 8}, backward: true, backwardShort: true, want: []int{3, 4}, golden: true, goldenShort: true,
	},
	"lenet5": {
		build: func(g *tensor.Generator) nn.Module { return models.NewLeNet5(g, models.LeNet5Config{}) },
		input: []int{2, 1, 32, 32}, backward: true, backwardShort: true, want: []int{2, 10}, golden: true, goldenShort: true,
	},
	"mobilenet_v2": {
		build: func(g *tensor.Generator) nn.Module { return models.NewMobileNetV2(g, models.MobileNetV2Config{}) },
		input: []int{1, 3, 32, 32}, backward: true, want: []int{1, 1000}, golden: true,
	},
	"mobilenet_v2_w05": {
		build: func(g *tensor.Generator) nn.Module {
			return models.NewMobileNetV2(g, models.MobileNetV2Config{WidthMult: 0.5, NumClasses: 10})
		},
		input: []int{1, 3, 48, 48}, want: []int{1, 10}, golden: true, goldenShort: true,
	},
	"vgg11": {
		build: func(g *tensor.Generator) nn.Module { return models.VGG11(g, models.VGGConfig{}) },
		input: []int{1, 3, 32, 32}, want: []int{1, 1000}, heavy: true,
	},
	"vgg16_bn": {
		build: func(g *tensor.Generator) nn.Module { return models.VGG16(g, models.VGGConfig{BatchNorm: true}) },
		input: []int{1, 3, 32, 32}, want: []int{1, 1000}, heavy: true,
	},
	"resnet18": {
		build: func(g *tensor.Generator) nn.Module { return models.ResNet18(g, models.ResNetConfig{}) },
		input: []int{1, 3, 64, 64}, backward: true, want: []int{1, 1000}, golden: true, goldenShort: true,
	},
	"resnet34": {
		build: func(g *tensor.Generator) nn.Module { return models.ResNet34(g, models.ResNetConfig{}) },
		input: []int{1, 3, 32, 32}, want: []int{1, 1000}, heavy: true,
	},
	"resnet50": {
		build: func(g *tensor.Generator) nn.Module { return models.ResNet50(g, models.ResNetConfig{}) },
		input: []int{1, 3, 64, 64}, want: []int{1, 1000}, heavy: true, golden: true,
	},
}

type keyEntry struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
}

func loadKeys(t *testing.T) map[string][]keyEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "keys_models.json"))
	require.NoError(t, err)
	var f struct {
		Models map[string][]keyEntry `json:"models"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	return f.Models
}

// TestZoo builds every model once, checks that its state dict has exactly
// torch's keys, in torch's order, with torch's shapes and dtypes (key lists
// from gen_models.py), and runs it on a tiny input in evaluation mode.
// VGG's other two variants (vgg11_bn, vgg16) differ from the tested ones
// only in the orthogonal layout and batch-norm choices.
func TestZoo(t *testing.T) {
	keys := loadKeys(t)
	for name, z := range zoo {
		t.Run(name, func(t *testing.T) {
			if z.heavy && testing.Short() {
				t.Skip("heavy model skipped with -short")
			}
			want, ok := keys[name]
			require.True(t, ok, "no torch key list for %s; regenerate with gen_models.py", name)
			g := tensor.NewGenerator(1)
			m := z.build(g)
			sd := nn.StateDict(m)
			got := nn.StateDictKeys(m)
			require.Len(t, got, len(want))
			for i, w := range want {
				require.Equal(t, w.Name, got[i], "key %d", i)
				assert.True(t, slices.Equal(w.Shape, sd[w.Name].Shape()), "%s: shape %v, want %v", w.Name, sd[w.Name].Shape(), w.Shape)
				assert.Equal(t, w.DType, sd[w.Name].DType().String(), w.Name)
			}

			var x *tensor.Tensor
			if z.ids > 0 {
				x = g.RandInt(z.input, 0, z.ids)
			} else {
				x = g.Randn(z.input)
			}
			m.Train(false)
			y := m.Forward(autograd.New(x)).Value()
			assert.Equal(t, z.want, y.Shape())
			for _, v := range y.Float64s() {
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "non-finite output")
			}
		})
	}
}

// TestBackward runs a training-mode forward and backward pass (batch 2, so
// batch norms see several values per channel) and checks that every
// parameter receives a finite gradient of its shape, then an
// evaluation-mode pass and checks that no gradient is entirely zero. (In
// training mode a batch norm cancels any per-channel constant added to its
// input, so a bias whose only paths lead into batch norms, as MobileNetV2's
// late block biases at tiny resolutions, rightly gets a zero gradient.)
func TestBackward(t *testing.T) {
	for name, z := range zoo {
		if !z.backward {
			continue
		}
		if !z.backwardShort && testing.Short() {
			t.Logf("%s: skipped with -short", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			g := tensor.NewGenerator(4)
			m := z.build(g)
			for _, train := range []bool{true, false} {
				shape := slices.Clone(z.input)
				if train {
					shape[0] = 2
				}
				if len(shape) == 4 {
					// The smallest images every stage of the CNNs accepts.
					shape[2], shape[3] = 32, 32
				}
				var x *tensor.Tensor
				if z.ids > 0 {
					x = g.RandInt(shape, 0, z.ids)
				} else {
					x = g.Randn(shape)
				}
				m.Train(train)
				m.ZeroGrad()
				y := m.Forward(autograd.New(x))
				w := autograd.New(g.Randn(y.Shape()))
				require.NoError(t, y.Mul(w).Sum(nil, false).Backward())
				for _, p := range m.NamedParameters() {
					gr := p.Param.Grad()
					require.NotNil(t, gr, "%s has no gradient", p.Name)
					require.Equal(t, p.Param.Shape(), gr.Shape(), p.Name)
					nonzero, finite := false, true
					for _, v := range gr.Float64s() {
						finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
						nonzero = nonzero || v != 0
					}
					require.True(t, finite, "%s: non-finite gradient", p.Name)
					if !train {
						assert.True(t, nonzero, "%s: gradient is all zero", p.Name)
					}
				}
			}
		})
	}
}

// TestTorchGolden loads state dicts written by torch/torchvision
// (gen_models.py --weights, run into a temporary directory so the weights
// stay out of git) and compares the eval-mode outputs with torch's. It is
// skipped without /usr/bin/python3 with torch and torchvision.
func TestTorchGolden(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision").Run(); err != nil {
		t.Skipf("needs %s with torch and torchvision: %v", python, err)
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(zoo)) {
		if z := zoo[name]; z.goldenShort || (z.golden && !testing.Short()) {
			names = append(names, name)
		}
	}
	dir := t.TempDir()
	args := append([]string{filepath.Join("..", "..", "internal", "golden", "gen", "gen_models.py"), "--weights", dir}, names...)
	out, err := exec.Command(python, args...).CombinedOutput()
	require.NoError(t, err, "gen_models.py: %s", out)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m := zoo[name].build(tensor.NewGenerator(3))
			m.Train(false)
			require.NoError(t, nn.LoadSafetensors(filepath.Join(dir, name+".safetensors"), m))
			tensors, _, err := nn.LoadTensors(filepath.Join(dir, name+"_io.safetensors"))
			require.NoError(t, err)
			var yv *autograd.Var
			if f := zoo[name].forward; f != nil {
				yv = f(m, tensors)
			} else {
				yv = m.Forward(autograd.New(tensors["input"]))
			}
			y := yv.Value()
			want := tensors["output"]
			tol := 1e-4
			if name == "resnet50" {
				// 50 layers of float32 rounding: torch's own float32 logits
				// are 4e-4 from its float64 ones here.
				tol = 1e-3
			}
			golden.AllClose(t, name, golden.Tensor{Shape: want.Shape(), DType: golden.Float32, Data: want.Float64s()},
				y.Shape(), y.Float64s(), tol, tol)
			// Against the float64 truth Ember's float32 error must be of
			// the order of torch's own.
			exact := tensors["output64"].Float64s()
			emberErr, torchErr := maxAbsDiff(y.Float64s(), exact), maxAbsDiff(want.Float64s(), exact)
			assert.LessOrEqual(t, emberErr, 2*torchErr+1e-5, "float32 error vs float64 torch: ember %g, torch %g", emberErr, torchErr)
		})
	}
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestConfigPanics checks that impossible configurations and inputs panic
// with a message naming the constructor or method.
func TestConfigPanics(t *testing.T) {
	g := tensor.NewGenerator(5)
	tests := []struct {
		name, msg string
		f         func()
	}{
		{"vgg-last-channels", "models.NewVGG", func() { models.NewVGG(g, []int{64, -1, 256, -1}, models.VGGConfig{}) }},
		{"vgg-bad-entry", "models.NewVGG", func() { models.NewVGG(g, []int{64, 0, 512}, models.VGGConfig{}) }},
		{"resnet-empty-stage", "models.NewResNet", func() { models.NewResNet(g, false, [4]int{2, 0, 2, 2}, models.ResNetConfig{}) }},
		{"mlp-no-layers", "models.NewMLP", func() { models.NewMLP(g, models.MLPConfig{InFeatures: 4}) }},
		{"gpt-heads", "models.NewGPT", func() {
			models.NewGPT(g, models.GPTConfig{VocabSize: 8, BlockSize: 4, NumLayers: 1, NumHeads: 3, EmbedDim: 8})
		}},
		{"gpt-too-long", "models.GPT.Forward", func() {
			m := models.NewGPT(g, models.GPTConfig{VocabSize: 8, BlockSize: 4, NumLayers: 1, NumHeads: 2, EmbedDim: 8})
			m.Forward(autograd.New(tensor.Zeros([]int{1, 5}, tensor.Int64)))
		}},
		{"gru-sizes", "models.NewGRUClassifier", func() { models.NewGRUClassifier(g, models.GRUClassifierConfig{VocabSize: 8}) }},
		{"gru-rank", "models.GRUClassifier.Forward", func() {
			m := models.NewGRUClassifier(g, models.GRUClassifierConfig{VocabSize: 8, EmbedDim: 4, HiddenSize: 4, NumClasses: 2})
			m.Forward(autograd.New(tensor.Zeros([]int{5}, tensor.Int64)))
		}},
		{"mobilenet-width", "models.NewMobileNetV2", func() { models.NewMobileNetV2(g, models.MobileNetV2Config{WidthMult: -1}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.f()
		})
	}
}
