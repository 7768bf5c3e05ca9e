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

const rnnAttnGolden = "testdata/golden_rnn_attn.json"

// raTensor converts a float64 or bool golden tensor.
func raTensor(g golden.Tensor) *tensor.Tensor {
	shape := append([]int{}, g.Shape...)
	switch g.DType {
	case golden.Float64:
		return tensor.FromSlice(g.Float64s(), shape...)
	case golden.Float32:
		return tensor.FromSlice(g.Float32s(), shape...)
	case golden.Bool:
		return tensor.FromSlice(g.Bools(), shape...)
	}
	panic("raTensor: unexpected golden dtype " + g.DType)
}

// raCase is a loaded module case: the data inputs as Vars (float ones
// requiring gradients) and the module with the golden parameters.
type raCase struct {
	c    golden.Case
	data []*autograd.Var
	m    nn.Module
}

// raLoad loads the parameters of the case (the inputs after the first
// nData, named by the attr "params") into m.
func raLoad(t *testing.T, c golden.Case, m nn.Module, nData int) raCase {
	t.Helper()
	names, ok := c.Attrs["params"].([]any)
	require.True(t, ok, "case %s has no params attr", c.Name)
	require.Len(t, c.Inputs, nData+len(names))
	sd := map[string]*tensor.Tensor{}
	for i, n := range names {
		sd[n.(string)] = raTensor(c.Inputs[nData+i])
	}
	require.NoError(t, nn.LoadStateDict(m, sd, true))
	m.Train(false)
	data := make([]*autograd.Var, nData)
	for i := range data {
		v := raTensor(c.Inputs[i])
		if v.DType().IsFloat() {
			data[i] = autograd.Param(v)
		} else {
			data[i] = autograd.New(v)
		}
	}
	return raCase{c: c, data: data, m: m}
}

// check compares outputs with the golden ones and, when the case has
// gradients, backpropagates its grad_outputs and compares the gradients of
// the data inputs and of every parameter (in state-dict order).
func (r raCase) check(t *testing.T, outs ...*autograd.Var) {
	t.Helper()
	require.Len(t, outs, len(r.c.Outputs))
	for i, o := range outs {
		golden.AllClose(t, fmt.Sprintf("output %d", i), r.c.Outputs[i], o.Shape(), o.Value().To(tensor.Float64).Float64s(), 1e-9, 1e-11)
	}
	if len(r.c.Grads) == 0 {
		return
	}
	loss := autograd.New(tensor.Scalar(0.0))
	for i, o := range outs {
		loss = loss.Add(o.Mul(autograd.New(raTensor(r.c.GradOutputs[i]))).Sum(nil, false))
	}
	require.NoError(t, loss.Backward())
	vars := append([]*autograd.Var{}, r.data...)
	for _, p := range r.m.NamedParameters() {
		vars = append(vars, p.Param)
	}
	require.Len(t, vars, len(r.c.Grads))
	for i, v := range vars {
		want := r.c.Grads[i]
		if want == nil {
			continue
		}
		g := v.Grad()
		require.NotNil(t, g, "no gradient for input %d", i)
		golden.AllClose(t, fmt.Sprintf("grad %d", i), *want, g.Shape(), g.To(tensor.Float64).Float64s(), 1e-9, 1e-11)
	}
}

func rnnOptions(c golden.Case) nn.RNNOptions {
	o := nn.RNNOptions{
		NumLayers:     c.Int("num_layers"),
		NoBias:        !c.Bool("bias"),
		BatchFirst:    c.Bool("batch_first"),
		Bidirectional: c.Bool("bidirectional"),
	}
	if o.NumLayers > 1 {
		o.Dropout = 0.3 // off in eval mode
	}
	return o
}

func TestRNNGolden(t *testing.T) {
	g := tensor.NewGenerator(7)
	f64 := tensor.Float64
	ops := map[string]bool{"rnn_cell": true, "gru_cell": true, "lstm_cell": true, "rnn": true, "gru": true, "lstm": true}
	for _, c := range golden.Load(t, rnnAttnGolden) {
		if !ops[c.Op] {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			switch c.Op {
			case "rnn_cell":
				x := c.Inputs[0].Shape
				m := nn.NewRNNCell(g, x[1], c.Inputs[1].Shape[1], c.Bool("bias"), c.String("nonlinearity"), f64)
				r := raLoad(t, c, m, 2)
				r.check(t, m.Step(r.data[0], r.data[1]))
			case "gru_cell":
				x := c.Inputs[0].Shape
				m := nn.NewGRUCell(g, x[1], c.Inputs[1].Shape[1], c.Bool("bias"), f64)
				r := raLoad(t, c, m, 2)
				r.check(t, m.Step(r.data[0], r.data[1]))
			case "lstm_cell":
				x := c.Inputs[0].Shape
				m := nn.NewLSTMCell(g, x[1], c.Inputs[1].Shape[1], c.Bool("bias"), f64)
				r := raLoad(t, c, m, 3)
				h, cs := m.Step(r.data[0], r.data[1], r.data[2])
				r.check(t, h, cs)
			case "rnn", "gru", "lstm":
				opt := rnnOptions(c)
				in, hid := c.Int("input_size"), c.Int("hidden_size")
				var lengths []int
				if c.Has("lengths") {
					lengths = c.Ints("lengths")
				}
				nData := 1
				if c.Bool("h0") {
					nData = 2
					if c.Op == "lstm" {
						nData = 3
					}
				}
				state := func(r raCase, i int) *autograd.Var {
					if i < len(r.data) {
						return r.data[i]
					}
					return nil
				}
				switch c.Op {
				case "rnn":
					opt.Nonlinearity = c.String("nonlinearity")
					m := nn.NewRNN(g, in, hid, opt, f64)
					r := raLoad(t, c, m, nData)
					out, hn := m.ForwardState(r.data[0], state(r, 1), lengths)
					r.check(t, out, hn)
				case "gru":
					m := nn.NewGRU(g, in, hid, opt, f64)
					r := raLoad(t, c, m, nData)
					out, hn := m.ForwardState(r.data[0], state(r, 1), lengths)
					r.check(t, out, hn)
				case "lstm":
					m := nn.NewLSTM(g, in, hid, opt, f64)
					r := raLoad(t, c, m, nData)
					out, hn, cn := m.ForwardState(r.data[0], state(r, 1), state(r, 2), lengths)
					r.check(t, out, hn, cn)
				}
			}
		})
	}
}

func TestRNNParameterNames(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := nn.NewLSTM(g, 3, 5, nn.RNNOptions{NumLayers: 2, Bidirectional: true})
	assert.Equal(t, []string{
		"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
		"weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
		"weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
		"weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse",
	}, nn.StateDictKeys(m))
	sd := nn.StateDict(m)
	assert.Equal(t, []int{20, 3}, sd["weight_ih_l0"].Shape())
	assert.Equal(t, []int{20, 10}, sd["weight_ih_l1_reverse"].Shape())
	assert.Equal(t, []int{20, 5}, sd["weight_hh_l1"].Shape())
	bound := 1 / 2.23606797749979
	for name, p := range sd {
		for _, v := range p.Float32s() {
			require.LessOrEqual(t, float64(v), bound, name)
			require.GreaterOrEqual(t, float64(v), -bound, name)
		}
	}
	assert.Equal(t, "LSTM(3, 5, num_layers=2, bidirectional=True)", m.String())
	gru := nn.NewGRU(g, 2, 4, nn.RNNOptions{NoBias: true, BatchFirst: true})
	assert.Equal(t, []string{"weight_ih_l0", "weight_hh_l0"}, nn.StateDictKeys(gru))
	assert.Equal(t, []int{12, 2}, gru.Weights[0].WeightIH.Shape())
	assert.Equal(t, "GRU(2, 4, bias=False, batch_first=True)", gru.String())
	rnn := nn.NewRNN(g, 2, 4, nn.RNNOptions{Nonlinearity: "relu", Dropout: 0.5, NumLayers: 3})
	assert.Equal(t, "RNN(2, 4, num_layers=3, nonlinearity=relu, dropout=0.5)", rnn.String())
	assert.Len(t, rnn.Parameters(), 12)
	cell := nn.NewLSTMCell(g, 3, 2, true)
	assert.Equal(t, []string{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}, nn.StateDictKeys(cell))
	assert.Equal(t, []int{8, 3}, cell.WeightIH.Shape())
}

func TestRNNShapesAndUnbatched(t *testing.T) {
	g := tensor.NewGenerator(3)
	f64 := tensor.Float64
	m := nn.NewLSTM(g, 3, 4, nn.RNNOptions{NumLayers: 2, Bidirectional: true, BatchFirst: true}, f64)
	x := g.Randn([]int{2, 5, 3}, f64)
	out, hn, cn := m.ForwardState(autograd.New(x), nil, nil, nil)
	assert.Equal(t, []int{2, 5, 8}, out.Shape())
	assert.Equal(t, []int{4, 2, 4}, hn.Shape())
	assert.Equal(t, []int{4, 2, 4}, cn.Shape())
	// Unbatched input gives the first batch row's results.
	uo, uh, uc := m.ForwardState(autograd.New(x.Select(0, 0)), nil, nil, nil)
	assert.Equal(t, []int{5, 8}, uo.Shape())
	assert.Equal(t, []int{4, 4}, uh.Shape())
	assert.InDeltaSlice(t, out.Value().Select(0, 0).Contiguous().Float64s(), uo.Value().Float64s(), 1e-12)
	assert.InDeltaSlice(t, hn.Value().Select(1, 0).Contiguous().Float64s(), uh.Value().Float64s(), 1e-12)
	assert.InDeltaSlice(t, cn.Value().Select(1, 0).Contiguous().Float64s(), uc.Value().Float64s(), 1e-12)
	// Full lengths equal no lengths.
	lo, lh, _ := m.ForwardState(autograd.New(x), nil, nil, []int{5, 5})
	assert.InDeltaSlice(t, out.Value().Float64s(), lo.Value().Float64s(), 1e-12)
	assert.InDeltaSlice(t, hn.Value().Float64s(), lh.Value().Float64s(), 1e-12)
	// A cell step on an unbatched input.
	cell := nn.NewGRUCell(g, 3, 2, true, f64)
	assert.Equal(t, []int{2}, cell.Forward(autograd.New(x.Select(0, 0).Select(0, 0))).Shape())
}

func TestRNNDropoutTraining(t *testing.T) {
	f64 := tensor.Float64
	m := nn.NewGRU(tensor.NewGenerator(5), 3, 4, nn.RNNOptions{NumLayers: 2, Dropout: 0.5}, f64)
	x := autograd.New(tensor.NewGenerator(6).Randn([]int{4, 2, 3}, f64))
	m.Train(false)
	e1, e2 := m.Forward(x).Value().Float64s(), m.Forward(x).Value().Float64s()
	assert.Equal(t, e1, e2, "eval mode is deterministic")
	m.Train(true)
	tr := m.Forward(x).Value().Float64s()
	assert.NotEqual(t, e1, tr, "training mode drops between layers")
	// The last layer is not followed by dropout: a single layer ignores it.
	one := nn.NewRNN(tensor.NewGenerator(5), 3, 4, nn.RNNOptions{Dropout: 0.9}, f64)
	a := one.Forward(x).Value().Float64s()
	one.Train(false)
	assert.Equal(t, a, one.Forward(x).Value().Float64s())
}

func TestRNNPanics(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := nn.NewRNN(g, 3, 4, nn.RNNOptions{})
	x := autograd.New(tensor.Zeros([]int{5, 2, 3}))
	for _, tc := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"features", func() { m.Forward(autograd.New(tensor.Zeros([]int{5, 2, 4}))) }, "must be [T, N, 3]"},
		{"lengths count", func() { m.ForwardState(x, nil, []int{5}) }, "1 lengths for a batch of 2"},
		{"length range", func() { m.ForwardState(x, nil, []int{5, 6}) }, "lengths[1]=6 is not in [1, 5]"},
		{"h0 shape", func() { m.ForwardState(x, autograd.New(tensor.Zeros([]int{1, 3, 4})), nil) }, "h0 shape [1 3 4] must be [1 2 4]"},
		{"nonlinearity", func() { nn.NewRNN(g, 3, 4, nn.RNNOptions{Nonlinearity: "sigmoid"}) }, "nonlinearity \"sigmoid\""},
		{"dropout", func() { nn.NewGRU(g, 3, 4, nn.RNNOptions{Dropout: 1.5}) }, "dropout 1.5"},
		{"cell input", func() { nn.NewGRUCell(g, 3, 4, true).Forward(x) }, "must be [N, 3] or [3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.f()
		})
	}
}

// TestRNNCellGradCheck checks the gradients of the cells and of a small
// bidirectional, variable-length LSTM and GRU with respect to the inputs,
// the states and every parameter by finite differences.
func TestRNNCellGradCheck(t *testing.T) {
	f64 := tensor.Float64
	g := tensor.NewGenerator(11)
	cases := []struct {
		name string
		m    nn.Module
		// shapes of the data inputs
		shapes [][]int
		f      func(m nn.Module, in []*autograd.Var) *autograd.Var
	}{
		{"rnn_cell_tanh", nn.NewRNNCell(g, 3, 2, true, "tanh", f64), [][]int{{2, 3}, {2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var { return m.(*nn.RNNCell).Step(in[0], in[1]) }},
		{"rnn_cell_relu", nn.NewRNNCell(g, 3, 2, true, "relu", f64), [][]int{{2, 3}, {2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var { return m.(*nn.RNNCell).Step(in[0], in[1]) }},
		{"gru_cell", nn.NewGRUCell(g, 3, 2, true, f64), [][]int{{2, 3}, {2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var { return m.(*nn.GRUCell).Step(in[0], in[1]) }},
		{"lstm_cell", nn.NewLSTMCell(g, 3, 2, true, f64), [][]int{{2, 3}, {2, 2}, {2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var {
				h, c := m.(*nn.LSTMCell).Step(in[0], in[1], in[2])
				return autograd.Concat([]*autograd.Var{h, c}, 1)
			}},
		{"lstm_bidir_packed", nn.NewLSTM(g, 2, 2, nn.RNNOptions{Bidirectional: true}, f64), [][]int{{3, 2, 2}, {2, 2, 2}, {2, 2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var {
				out, h, c := m.(*nn.LSTM).ForwardState(in[0], in[1], in[2], []int{3, 2})
				return autograd.Concat([]*autograd.Var{out.Flatten(0, -1), h.Flatten(0, -1), c.Flatten(0, -1)}, 0)
			}},
		{"gru_2layer_bf", nn.NewGRU(g, 2, 2, nn.RNNOptions{NumLayers: 2, BatchFirst: true}, f64), [][]int{{2, 3, 2}, {2, 2, 2}},
			func(m nn.Module, in []*autograd.Var) *autograd.Var {
				out, h := m.(*nn.GRU).ForwardState(in[0], in[1], []int{1, 3})
				return autograd.Concat([]*autograd.Var{out.Flatten(0, -1), h.Flatten(0, -1)}, 0)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var inputs []*tensor.Tensor
			for _, s := range tc.shapes {
				inputs = append(inputs, g.Randn(s, f64))
			}
			params := tc.m.NamedParameters()
			for _, p := range params {
				inputs = append(inputs, p.Param.Value().Clone())
			}
			nData := len(tc.shapes)
			require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
				return withParams(tc.m, in[nData:], func() *autograd.Var { return tc.f(tc.m, in[:nData]) })
			}, inputs...))
		})
	}
}

// withParams runs f with the recurrent module's weights replaced by the
// given Vars (in NamedParameters order), so that GradCheck differentiates
// with respect to them, and restores the weights afterwards.
func withParams(m nn.Module, ps []*autograd.Var, f func() *autograd.Var) *autograd.Var {
	var ws []*nn.RecurrentWeights
	switch m := m.(type) {
	case *nn.RNNCell:
		ws = []*nn.RecurrentWeights{&m.RecurrentWeights}
	case *nn.GRUCell:
		ws = []*nn.RecurrentWeights{&m.RecurrentWeights}
	case *nn.LSTMCell:
		ws = []*nn.RecurrentWeights{&m.RecurrentWeights}
	case *nn.LSTM:
		for i := range m.Weights {
			ws = append(ws, &m.Weights[i])
		}
	case *nn.GRU:
		for i := range m.Weights {
			ws = append(ws, &m.Weights[i])
		}
	default:
		panic(fmt.Sprintf("withParams: unexpected module %T", m))
	}
	saved := make([]nn.RecurrentWeights, len(ws))
	k := 0
	for i, w := range ws {
		saved[i] = *w
		for _, p := range []**autograd.Var{&w.WeightIH, &w.WeightHH, &w.BiasIH, &w.BiasHH} {
			if *p != nil {
				*p = ps[k]
				k++
			}
		}
	}
	defer func() {
		for i, w := range ws {
			*w = saved[i]
		}
	}()
	return f()
}

// TestRNNFloat32MatchesFloat64 runs the default Float32 layers against the
// same weights in Float64.
func TestRNNFloat32MatchesFloat64(t *testing.T) {
	g := tensor.NewGenerator(21)
	opt := nn.RNNOptions{NumLayers: 2, Bidirectional: true}
	m32 := nn.NewLSTM(g, 3, 4, opt)
	m64 := nn.NewLSTM(g, 3, 4, opt, tensor.Float64)
	sd := map[string]*tensor.Tensor{}
	for k, v := range nn.StateDict(m32) {
		sd[k] = v.To(tensor.Float64)
	}
	require.NoError(t, nn.LoadStateDict(m64, sd, true))
	x := g.Randn([]int{5, 2, 3}, tensor.Float64)
	o32, h32, c32 := m32.ForwardState(autograd.New(x.To(tensor.Float32)), nil, nil, []int{5, 3})
	o64, h64, c64 := m64.ForwardState(autograd.New(x), nil, nil, []int{5, 3})
	assert.Equal(t, tensor.Float32, o32.DType())
	for i, pair := range [][2]*autograd.Var{{o32, o64}, {h32, h64}, {c32, c64}} {
		assert.InDeltaSlice(t, pair[1].Value().Float64s(), pair[0].Value().To(tensor.Float64).Float64s(), 1e-5, "output %d", i)
	}
}

func BenchmarkLSTMForwardBackward(b *testing.B) {
	g := tensor.NewGenerator(1)
	m := nn.NewLSTM(g, 32, 64, nn.RNNOptions{NumLayers: 2})
	x := autograd.New(g.Randn([]int{20, 16, 32}))
	for b.Loop() {
		m.ZeroGrad()
		out, _, _ := m.ForwardState(x, nil, nil, nil)
		if err := out.Sum(nil, false).Backward(); err != nil {
			b.Fatal(err)
		}
	}
}
