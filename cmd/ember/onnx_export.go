package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// exportModel is one model "ember onnx export" knows: build makes it for an
// input shape; intInput says the input holds token ids below vocab.
type exportModel struct {
	about    string
	build    func(g *tensor.Generator, shape []int) (nn.Module, error)
	intInput int64 // vocabulary size for id inputs, 0 for float inputs
}

// quickstartCNN is the network of examples/quickstart (8×8 grey images).
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

func wantRank(name string, shape []int, rank int) error {
	if len(shape) != rank {
		return fmt.Errorf("model %s needs an input shape of %d dimensions, got %v", name, rank, shape)
	}
	return nil
}

func imageModel(name string, f func(g *tensor.Generator) nn.Module) func(*tensor.Generator, []int) (nn.Module, error) {
	return func(g *tensor.Generator, shape []int) (nn.Module, error) {
		if err := wantRank(name, shape, 4); err != nil {
			return nil, err
		}
		if shape[1] != 3 {
			return nil, fmt.Errorf("model %s takes 3-channel images, got input shape %v", name, shape)
		}
		return f(g), nil
	}
}

var exportModels = map[string]exportModel{
	"quickstart-cnn": {about: "the examples/quickstart CNN, input N,1,8,8", build: func(g *tensor.Generator, s []int) (nn.Module, error) {
		if len(s) != 4 || s[1] != 1 || s[2] != 8 || s[3] != 8 {
			return nil, fmt.Errorf("model quickstart-cnn takes input shape N,1,8,8, got %v", s)
		}
		return quickstartCNN(g), nil
	}},
	"mlp": {about: "MLP in→128→64→10 (in = last input axis)", build: func(g *tensor.Generator, s []int) (nn.Module, error) {
		if len(s) < 1 || s[len(s)-1] < 1 {
			return nil, fmt.Errorf("model mlp needs an input shape ending in the feature count, got %v", s)
		}
		return models.NewMLP(g, models.MLPConfig{InFeatures: s[len(s)-1], Hidden: []int{128, 64, 10}}), nil
	}},
	"lenet5": {about: "LeNet-5, input N,C,32,32", build: func(g *tensor.Generator, s []int) (nn.Module, error) {
		if err := wantRank("lenet5", s, 4); err != nil {
			return nil, err
		}
		return models.NewLeNet5(g, models.LeNet5Config{InChannels: s[1]}), nil
	}},
	"resnet18": {about: "ResNet-18 (1000 classes), input N,3,H,W", build: imageModel("resnet18", func(g *tensor.Generator) nn.Module {
		return models.ResNet18(g, models.ResNetConfig{})
	})},
	"resnet34": {about: "ResNet-34 (1000 classes), input N,3,H,W", build: imageModel("resnet34", func(g *tensor.Generator) nn.Module {
		return models.ResNet34(g, models.ResNetConfig{})
	})},
	"resnet50": {about: "ResNet-50 (1000 classes), input N,3,H,W", build: imageModel("resnet50", func(g *tensor.Generator) nn.Module {
		return models.ResNet50(g, models.ResNetConfig{})
	})},
	"mobilenetv2": {about: "MobileNetV2 (1000 classes), input N,3,H,W", build: imageModel("mobilenetv2", func(g *tensor.Generator) nn.Module {
		return models.NewMobileNetV2(g, models.MobileNetV2Config{})
	})},
	"vgg11": {about: "VGG-11 (1000 classes), input N,3,H,W with H and W multiples of 224", build: imageModel("vgg11", func(g *tensor.Generator) nn.Module {
		return models.VGG11(g, models.VGGConfig{})
	})},
	"vgg16": {about: "VGG-16 (1000 classes), input N,3,H,W with H and W multiples of 224", build: imageModel("vgg16", func(g *tensor.Generator) nn.Module {
		return models.VGG16(g, models.VGGConfig{})
	})},
	"gpt": {about: "GPT decoder (vocab 256, 4 layers, 4 heads, width 128), input N,T token ids (T <= 256)", intInput: 256, build: func(g *tensor.Generator, s []int) (nn.Module, error) {
		if err := wantRank("gpt", s, 2); err != nil {
			return nil, err
		}
		if s[1] > 256 {
			return nil, fmt.Errorf("model gpt takes at most 256 tokens, got input shape %v", s)
		}
		return models.NewGPT(g, models.GPTConfig{VocabSize: 256, BlockSize: 256, NumLayers: 4, NumHeads: 4, EmbedDim: 128}), nil
	}},
}

// parseShape parses "1,3,224,224".
func parseShape(s string) ([]int, error) {
	var shape []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad input shape %q: want positive sizes separated by commas", s)
		}
		shape = append(shape, n)
	}
	return shape, nil
}

// onnxExport implements "ember onnx export -model NAME [-weights FILE]
// -input-shape 1,3,224,224 -o FILE.onnx".
func onnxExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ember onnx export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model to export (see the list below)")
	weights := fs.String("weights", "", "safetensors state dict to load (default: seeded random initialization)")
	shapeFlag := fs.String("input-shape", "", "example input shape, e.g. 1,3,224,224")
	out := fs.String("o", "", "ONNX file to write")
	opset := fs.Int("opset", onnx.DefaultExportOpset, "ONNX opset (13 to 21)")
	dynBatch := fs.Bool("dynamic-batch", true, "mark axis 0 of the input and output as the symbolic \"batch\"")
	seed := fs.Uint64("seed", 0, "seed of the random initialization when -weights is not given")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ember onnx export -model NAME [-weights FILE.safetensors] -input-shape 1,3,224,224 -o FILE.onnx")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "models:")
		names := make([]string, 0, len(exportModels))
		for n := range exportModels {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(stderr, "  %-15s %s\n", n, exportModels[n].about)
		}
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	spec, ok := exportModels[*model]
	if !ok || *shapeFlag == "" || *out == "" || fs.NArg() != 0 {
		if *model != "" && !ok {
			fmt.Fprintf(stderr, "ember onnx export: unknown model %q\n", *model)
		}
		fs.Usage()
		return 2
	}
	shape, err := parseShape(*shapeFlag)
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx export:", err)
		return 2
	}
	if err := exportZooModel(spec, shape, *weights, *out, *opset, *dynBatch, *seed, stderr); err != nil {
		fmt.Fprintln(stderr, "ember onnx export:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (%s, input %v, opset %d)\n", *out, *model, shape, *opset)
	return 0
}

func exportZooModel(spec exportModel, shape []int, weights, out string, opset int, dynBatch bool, seed uint64, stderr io.Writer) (err error) {
	g := tensor.NewGenerator(seed)
	m, err := spec.build(g, shape)
	if err != nil {
		return err
	}
	if weights != "" {
		if err := nn.LoadSafetensors(weights, m); err != nil {
			return err
		}
	}
	var x *tensor.Tensor
	if spec.intInput > 0 {
		x = g.RandInt(shape, 0, spec.intInput)
	} else {
		x = g.Randn(shape)
	}
	opts := onnx.ExportOptions{Opset: opset, Warn: func(s string) { fmt.Fprintln(stderr, "warning:", s) }}
	if dynBatch {
		opts.DynamicAxes = map[string]map[int]string{"input_0": {0: "batch"}, "output_0": {0: "batch"}}
	}
	var buf bytes.Buffer
	if err := onnx.Export(m, []*tensor.Tensor{x}, &buf, opts); err != nil {
		return err
	}
	return atomicfile.WriteFile(out, buf.Bytes(), 0o644)
}
