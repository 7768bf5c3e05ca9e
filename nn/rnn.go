package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// rnnMode selects the recurrence of a cell or a recurrent layer.
type rnnMode int

const (
	modeRNNTanh rnnMode = iota
	modeRNNReLU
	modeLSTM
	modeGRU
)

// gates returns the number of gate blocks stacked in the weights.
func (m rnnMode) gates() int {
	switch m {
	case modeLSTM:
		return 4
	case modeGRU:
		return 3
	}
	return 1
}

// rnnModeOf maps an RNN nonlinearity name to its mode.
func rnnModeOf(op, nonlinearity string) rnnMode {
	switch nonlinearity {
	case "", "tanh":
		return modeRNNTanh
	case "relu":
		return modeRNNReLU
	}
	panic(fmt.Sprintf("nn.%s: nonlinearity %q must be \"tanh\" or \"relu\"", op, nonlinearity))
}

// RecurrentWeights holds the parameters of one cell or of one layer and
// direction of a recurrent layer: WeightIH [gates·hidden, input], WeightHH
// [gates·hidden, hidden], BiasIH and BiasHH [gates·hidden] (nil without
// bias). The gate blocks are stacked in PyTorch's order: i, f, g, o for
// LSTM; r, z, n for GRU.
type RecurrentWeights struct {
	WeightIH, WeightHH, BiasIH, BiasHH *autograd.Var
}

// newRecurrentWeights draws and registers one set of weights under the
// names weight_ih<suffix>, weight_hh<suffix>, bias_ih<suffix> and
// bias_hh<suffix>, each from U(-1/sqrt(hidden), 1/sqrt(hidden)) as PyTorch.
func newRecurrentWeights(b *Base, g *tensor.Generator, op string, mode rnnMode, in, hidden int, bias bool, suffix string, dt tensor.DType) RecurrentWeights {
	gh := mode.gates() * hidden
	p := func(name string, shape ...int) *autograd.Var {
		return b.RegisterParameter(name+suffix, autograd.Param(defaultParam(g, op, shape, hidden, dt)))
	}
	w := RecurrentWeights{WeightIH: p("weight_ih", gh, in), WeightHH: p("weight_hh", gh, hidden)}
	if bias {
		w.BiasIH = p("bias_ih", gh)
		w.BiasHH = p("bias_hh", gh)
	}
	return w
}

// inputProj returns x·W_ihᵀ + b_ih for x of shape [..., input].
func (w RecurrentWeights) inputProj(x *autograd.Var) *autograd.Var {
	y := x.MatMul(w.WeightIH.T())
	if w.BiasIH != nil {
		y = y.Add(w.BiasIH)
	}
	return y
}

// step advances the recurrence by one time step given the input projection
// gi = x·W_ihᵀ + b_ih ([N, gates·hidden]) and the previous state h (and c
// for LSTM), both [N, hidden]. It returns the new h and c (nil unless
// LSTM). With fused, the GRU gate arithmetic is the single recorded op
// autograd.GRUGates (the multi-layer GRU uses it; the cells keep the
// primitive ops, which graph exporters translate one by one).
func (w RecurrentWeights) step(mode rnnMode, gi, h, c *autograd.Var, fused bool) (*autograd.Var, *autograd.Var) {
	gh := h.MatMul(w.WeightHH.T())
	if w.BiasHH != nil {
		gh = gh.Add(w.BiasHH)
	}
	hidden := h.Shape()[h.Dim()-1]
	switch mode {
	case modeRNNTanh:
		return gi.Add(gh).Tanh(), nil
	case modeRNNReLU:
		return gi.Add(gh).Relu(), nil
	case modeLSTM:
		a := gi.Add(gh)
		in := a.Narrow(-1, 0, hidden).Sigmoid()
		f := a.Narrow(-1, hidden, hidden).Sigmoid()
		g := a.Narrow(-1, 2*hidden, hidden).Tanh()
		o := a.Narrow(-1, 3*hidden, hidden).Sigmoid()
		c2 := f.Mul(c).Add(in.Mul(g))
		return o.Mul(c2.Tanh()), c2
	}
	// GRU: r, z, n with n = tanh(W_in x + b_in + r*(W_hn h + b_hn)).
	if fused {
		return autograd.GRUGates(gi, gh, h), nil
	}
	r := gi.Narrow(-1, 0, hidden).Add(gh.Narrow(-1, 0, hidden)).Sigmoid()
	z := gi.Narrow(-1, hidden, hidden).Add(gh.Narrow(-1, hidden, hidden)).Sigmoid()
	n := gi.Narrow(-1, 2*hidden, hidden).Add(r.Mul(gh.Narrow(-1, 2*hidden, hidden))).Tanh()
	// h' = (1-z)*n + z*h = n + z*(h-n)
	return n.Add(z.Mul(h.Sub(n))), nil
}

// cell is the state shared by RNNCell, LSTMCell and GRUCell.
type cell struct {
	Base
	// InputSize and HiddenSize are the feature sizes of the input and the
	// hidden state.
	InputSize, HiddenSize int
	// RecurrentWeights are the cell's parameters (weight_ih, weight_hh,
	// bias_ih, bias_hh).
	RecurrentWeights
	mode rnnMode
}

func newCell(op string, mode rnnMode, in, hidden int) cell {
	if in <= 0 || hidden <= 0 {
		panic(fmt.Sprintf("nn.%s: input_size=%d and hidden_size=%d must be positive", op, in, hidden))
	}
	return cell{InputSize: in, HiddenSize: hidden, mode: mode}
}

// prepare checks x ([N, input] or unbatched [input]) and a state (nil for
// zeros; [N, hidden] or [hidden]) and returns both batched, with whether
// the input was unbatched.
func (c *cell) prepare(op string, x, h *autograd.Var) (*autograd.Var, *autograd.Var, bool) {
	s := x.Shape()
	if (len(s) != 1 && len(s) != 2) || s[len(s)-1] != c.InputSize {
		panic(fmt.Sprintf("nn.%s: input shape %v must be [N, %d] or [%d]", op, s, c.InputSize, c.InputSize))
	}
	unbatched := len(s) == 1
	if unbatched {
		x = x.Unsqueeze(0)
	}
	n := x.Shape()[0]
	if h == nil {
		return x, autograd.New(tensor.ZerosOn(x.Value().Device(), []int{n, c.HiddenSize}, x.DType())), unbatched
	}
	want := []int{n, c.HiddenSize}
	if unbatched {
		want = want[1:]
	}
	if !sameInts(h.Shape(), want) {
		panic(fmt.Sprintf("nn.%s: state shape %v must be %v for input shape %v", op, h.Shape(), want, s))
	}
	if unbatched {
		h = h.Unsqueeze(0)
	}
	return x, h, unbatched
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func squeezeIf(v *autograd.Var, on bool) *autograd.Var {
	if on {
		return v.Squeeze(0)
	}
	return v
}

// RNNCell is one step of an Elman RNN, as torch.nn.RNNCell:
// h' = act(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh) with act tanh or relu.
type RNNCell struct {
	cell
	// Nonlinearity is "tanh" or "relu".
	Nonlinearity string
}

// NewRNNCell returns an RNNCell with the given sizes, a bias when bias is
// true and nonlinearity "tanh" (also for "") or "relu". Every parameter is
// drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)) using g, as PyTorch. The
// parameters are Float32 unless a dtype is given.
func NewRNNCell(g *tensor.Generator, inputSize, hiddenSize int, bias bool, nonlinearity string, dt ...tensor.DType) *RNNCell {
	mode := rnnModeOf("NewRNNCell", nonlinearity)
	c := &RNNCell{cell: newCell("NewRNNCell", mode, inputSize, hiddenSize)}
	c.Nonlinearity = map[rnnMode]string{modeRNNTanh: "tanh", modeRNNReLU: "relu"}[mode]
	c.RecurrentWeights = newRecurrentWeights(&c.Base, g, "NewRNNCell", mode, inputSize, hiddenSize, bias, "", pickDType(dt))
	return c
}

// Forward is Step with a zero initial state.
func (c *RNNCell) Forward(x *autograd.Var) *autograd.Var { return c.Step(x, nil) }

// Step maps the input x ([N, input], or unbatched [input]) and the state h
// ([N, hidden] or [hidden]; nil for zeros) to the next state.
func (c *RNNCell) Step(x, h *autograd.Var) *autograd.Var {
	x, h, unb := c.prepare("RNNCell.Step", x, h)
	h2, _ := c.step(c.mode, c.inputProj(x), h, nil, false)
	return squeezeIf(h2, unb)
}

// String describes the cell as PyTorch prints it.
func (c *RNNCell) String() string {
	s := fmt.Sprintf("RNNCell(%d, %d", c.InputSize, c.HiddenSize)
	if c.BiasIH == nil {
		s += ", bias=False"
	}
	if c.mode == modeRNNReLU {
		s += ", nonlinearity=relu"
	}
	return s + ")"
}

// LSTMCell is one step of a long short-term memory network, as
// torch.nn.LSTMCell: with gates i, f, g, o (in that order in the weights),
// c' = σ(f)·c + σ(i)·tanh(g) and h' = σ(o)·tanh(c').
type LSTMCell struct{ cell }

// NewLSTMCell returns an LSTMCell initialized as NewRNNCell.
func NewLSTMCell(g *tensor.Generator, inputSize, hiddenSize int, bias bool, dt ...tensor.DType) *LSTMCell {
	c := &LSTMCell{newCell("NewLSTMCell", modeLSTM, inputSize, hiddenSize)}
	c.RecurrentWeights = newRecurrentWeights(&c.Base, g, "NewLSTMCell", modeLSTM, inputSize, hiddenSize, bias, "", pickDType(dt))
	return c
}

// Forward returns the hidden state of Step from zero states.
func (c *LSTMCell) Forward(x *autograd.Var) *autograd.Var {
	h, _ := c.Step(x, nil, nil)
	return h
}

// Step maps the input x ([N, input] or [input]) and the states h and c
// ([N, hidden] or [hidden]; nil for zeros) to the next (h, c).
func (c *LSTMCell) Step(x, h, cs *autograd.Var) (*autograd.Var, *autograd.Var) {
	x2, h, unb := c.prepare("LSTMCell.Step", x, h)
	_, cs, _ = c.prepare("LSTMCell.Step", x, cs)
	h2, c2 := c.step(c.mode, c.inputProj(x2), h, cs, false)
	return squeezeIf(h2, unb), squeezeIf(c2, unb)
}

// String describes the cell as PyTorch prints it.
func (c *LSTMCell) String() string {
	if c.BiasIH == nil {
		return fmt.Sprintf("LSTMCell(%d, %d, bias=False)", c.InputSize, c.HiddenSize)
	}
	return fmt.Sprintf("LSTMCell(%d, %d)", c.InputSize, c.HiddenSize)
}

// GRUCell is one step of a gated recurrent unit, as torch.nn.GRUCell: with
// gates r, z, n (in that order in the weights), r = σ(W_ir x + b_ir + W_hr h
// + b_hr), z likewise, n = tanh(W_in x + b_in + r·(W_hn h + b_hn)) and
// h' = (1-z)·n + z·h.
type GRUCell struct{ cell }

// NewGRUCell returns a GRUCell initialized as NewRNNCell.
func NewGRUCell(g *tensor.Generator, inputSize, hiddenSize int, bias bool, dt ...tensor.DType) *GRUCell {
	c := &GRUCell{newCell("NewGRUCell", modeGRU, inputSize, hiddenSize)}
	c.RecurrentWeights = newRecurrentWeights(&c.Base, g, "NewGRUCell", modeGRU, inputSize, hiddenSize, bias, "", pickDType(dt))
	return c
}

// Forward is Step with a zero initial state.
func (c *GRUCell) Forward(x *autograd.Var) *autograd.Var { return c.Step(x, nil) }

// Step maps the input x ([N, input] or [input]) and the state h
// ([N, hidden] or [hidden]; nil for zeros) to the next state.
func (c *GRUCell) Step(x, h *autograd.Var) *autograd.Var {
	x, h, unb := c.prepare("GRUCell.Step", x, h)
	h2, _ := c.step(c.mode, c.inputProj(x), h, nil, false)
	return squeezeIf(h2, unb)
}

// String describes the cell as PyTorch prints it.
func (c *GRUCell) String() string {
	if c.BiasIH == nil {
		return fmt.Sprintf("GRUCell(%d, %d, bias=False)", c.InputSize, c.HiddenSize)
	}
	return fmt.Sprintf("GRUCell(%d, %d)", c.InputSize, c.HiddenSize)
}
