package onnx

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// builtinOpNames lists every op name the exporter translates as a built-in
// op (its name tables and the cases of its switches), and the names of
// nn's composite ops: a custom op may carry any of them.
func builtinOpNames() []string {
	names := []string{
		"AdaptiveAvgPool2d", "AvgPool2d", "AvgPool3d", "BatchNorm", "CELU", "Clamp", "Concat",
		"Contiguous", "Conv2d", "Conv3d", "ConvTranspose2d", "ConvTranspose3d", "CumProd", "CumSum",
		"Dropout", "ELU", "Embedding", "EmbeddingBag", "Expand", "Expm1", "Flatten", "Flip", "GRU",
		"Gather", "GroupNorm", "HardSigmoid", "HardSwish", "HardTanh", "Hardshrink", "IndexSelect",
		"LSTM", "LayerNorm", "LeakyReLU", "Log1p", "LogSigmoid", "LogSoftmax", "LogSumExp",
		"MaskedFill", "Max", "MaxPool2d", "MaxPool3d", "MaxUnpool2d", "Min", "Narrow", "PReLU", "Pad",
		"Permute", "PowScalar", "Prod", "RNN", "Reshape", "Roll", "Rsqrt", "SELU", "Select", "Slice",
		"Softmax", "Softplus", "Softshrink", "Square", "Squeeze", "Sum", "Threshold", "To",
		"Transpose", "Unbind", "UnbindStack", "Unsqueeze", "View", "Where",
	}
	for k := range sameNameOps {
		names = append(names, k)
	}
	for k := range scalarOps {
		names = append(names, k)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// quadratic is a Function named name computing x²/2 − x/4 + 1/8, a function
// no built-in op computes.
func quadratic(name string) *autograd.Function {
	return autograd.NewFunction(name, func(in []*autograd.Var) *autograd.Var {
		x := in[0]
		return x.Mul(x).MulScalar(0.5).Sub(x.MulScalar(0.25)).AddScalar(0.125)
	}, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
		return []*autograd.Var{g.Mul(in[0].SubScalar(0.25))}
	})
}

// runExportedAll loads b with this package's runtime and runs it on x.
func runExportedOutputs(t *testing.T, b []byte, x *tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"input_0": x})
	require.NoError(t, err)
	return out
}

// runORT runs the model file in ONNX Runtime on the float32 input x and
// returns the named float32 outputs.
func runORT(t *testing.T, model string, x *tensor.Tensor, outputs []string) []*tensor.Tensor {
	t.Helper()
	dir := t.TempDir()
	xFile := filepath.Join(dir, "x.bin")
	writeRaw(t, xFile, x)
	run := ortRun{Model: model, Inputs: []ortValue{{Name: "input_0", DType: "float32", Shape: x.Shape(), File: xFile}}}
	for i, o := range outputs {
		run.Outputs = append(run.Outputs, ortValue{Name: o, File: filepath.Join(dir, fmt.Sprintf("y%d.bin", i))})
	}
	manifest := filepath.Join(dir, "runs.json")
	mb, err := json.Marshal([]ortRun{run})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, mb, 0o644))
	cmd := exec.Command("node", "../internal/golden/gen/run_onnxruntime.js", manifest)
	cmd.Env = ortEnv()
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	require.NoError(t, err)
	var got []ortRun
	require.NoError(t, json.Unmarshal(res, &got))
	require.Len(t, got, 1)
	var ys []*tensor.Tensor
	for _, o := range got[0].Outputs {
		raw, err := os.ReadFile(o.File)
		require.NoError(t, err)
		vals := make([]float32, len(raw)/4)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		ys = append(ys, tensor.FromSlice(vals, o.Shape...))
	}
	return ys
}

// TestExportFunctionNamedAfterBuiltin exports, in one model, a Function
// named after every op the exporter knows (and a Function calling another)
// and checks each output against Ember's value in this package's runtime
// and in ONNX Runtime: a name never turns a custom op into a built-in one.
func TestExportFunctionNamedAfterBuiltin(t *testing.T) {
	names := builtinOpNames()
	require.Greater(t, len(names), 90)
	fns := make([]*autograd.Function, len(names))
	for i, name := range names {
		fns[i] = quadratic(name)
	}
	inner := quadratic("Tanh")
	nested := autograd.NewFunction("Relu", func(in []*autograd.Var) *autograd.Var {
		return inner.Apply(in[0]).MulScalar(-3)
	}, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
		return []*autograd.Var{g.Mul(in[0].SubScalar(0.25)).MulScalar(-3)}
	})
	fn := func(in []*autograd.Var) []*autograd.Var {
		outs := make([]*autograd.Var, 0, len(fns)+1)
		for _, f := range fns {
			outs = append(outs, f.Apply(in[0]))
		}
		return append(outs, nested.Apply(in[0]))
	}
	x := tensor.NewGenerator(3).Normal([]int{2, 5}, 0, 2)
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &buf, ExportOptions{}))

	want := fn([]*autograd.Var{autograd.New(x)})
	// The values are what the formula gives, not what any built-in gives.
	xs := x.Float32s()
	for i, v := range want[0].Value().Float32s() {
		require.InDelta(t, float64(xs[i]*xs[i]/2-xs[i]/4+0.125), float64(v), 1e-5)
	}
	got := runExportedOutputs(t, buf.Bytes(), x)
	outNames := make([]string, len(want))
	for i := range want {
		outNames[i] = fmt.Sprintf("output_%d", i)
		assertClose(t, want[i].Value(), got[outNames[i]], 1e-6)
	}
	if !ortAvailable(t) {
		t.Skip("node with onnxruntime-node not available (ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node; ORT_NODE_MODULES=.../node_modules)")
	}
	model := filepath.Join(t.TempDir(), "custom.onnx")
	require.NoError(t, os.WriteFile(model, buf.Bytes(), 0o644))
	ys := runORT(t, model, x, outNames)
	for i := range want {
		assertClose(t, want[i].Value(), ys[i], 1e-5)
	}
	t.Logf("%d custom ops named after built-ins match Ember in ONNX Runtime", len(want))
}

// TestExportCustomRefused checks that a Custom op (a value computed outside
// the graph) is refused with an error naming it, whatever its name, unless
// its inputs are constants.
func TestExportCustomRefused(t *testing.T) {
	x := tensor.NewGenerator(4).Normal([]int{3}, 0, 1)
	for _, name := range builtinOpNames() {
		fn := func(in []*autograd.Var) []*autograd.Var {
			out := in[0].Value().Mul(in[0].Value())
			return []*autograd.Var{autograd.Custom(name, out, in[:1], nil, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g.Mul(in[0]).MulScalar(2)}
			})}
		}
		err := ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, ExportOptions{})
		require.Error(t, err, name)
		require.Contains(t, err.Error(), fmt.Sprintf("custom op %q", name))
		require.Contains(t, err.Error(), "autograd.NewFunction")
	}
	// A Custom op of parameters alone is a constant: its traced value.
	w := autograd.Param(tensor.FromSlice([]float32{1, -2, 3}, 3))
	fn := func(in []*autograd.Var) []*autograd.Var {
		sq := autograd.Custom("Relu", w.Value().Mul(w.Value()), []*autograd.Var{w}, nil, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Mul(in[0]).MulScalar(2)}
		})
		return []*autograd.Var{in[0].Add(sq)}
	}
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, []nn.NamedParam{{Name: "w", Param: w}}, nil, []*tensor.Tensor{x}, &buf, ExportOptions{}))
	got := runExportedOutputs(t, buf.Bytes(), x)
	assertClose(t, x.Add(tensor.FromSlice([]float32{1, 4, 9}, 3)), got["output_0"], 1e-6)
}

// TestExportAnnotateWithoutMapping checks that a user's Annotate, even
// under a built-in composite's name, is exported as the ops it wraps.
func TestExportAnnotateWithoutMapping(t *testing.T) {
	x := tensor.NewGenerator(5).Normal([]int{2, 4}, 0, 1)
	for _, name := range []string{"HardSwish", "Softplus", "LeakyReLU", "LSTM", "EmbeddingBag", "MyBlock"} {
		fn := func(in []*autograd.Var) []*autograd.Var {
			out := in[0].Mul(in[0]).AddScalar(1)
			return []*autograd.Var{autograd.Annotate(out, name, map[string]any{"alpha": 0.5}, in[0])}
		}
		var buf bytes.Buffer
		require.NoError(t, ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &buf, ExportOptions{}), name)
		got := runExportedOutputs(t, buf.Bytes(), x)
		assertClose(t, x.Mul(x).AddScalar(1), got["output_0"], 1e-6)
	}
}

// softsign is a Custom op computing x / (1 + |x|) on tensors.
func softsign(name string, x *autograd.Var) *autograd.Var {
	v := x.Value()
	out := v.Div(v.Abs().AddScalar(1))
	return autograd.Custom(name, out, []*autograd.Var{x}, []*tensor.Tensor{v}, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
		d := in[0].Abs().AddScalar(1)
		return []*autograd.Var{g.Div(d.Mul(d))}
	})
}

// TestExportCustomOpsMapping checks registered mappings: a Custom op
// written as a standard ONNX node (checked in ONNX Runtime), a mapping
// taking precedence over a Function's forward, and a node of a custom
// domain with its opset import.
func TestExportCustomOpsMapping(t *testing.T) {
	x := tensor.NewGenerator(6).Normal([]int{3, 4}, 0, 2)
	opts := ExportOptions{CustomOps: map[string]CustomOpExport{
		"Tanh": {Emit: func(b *ExportBuilder, in []string, op autograd.NodeInfo) (string, error) {
			require.Equal(t, []int{3, 4}, op.Inputs[0].Shape())
			return b.Node("Softsign", in), nil
		}},
	}}
	fn := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{softsign("Tanh", in[0])} }
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &buf, opts))
	want := x.Div(x.Abs().AddScalar(1))
	m, err := Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"Softsign": 1}, m.OpCounts())
	assertClose(t, want, runExportedOutputs(t, buf.Bytes(), x)["output_0"], 1e-6)
	if ortAvailable(t) {
		model := filepath.Join(t.TempDir(), "softsign.onnx")
		require.NoError(t, os.WriteFile(model, buf.Bytes(), 0o644))
		assertClose(t, want, runORT(t, model, x, []string{"output_0"})[0], 1e-6)
	}

	// A mapping wins over a Function's traced forward.
	f := quadratic("Square")
	opts.CustomOps = map[string]CustomOpExport{"Square": {Emit: func(b *ExportBuilder, in []string, _ autograd.NodeInfo) (string, error) {
		half := b.Constant(tensor.ScalarOf(0.5, tensor.Float32))
		quarter := b.Constant(tensor.ScalarOf(0.25, tensor.Float32))
		sq := b.Node("Mul", []string{b.Node("Mul", []string{in[0], in[0]}), half})
		return b.Node("Add", []string{b.Node("Sub", []string{sq, b.Node("Mul", []string{in[0], quarter})}), b.Constant(tensor.ScalarOf(0.125, tensor.Float32))}), nil
	}}}
	buf.Reset()
	require.NoError(t, ExportFunc(func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{f.Apply(in[0])} }, nil, nil, []*tensor.Tensor{x}, &buf, opts))
	m, err = Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"Mul": 3, "Sub": 1, "Add": 1}, m.OpCounts())
	assertClose(t, f.Apply(autograd.New(x)).Value(), runExportedOutputs(t, buf.Bytes(), x)["output_0"], 1e-6)

	// A custom domain: the node carries it and the model imports it.
	opts.CustomOps = map[string]CustomOpExport{"Fancy": {Domain: "com.example", Version: 2,
		Emit: func(b *ExportBuilder, in []string, _ autograd.NodeInfo) (string, error) {
			return b.DomainNode("FancySoftsign", in, AttrFloat("eps", 0.5), AttrInts("axes", 1, 2)), nil
		}}}
	buf.Reset()
	require.NoError(t, ExportFunc(func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{softsign("Fancy", in[0])} }, nil, nil, []*tensor.Tensor{x}, &buf, opts))
	m, err = Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, int64(2), m.Opsets["com.example"])
	require.Equal(t, int64(DefaultExportOpset), m.Opsets[""])
	require.Equal(t, map[string]int{"com.example.FancySoftsign": 1}, m.OpCounts())

	// Errors name the op.
	opts.CustomOps = map[string]CustomOpExport{"Fancy": {Domain: "com.example", Emit: func(b *ExportBuilder, in []string, _ autograd.NodeInfo) (string, error) {
		return b.DomainNode("F", in), nil
	}}}
	err = ExportFunc(func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{softsign("Fancy", in[0])} }, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, opts)
	require.ErrorContains(t, err, `custom op "Fancy"`)
	require.ErrorContains(t, err, "without a version")
	opts.CustomOps = map[string]CustomOpExport{"Fancy": {Emit: func(*ExportBuilder, []string, autograd.NodeInfo) (string, error) {
		return "", fmt.Errorf("rank 3 only")
	}}}
	err = ExportFunc(func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{softsign("Fancy", in[0])} }, nil, nil, []*tensor.Tensor{x}, &bytes.Buffer{}, opts)
	require.ErrorContains(t, err, `custom op "Fancy"`)
	require.True(t, strings.HasSuffix(err.Error(), "rank 3 only"), err.Error())
}
