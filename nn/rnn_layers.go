package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// RNNOptions configures RNN, LSTM and GRU. The zero value is PyTorch's
// default: one layer, tanh, with biases, time-major, no dropout, one
// direction.
type RNNOptions struct {
	// NumLayers is the number of stacked layers (0 means 1).
	NumLayers int
	// Nonlinearity is "tanh" (also for "") or "relu"; RNN only.
	Nonlinearity string
	// NoBias drops the bias_ih and bias_hh parameters (bias=False).
	NoBias bool
	// BatchFirst takes and returns [N, T, features] instead of
	// [T, N, features]; the states keep [layers·dirs, N, hidden].
	BatchFirst bool
	// Dropout is the probability of dropping each output of every layer but
	// the last, in training mode only.
	Dropout float64
	// Bidirectional adds a layer running backwards in time beside each
	// layer; their outputs are concatenated.
	Bidirectional bool
}

// recurrent is the machinery shared by RNN, LSTM and GRU.
type recurrent struct {
	Base
	// InputSize and HiddenSize are the feature sizes of the input and the
	// hidden state.
	InputSize, HiddenSize int
	// Options holds the configuration, with NumLayers and Nonlinearity
	// resolved.
	Options RNNOptions
	// Weights are the parameters of layer l and direction d (0 forward, 1
	// reverse) at index l·dirs + d, registered as weight_ih_l<l>[_reverse],
	// weight_hh_l<l>[_reverse], bias_ih_l<l>[_reverse], bias_hh_l<l>[_reverse].
	Weights []RecurrentWeights
	mode    rnnMode
	gen     *tensor.Generator
}

func newRecurrent(g *tensor.Generator, op string, mode rnnMode, in, hidden int, opt RNNOptions) recurrent {
	if in <= 0 || hidden <= 0 {
		panic(fmt.Sprintf("nn.%s: input_size=%d and hidden_size=%d must be positive", op, in, hidden))
	}
	if opt.NumLayers == 0 {
		opt.NumLayers = 1
	}
	if opt.NumLayers < 0 {
		panic(fmt.Sprintf("nn.%s: num_layers=%d must be positive", op, opt.NumLayers))
	}
	if !(opt.Dropout >= 0 && opt.Dropout <= 1) {
		panic(fmt.Sprintf("nn.%s: dropout %v is not in [0, 1]", op, opt.Dropout))
	}
	checkGen(op, g)
	return recurrent{InputSize: in, HiddenSize: hidden, Options: opt, mode: mode, gen: g}
}

// register draws and registers the weights in PyTorch's order.
func (r *recurrent) register(g *tensor.Generator, op string, dt []tensor.DType) {
	d := pickDType(dt)
	for l := 0; l < r.Options.NumLayers; l++ {
		in := r.InputSize
		if l > 0 {
			in = r.HiddenSize * r.dirs()
		}
		for dir := 0; dir < r.dirs(); dir++ {
			suffix := fmt.Sprintf("_l%d", l)
			if dir == 1 {
				suffix += "_reverse"
			}
			r.Weights = append(r.Weights, newRecurrentWeights(&r.Base, g, op, r.mode, in, r.HiddenSize, !r.Options.NoBias, suffix, d))
		}
	}
}

func (r *recurrent) dirs() int {
	if r.Options.Bidirectional {
		return 2
	}
	return 1
}

// stateShape is the shape of h0, h_n, c0 and c_n.
func (r *recurrent) stateShape(n int, unbatched bool) []int {
	if unbatched {
		return []int{r.Options.NumLayers * r.dirs(), r.HiddenSize}
	}
	return []int{r.Options.NumLayers * r.dirs(), n, r.HiddenSize}
}

// state returns the given initial state in [layers·dirs, N, hidden] form,
// or zeros of like's dtype on like's device when s is nil.
func (r *recurrent) state(op, what string, s *autograd.Var, n int, unbatched bool, like *tensor.Tensor) *autograd.Var {
	if s == nil {
		return autograd.New(tensor.ZerosOn(like.Device(), r.stateShape(n, false), like.DType()))
	}
	if want := r.stateShape(n, unbatched); !sameInts(s.Shape(), want) {
		panic(fmt.Sprintf("nn.%s: %s shape %v must be %v", op, what, s.Shape(), want))
	}
	if unbatched {
		return s.Unsqueeze(1)
	}
	return s
}

// run applies the stacked recurrence. x is [T, N, in] ([N, T, in] with
// BatchFirst) or unbatched [T, in]; h0 and c0 may be nil; lengths, when
// non-nil, gives each sequence's valid length (1..T).
func (r *recurrent) run(op string, x, h0, c0 *autograd.Var, lengths []int) (out, hn, cn *autograd.Var) {
	s := x.Shape()
	if (len(s) != 2 && len(s) != 3) || s[len(s)-1] != r.InputSize {
		panic(fmt.Sprintf("nn.%s: input shape %v must be [T, N, %d] ([N, T, %d] with BatchFirst) or unbatched [T, %d]",
			op, s, r.InputSize, r.InputSize, r.InputSize))
	}
	unbatched := len(s) == 2
	xIn, h0In, c0In := x, h0, c0
	switch {
	case unbatched:
		x = x.Unsqueeze(1)
	case r.Options.BatchFirst:
		x = x.Transpose(0, 1)
	}
	steps, n := x.Shape()[0], x.Shape()[1]
	if steps == 0 {
		panic(fmt.Sprintf("nn.%s: input shape %v has no time steps", op, s))
	}
	invalid := stepMasks(op, lengths, steps, n, x.Value())
	h0 = r.state(op, "h0", h0, n, unbatched, x.Value())
	if r.mode == modeLSTM {
		c0 = r.state(op, "c0", c0, n, unbatched, x.Value())
	}
	var hs, cs []*autograd.Var
	layerIn := x
	for l := 0; l < r.Options.NumLayers; l++ {
		dirOut := make([]*autograd.Var, r.dirs())
		for d := range dirOut {
			k := l*r.dirs() + d
			w := r.Weights[k]
			gi := w.inputProj(layerIn) // one MatMul for every time step
			h := h0.Select(0, k)
			var c *autograd.Var
			if c0 != nil {
				c = c0.Select(0, k)
			}
			if r.mode == modeGRU && invalid == nil {
				// The whole recurrence as one op: fused gates, and one
				// product for the hidden weight's gradient over all steps.
				seq := autograd.GRUSequence(gi, h, w.WeightHH, w.BiasHH, d == 1)
				dirOut[d] = seq
				last := steps - 1
				if d == 1 {
					last = 0
				}
				hs = append(hs, seq.Select(0, last))
				continue
			}
			xs := gi.Unbind(0) // one backward for all steps, not one per step
			outs := make([]*autograd.Var, steps)
			for i := range steps {
				t := i
				if d == 1 {
					t = steps - 1 - i
				}
				h2, c2 := w.step(r.mode, xs[t], h, c, r.mode == modeGRU)
				if invalid == nil {
					outs[t], h, c = h2, h2, c2
					continue
				}
				outs[t] = h2.MaskedZero(invalid[t])
				h = autograd.Where(invalid[t], h, h2)
				if c != nil {
					c = autograd.Where(invalid[t], c, c2)
				}
			}
			dirOut[d] = autograd.Stack(outs, 0)
			hs = append(hs, h)
			if c != nil {
				cs = append(cs, c)
			}
		}
		layerIn = dirOut[0]
		if len(dirOut) > 1 {
			layerIn = autograd.Concat(dirOut, -1)
		}
		if l < r.Options.NumLayers-1 {
			layerIn = autograd.Dropout(layerIn, r.Options.Dropout, r.IsTraining(), r.gen)
		}
	}
	out, hn = layerIn, autograd.Stack(hs, 0)
	if cs != nil {
		cn = autograd.Stack(cs, 0)
	}
	switch {
	case unbatched:
		out, hn = out.Squeeze(1), hn.Squeeze(1)
		if cn != nil {
			cn = cn.Squeeze(1)
		}
	case r.Options.BatchFirst:
		out = out.Transpose(0, 1)
	}
	r.annotate(out, hn, cn, xIn, h0In, c0In, lengths)
	return out, hn, cn
}

// annotate records out, hn and cn (nil unless LSTM) as the outputs 0, 1 and
// 2 of one composite op "RNN", "LSTM" or "GRU" for graph readers
// (onnx.Export). Its inputs are the caller's x, h0 and c0 (nil when not
// given) followed by weight_ih, weight_hh, bias_ih and bias_hh of every
// layer and direction in Weights order (nil biases without bias). Its
// attributes are hiddenSize, numLayers, bidirectional, batchFirst,
// nonlinearity ("tanh"/"relu"; RNN only), lengths ([]int or nil),
// dropoutActive (inter-layer dropout applied in training mode), output
// (0, 1 or 2) and call, a pointer shared by the three outputs of one call.
func (r *recurrent) annotate(out, hn, cn, x, h0, c0 *autograd.Var, lengths []int) {
	op := map[rnnMode]string{modeRNNTanh: "RNN", modeRNNReLU: "RNN", modeLSTM: "LSTM", modeGRU: "GRU"}[r.mode]
	inputs := []*autograd.Var{x, h0, c0}
	for _, w := range r.Weights {
		inputs = append(inputs, w.WeightIH, w.WeightHH, w.BiasIH, w.BiasHH)
	}
	call := new(int)
	for i, v := range []*autograd.Var{out, hn, cn} {
		if v == nil {
			continue
		}
		attrs := map[string]any{
			"hiddenSize":    r.HiddenSize,
			"numLayers":     r.Options.NumLayers,
			"bidirectional": r.Options.Bidirectional,
			"batchFirst":    r.Options.BatchFirst,
			"nonlinearity":  map[rnnMode]string{modeRNNTanh: "tanh", modeRNNReLU: "relu"}[r.mode],
			"lengths":       append([]int(nil), lengths...),
			"dropoutActive": r.IsTraining() && r.Options.Dropout > 0 && r.Options.NumLayers > 1,
			"output":        i,
			"call":          call,
		}
		autograd.AnnotateOp(v, recurrentOps[op], attrs, inputs...)
	}
}

// stepMasks returns, per time step, the [N, 1] mask of the sequences
// already past their length, or nil when lengths is nil.
func stepMasks(op string, lengths []int, steps, n int, like *tensor.Tensor) []*tensor.Tensor {
	if lengths == nil {
		return nil
	}
	if len(lengths) != n {
		panic(fmt.Sprintf("nn.%s: %d lengths for a batch of %d sequences", op, len(lengths), n))
	}
	for i, l := range lengths {
		if l < 1 || l > steps {
			panic(fmt.Sprintf("nn.%s: lengths[%d]=%d is not in [1, %d]", op, i, l, steps))
		}
	}
	masks := make([]*tensor.Tensor, steps)
	for t := range masks {
		m := make([]bool, n)
		for i, l := range lengths {
			m[i] = t >= l
		}
		masks[t] = tensor.FromSlice(m, n, 1).ToDeviceOf(like)
	}
	return masks
}

// describe formats the PyTorch repr of a recurrent layer.
func (r *recurrent) describe(name string) string {
	s := fmt.Sprintf("%s(%d, %d", name, r.InputSize, r.HiddenSize)
	o := r.Options
	if o.NumLayers != 1 {
		s += fmt.Sprintf(", num_layers=%d", o.NumLayers)
	}
	if r.mode == modeRNNReLU {
		s += ", nonlinearity=relu"
	}
	if o.NoBias {
		s += ", bias=False"
	}
	if o.BatchFirst {
		s += ", batch_first=True"
	}
	if o.Dropout != 0 {
		s += ", dropout=" + pyFloat(o.Dropout)
	}
	if o.Bidirectional {
		s += ", bidirectional=True"
	}
	return s + ")"
}

// RNN is a multi-layer Elman RNN, as torch.nn.RNN: every layer applies
// h_t = act(x_t·W_ihᵀ + b_ih + h_{t-1}·W_hhᵀ + b_hh) over the sequence.
type RNN struct{ recurrent }

// NewRNN returns an RNN with PyTorch's parameter names and initialization
// (every parameter from U(-1/sqrt(hidden), 1/sqrt(hidden)) using g). g also
// draws the inter-layer dropout masks in training mode. The parameters are
// Float32 unless a dtype is given.
func NewRNN(g *tensor.Generator, inputSize, hiddenSize int, opt RNNOptions, dt ...tensor.DType) *RNN {
	mode := rnnModeOf("NewRNN", opt.Nonlinearity)
	r := &RNN{newRecurrent(g, "NewRNN", mode, inputSize, hiddenSize, opt)}
	r.Options.Nonlinearity = map[rnnMode]string{modeRNNTanh: "tanh", modeRNNReLU: "relu"}[mode]
	r.register(g, "NewRNN", dt)
	return r
}

// Forward returns the output of ForwardState from zero initial states.
func (r *RNN) Forward(x *autograd.Var) *autograd.Var {
	out, _ := r.ForwardState(x, nil, nil)
	return out
}

// ForwardState runs the RNN over x ([T, N, input], [N, T, input] with
// BatchFirst, or unbatched [T, input]) from the initial state h0
// ([layers·dirs, N, hidden], or [layers·dirs, hidden] unbatched; nil for
// zeros). It returns the last layer's outputs ([T, N, dirs·hidden], batch
// first with BatchFirst) and the final states h_n (shaped as h0).
//
// With lengths (one per sequence, each in 1..T) the batch is treated as
// padded variable-length sequences, as torch's pack_padded_sequence with
// enforce_sorted=False: outputs past a sequence's length are zero, h_n is
// its state at its last valid step, and the reverse direction starts at
// that step.
func (r *RNN) ForwardState(x, h0 *autograd.Var, lengths []int) (output, hn *autograd.Var) {
	output, hn, _ = r.run("RNN.ForwardState", x, h0, nil, lengths)
	return output, hn
}

// String describes the layer as PyTorch prints it.
func (r *RNN) String() string { return r.describe("RNN") }

// LSTM is a multi-layer long short-term memory network, as torch.nn.LSTM
// (without proj_size); each layer applies the LSTMCell recurrence.
type LSTM struct{ recurrent }

// NewLSTM returns an LSTM initialized as NewRNN. opt.Nonlinearity must be
// empty.
func NewLSTM(g *tensor.Generator, inputSize, hiddenSize int, opt RNNOptions, dt ...tensor.DType) *LSTM {
	if opt.Nonlinearity != "" {
		panic(fmt.Sprintf("nn.NewLSTM: Nonlinearity %q is only an RNN option", opt.Nonlinearity))
	}
	r := &LSTM{newRecurrent(g, "NewLSTM", modeLSTM, inputSize, hiddenSize, opt)}
	r.register(g, "NewLSTM", dt)
	return r
}

// Forward returns the output of ForwardState from zero initial states.
func (r *LSTM) Forward(x *autograd.Var) *autograd.Var {
	out, _, _ := r.ForwardState(x, nil, nil, nil)
	return out
}

// ForwardState is RNN.ForwardState with the cell states: c0 (nil for
// zeros) and c_n are shaped as h0 and h_n.
func (r *LSTM) ForwardState(x, h0, c0 *autograd.Var, lengths []int) (output, hn, cn *autograd.Var) {
	return r.run("LSTM.ForwardState", x, h0, c0, lengths)
}

// String describes the layer as PyTorch prints it.
func (r *LSTM) String() string { return r.describe("LSTM") }

// GRU is a multi-layer gated recurrent unit network, as torch.nn.GRU; each
// layer applies the GRUCell recurrence.
type GRU struct{ recurrent }

// NewGRU returns a GRU initialized as NewRNN. opt.Nonlinearity must be
// empty.
func NewGRU(g *tensor.Generator, inputSize, hiddenSize int, opt RNNOptions, dt ...tensor.DType) *GRU {
	if opt.Nonlinearity != "" {
		panic(fmt.Sprintf("nn.NewGRU: Nonlinearity %q is only an RNN option", opt.Nonlinearity))
	}
	r := &GRU{newRecurrent(g, "NewGRU", modeGRU, inputSize, hiddenSize, opt)}
	r.register(g, "NewGRU", dt)
	return r
}

// Forward returns the output of ForwardState from a zero initial state.
func (r *GRU) Forward(x *autograd.Var) *autograd.Var {
	out, _ := r.ForwardState(x, nil, nil)
	return out
}

// ForwardState is RNN.ForwardState for the GRU.
func (r *GRU) ForwardState(x, h0 *autograd.Var, lengths []int) (output, hn *autograd.Var) {
	output, hn, _ = r.run("GRU.ForwardState", x, h0, nil, lengths)
	return output, hn
}

// String describes the layer as PyTorch prints it.
func (r *GRU) String() string { return r.describe("GRU") }

// The composite ops the recurrent layers mark their outputs with
// (autograd.AnnotateOp): graph readers such as onnx.Export recognise these
// keys, never an op's name, so a user's op named "LSTM" is not taken for
// one. Do not reassign them.
var (
	RNNOp  = autograd.NewOpKey("RNN")
	LSTMOp = autograd.NewOpKey("LSTM")
	GRUOp  = autograd.NewOpKey("GRU")
)

// recurrentOps maps the layers' op names to their keys.
var recurrentOps = map[string]*autograd.OpKey{"RNN": RNNOp, "LSTM": LSTMOp, "GRU": GRUOp}
