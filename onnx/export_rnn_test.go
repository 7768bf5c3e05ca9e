package onnx

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recurrentLayer is the part of nn.RNN, nn.LSTM and nn.GRU the tests call.
type recurrentLayer interface {
	nn.Module
	run(x, h0, c0 *autograd.Var, lengths []int) []*autograd.Var
}

type rnnLayer struct{ *nn.RNN }

func (r rnnLayer) run(x, h0, _ *autograd.Var, lengths []int) []*autograd.Var {
	out, hn := r.ForwardState(x, h0, lengths)
	return []*autograd.Var{out, hn}
}

type lstmLayer struct{ *nn.LSTM }

func (r lstmLayer) run(x, h0, c0 *autograd.Var, lengths []int) []*autograd.Var {
	out, hn, cn := r.ForwardState(x, h0, c0, lengths)
	return []*autograd.Var{out, hn, cn}
}

type gruLayer struct{ *nn.GRU }

func (r gruLayer) run(x, h0, _ *autograd.Var, lengths []int) []*autograd.Var {
	out, hn := r.ForwardState(x, h0, lengths)
	return []*autograd.Var{out, hn}
}

func newRecurrentLayer(g *tensor.Generator, kind string, in, hidden int, opt nn.RNNOptions) recurrentLayer {
	switch kind {
	case "LSTM":
		return lstmLayer{nn.NewLSTM(g, in, hidden, opt)}
	case "GRU":
		return gruLayer{nn.NewGRU(g, in, hidden, opt)}
	}
	return rnnLayer{nn.NewRNN(g, in, hidden, opt)}
}

// rnnExportCase is one recurrent layer configuration.
type rnnExportCase struct {
	kind   string
	opt    nn.RNNOptions
	states bool // pass h0 (and c0) as graph inputs
}

func (c rnnExportCase) name() string {
	s := c.kind
	if c.opt.Nonlinearity != "" {
		s += "_" + c.opt.Nonlinearity
	}
	s += "_L" + string(rune('0'+max(c.opt.NumLayers, 1)))
	if c.opt.Bidirectional {
		s += "_bidir"
	}
	if c.opt.BatchFirst {
		s += "_batchfirst"
	}
	if c.opt.NoBias {
		s += "_nobias"
	}
	if c.states {
		s += "_states"
	}
	return s
}

func rnnExportCases() []rnnExportCase {
	var cases []rnnExportCase
	for _, kind := range []string{"RNN_tanh", "RNN_relu", "LSTM", "GRU"} {
		k, nl := kind, ""
		if strings.HasPrefix(kind, "RNN_") {
			k, nl = "RNN", strings.TrimPrefix(kind, "RNN_")
		}
		for _, layers := range []int{1, 2} {
			for _, bidir := range []bool{false, true} {
				for _, bf := range []bool{false, true} {
					for _, states := range []bool{false, true} {
						cases = append(cases, rnnExportCase{k, nn.RNNOptions{NumLayers: layers, Nonlinearity: nl,
							Bidirectional: bidir, BatchFirst: bf, Dropout: 0.3}, states})
					}
				}
			}
		}
		cases = append(cases, rnnExportCase{k, nn.RNNOptions{Nonlinearity: nl, NoBias: true}, true})
	}
	return cases
}

const rnnIn, rnnHidden, rnnSteps = 3, 4, 5

// rnnGraphInputs returns the example inputs of a case for batch n: x and,
// with states, h0 (and c0).
func (c rnnExportCase) inputs(g *tensor.Generator, n int) []*tensor.Tensor {
	x := g.Randn([]int{rnnSteps, n, rnnIn})
	if c.opt.BatchFirst {
		x = g.Randn([]int{n, rnnSteps, rnnIn})
	}
	ins := []*tensor.Tensor{x}
	if c.states {
		dirs := 1
		if c.opt.Bidirectional {
			dirs = 2
		}
		s := []int{max(c.opt.NumLayers, 1) * dirs, n, rnnHidden}
		ins = append(ins, g.Randn(s))
		if c.kind == "LSTM" {
			ins = append(ins, g.Randn(s))
		}
	}
	return ins
}

// exportRecurrent exports m's ForwardState on the example inputs with the
// batch axes dynamic (unless lengths fix the batch or the input is
// unbatched) and returns the model bytes.
func exportRecurrent(t *testing.T, m recurrentLayer, example []*tensor.Tensor, batchFirst bool, lengths []int) []byte {
	t.Helper()
	m.Train(false)
	fn := func(in []*autograd.Var) []*autograd.Var {
		var h0, c0 *autograd.Var
		if len(in) > 1 {
			h0 = in[1]
		}
		if len(in) > 2 {
			c0 = in[2]
		}
		return m.run(in[0], h0, c0, lengths)
	}
	dyn := map[string]map[int]string{}
	if lengths == nil && example[0].Dim() == 3 {
		xAxis := 1
		if batchFirst {
			xAxis = 0
		}
		dyn["input_0"], dyn["output_0"] = map[int]string{xAxis: "batch"}, map[int]string{xAxis: "batch"}
		for _, s := range []string{"input_1", "input_2", "output_1", "output_2"} {
			dyn[s] = map[int]string{1: "batch"}
		}
	}
	var buf bytes.Buffer
	err := ExportFunc(fn, m.NamedParameters(), m.NamedBuffers(), example, &buf, ExportOptions{DynamicAxes: dyn})
	require.NoError(t, err)
	return buf.Bytes()
}

// runExportedAll runs model bytes on inputs input_0, input_1, ... and
// returns output_0, output_1, ... (as many as want).
func runExportedAll(t *testing.T, b []byte, ins []*tensor.Tensor, nOut int) []*tensor.Tensor {
	t.Helper()
	model, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	s, err := model.NewSession(SessionOptions{})
	require.NoError(t, err)
	feeds := map[string]*tensor.Tensor{}
	for i, x := range ins {
		feeds["input_"+string(rune('0'+i))] = x
	}
	out, err := s.Run(context.Background(), feeds)
	require.NoError(t, err)
	res := make([]*tensor.Tensor, nOut)
	for i := range res {
		name := "output_" + string(rune('0'+i))
		require.Contains(t, out, name)
		res[i] = out[name]
	}
	return res
}

func wantRecurrent(m recurrentLayer, ins []*tensor.Tensor, lengths []int) []*tensor.Tensor {
	vs := make([]*autograd.Var, 3)
	for i, x := range ins {
		vs[i] = autograd.New(x)
	}
	outs := m.run(vs[0], vs[1], vs[2], lengths)
	res := make([]*tensor.Tensor, len(outs))
	for i, o := range outs {
		res[i] = o.Value()
	}
	return res
}

func TestExportRecurrentRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, c := range rnnExportCases() {
		t.Run(c.name(), func(t *testing.T) {
			g := tensor.NewGenerator(5)
			m := newRecurrentLayer(g, c.kind, rnnIn, rnnHidden, c.opt)
			b := exportRecurrent(t, m, c.inputs(g, 2), c.opt.BatchFirst, nil)
			path := filepath.Join(dir, c.name()+".onnx")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			files = append(files, path)

			model, err := Read(bytes.NewReader(b))
			require.NoError(t, err)
			ops := model.OpCounts()
			assert.Equal(t, max(c.opt.NumLayers, 1), ops[c.kind], "one %s node per layer", c.kind)
			assert.Zero(t, ops["Gather"], "no unrolled time steps")
			inits := model.InitializerNames()
			assert.Contains(t, inits, "weight_ih_l0.onnx_W")
			assert.Contains(t, inits, "weight_hh_l0.onnx_R")
			if !c.opt.NoBias {
				assert.Contains(t, inits, "bias_ih_l0.onnx_B")
			}

			for _, n := range []int{1, 7} {
				ins := c.inputs(g, n)
				want := wantRecurrent(m, ins, nil)
				got := runExportedAll(t, b, ins, len(want))
				for i := range want {
					assertClose(t, want[i], got[i], 1e-5)
				}
			}
		})
	}
	checkWithONNX(t, files)
}

// TestExportRecurrentLengths exports padded variable-length batches as
// ONNX sequence_lens and unbatched inputs.
func TestExportRecurrentLengths(t *testing.T) {
	dir := t.TempDir()
	var files []string
	keep := func(t *testing.T, b []byte) {
		path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".onnx")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		files = append(files, path)
	}
	lengths := []int{5, 2, 4}
	for _, c := range []rnnExportCase{
		{"GRU", nn.RNNOptions{NumLayers: 2, Bidirectional: true, BatchFirst: true}, true},
		{"LSTM", nn.RNNOptions{Bidirectional: true}, false},
		{"RNN", nn.RNNOptions{NumLayers: 2}, true},
	} {
		t.Run(c.name(), func(t *testing.T) {
			g := tensor.NewGenerator(8)
			m := newRecurrentLayer(g, c.kind, rnnIn, rnnHidden, c.opt)
			ins := c.inputs(g, len(lengths))
			b := exportRecurrent(t, m, ins, c.opt.BatchFirst, lengths)
			keep(t, b)
			model, err := Read(bytes.NewReader(b))
			require.NoError(t, err)
			require.NotNil(t, model.Initializer("sequence_lens"))
			assert.Equal(t, []int64{5, 2, 4}, model.Initializer("sequence_lens").To(tensor.Int64).Int64s())
			want := wantRecurrent(m, ins, lengths)
			got := runExportedAll(t, b, ins, len(want))
			for i := range want {
				assertClose(t, want[i], got[i], 1e-5)
			}
		})
	}
	t.Run("unbatched", func(t *testing.T) {
		g := tensor.NewGenerator(9)
		m := lstmLayer{nn.NewLSTM(g, rnnIn, rnnHidden, nn.RNNOptions{NumLayers: 2, Bidirectional: true})}
		ins := []*tensor.Tensor{g.Randn([]int{rnnSteps, rnnIn}), g.Randn([]int{4, rnnHidden}), g.Randn([]int{4, rnnHidden})}
		b := exportRecurrent(t, m, ins, false, nil)
		keep(t, b)
		want := wantRecurrent(m, ins, nil)
		got := runExportedAll(t, b, ins, 3)
		for i := range want {
			assertClose(t, want[i], got[i], 1e-5)
		}
	})
	checkWithONNX(t, files)
}

// TestExportUnbind exports a function that unbinds a sequence itself:
// each piece becomes a Gather.
func TestExportUnbind(t *testing.T) {
	g := tensor.NewGenerator(2)
	w := autograd.Param(g.Randn([]int{3, 3}))
	fn := func(in []*autograd.Var) []*autograd.Var {
		steps := in[0].Unbind(1)
		outs := make([]*autograd.Var, len(steps))
		for i, s := range steps {
			outs[i] = s.MatMul(w).MulScalar(float64(i + 1))
		}
		return []*autograd.Var{autograd.Stack(outs, 0)}
	}
	x := g.Randn([]int{2, 4, 3})
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, []nn.NamedParam{{Name: "w", Param: w}}, nil, []*tensor.Tensor{x}, &buf, ExportOptions{}))
	want := fn([]*autograd.Var{autograd.New(x)})[0].Value()
	assertClose(t, want, runExported(t, buf.Bytes(), x), 1e-5)
}

// rnnModuleCases are batch-first recurrent layers exported through Export
// (Forward's output only), for the module round trip and ONNX Runtime.
func rnnModuleCases() []exportCase {
	opt := nn.RNNOptions{NumLayers: 2, Bidirectional: true, BatchFirst: true}
	return []exportCase{
		{"RNN_relu_bidir", func(g *tensor.Generator) nn.Module {
			return nn.NewRNN(g, 3, 4, nn.RNNOptions{NumLayers: 2, Bidirectional: true, BatchFirst: true, Nonlinearity: "relu"})
		}, randInput(5, 3)},
		{"LSTM_bidir", func(g *tensor.Generator) nn.Module { return nn.NewLSTM(g, 3, 4, opt) }, randInput(5, 3)},
		{"GRU_bidir", func(g *tensor.Generator) nn.Module { return nn.NewGRU(g, 3, 4, opt) }, randInput(5, 3)},
		{"GRU", func(g *tensor.Generator) nn.Module {
			return nn.NewGRU(g, 3, 4, nn.RNNOptions{BatchFirst: true})
		}, randInput(6, 3)},
	}
}

func TestExportRecurrentModules(t *testing.T) {
	for _, opset := range []int{13, 17, 21} {
		for _, tc := range rnnModuleCases() {
			t.Run(tc.name+"/opset"+string(rune('0'+opset/10))+string(rune('0'+opset%10)), func(t *testing.T) {
				g := tensor.NewGenerator(4)
				m := tc.build(g)
				b := exportModule(t, m, tc.input(g, 2), opset)
				m.Train(false)
				for _, n := range []int{1, 7} {
					x := tc.input(g, n)
					assertClose(t, m.Forward(autograd.New(x)).Value(), runExported(t, b, x), 1e-5)
				}
			})
		}
	}
}

// TestExportRecurrentTrainingDropout checks that a layer traced in training
// mode with inter-layer dropout fails with an error naming the op rather
// than exporting a graph without the dropout.
func TestExportRecurrentTrainingDropout(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := nn.NewGRU(g, 3, 4, nn.RNNOptions{NumLayers: 2, Dropout: 0.5})
	fn := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{m.Forward(in[0])} }
	var buf bytes.Buffer
	err := ExportFunc(fn, m.NamedParameters(), nil, []*tensor.Tensor{g.Randn([]int{5, 2, 3})}, &buf, ExportOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"GRU"`)
	assert.Contains(t, err.Error(), "dropout")
}

// TestExportRecurrentRunsInONNXRuntime runs every recurrent configuration
// of the round-trip table (all outputs, initial states as inputs) and the
// sequence_lens cases in ONNX Runtime (skipped when node or
// onnxruntime-node is missing) and compares with Ember to 1e-4.
func TestExportRecurrentRunsInONNXRuntime(t *testing.T) {
	if !ortAvailable(t) {
		t.Skip("node with onnxruntime-node not available (ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node; ORT_NODE_MODULES=.../node_modules)")
	}
	type prepared struct {
		c       rnnExportCase
		lengths []int
		batches []int
	}
	var all []prepared
	for _, c := range rnnExportCases() {
		all = append(all, prepared{c, nil, []int{1, 7}})
	}
	all = append(all,
		prepared{rnnExportCase{"GRU", nn.RNNOptions{NumLayers: 2, Bidirectional: true, BatchFirst: true}, true}, []int{5, 2, 4}, []int{3}},
		prepared{rnnExportCase{"LSTM", nn.RNNOptions{Bidirectional: true}, true}, []int{3, 5, 1}, []int{3}})
	dir := t.TempDir()
	var runs []ortRun
	var want [][]*tensor.Tensor
	var names []string
	for ci, p := range all {
		g := tensor.NewGenerator(12)
		m := newRecurrentLayer(g, p.c.kind, rnnIn, rnnHidden, p.c.opt)
		b := exportRecurrent(t, m, p.c.inputs(g, p.batches[0]), p.c.opt.BatchFirst, p.lengths)
		model := filepath.Join(dir, strconv.Itoa(ci)+".onnx")
		require.NoError(t, os.WriteFile(model, b, 0o644))
		for _, n := range p.batches {
			ins := p.c.inputs(g, n)
			w := wantRecurrent(m, ins, p.lengths)
			base := filepath.Join(dir, strconv.Itoa(ci)+"_"+strconv.Itoa(n))
			r := ortRun{Model: model}
			for i, x := range ins {
				f := base + "_x" + strconv.Itoa(i) + ".bin"
				r.Inputs = append(r.Inputs, ortValue{Name: "input_" + strconv.Itoa(i), DType: writeRaw(t, f, x), Shape: x.Shape(), File: f})
			}
			for i := range w {
				r.Outputs = append(r.Outputs, ortValue{Name: "output_" + strconv.Itoa(i), File: base + "_y" + strconv.Itoa(i) + ".bin"})
			}
			runs = append(runs, r)
			want = append(want, w)
			names = append(names, p.c.name()+"/batch"+strconv.Itoa(n))
		}
	}
	manifest := filepath.Join(dir, "runs.json")
	mb, err := json.Marshal(runs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, mb, 0o644))
	cmd := exec.Command("node", "../internal/golden/gen/run_onnxruntime.js", manifest)
	cmd.Env = ortEnv()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var got []ortRun
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(runs))
	for i, r := range got {
		t.Run(names[i], func(t *testing.T) {
			for j, o := range r.Outputs {
				raw, err := os.ReadFile(o.File)
				require.NoError(t, err)
				vals := make([]float32, len(raw)/4)
				for k := range vals {
					vals[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
				}
				assertClose(t, want[i][j], tensor.FromSlice(vals, o.Shape...), 1e-4)
			}
		})
	}
	t.Logf("ONNX Runtime matched Ember on %d runs of %d exported recurrent layers", len(got), len(all))
}
