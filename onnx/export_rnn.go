package onnx

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Export of the recurrent layers. nn.RNN, nn.LSTM and nn.GRU record their
// outputs (output, h_n and, for LSTM, c_n) as one composite op "RNN",
// "LSTM" or "GRU" (see nn's recurrent.annotate): inputs x, h0, c0 (nil when
// not given) and weight_ih, weight_hh, bias_ih, bias_hh per layer and
// direction. They are written as torch.onnx writes them: one ONNX node per
// layer, the layer's directions stacked ([num_directions, ...]) with
// direction="bidirectional", the next layer's input made from Y
// [T, dirs, N, H] by Squeeze (one direction) or Transpose and Reshape (two),
// h_n and c_n the concatenation of the layers' Y_h and Y_c, batch-first
// inputs and outputs transposed to and from time-major.

// onnxGateOrder is, per op, the PyTorch gate block written at each ONNX
// gate position: LSTM ONNX i,o,f,c from PyTorch i,f,g,o; GRU ONNX z,r,h
// from PyTorch r,z,n.
var onnxGateOrder = map[string][]int{"RNN": {0}, "LSTM": {0, 3, 1, 2}, "GRU": {1, 0, 2}}

// reorderGates returns t ([gates·hidden, ...]) with its gate blocks
// reordered from PyTorch's layout to ONNX's.
func reorderGates(t *tensor.Tensor, order []int, hidden int) *tensor.Tensor {
	blocks := make([]*tensor.Tensor, len(order))
	for i, k := range order {
		blocks[i] = t.Narrow(0, k*hidden, hidden)
	}
	return tensor.Concat(blocks, 0)
}

// derivedInit writes t as an initializer named after the parameter p plus
// suffix (an anonymous name when p is not a named parameter).
func (e *exporter) derivedInit(p *autograd.Var, suffix string, t *tensor.Tensor) string {
	name, ok := e.params[p]
	if ok {
		name += suffix
	}
	if !ok || e.used[name] {
		name = e.fresh("rnn" + suffix)
	}
	e.used[name] = true
	return e.init(name, t)
}

// multi appends a node with nOut outputs and returns their names.
func (e *exporter) multi(op string, inputs []string, nOut int, attrs ...exAttr) []string {
	outs := make([]string, nOut)
	for i := range outs {
		outs[i] = e.fresh(op)
	}
	for len(inputs) > 0 && inputs[len(inputs)-1] == "" {
		inputs = inputs[:len(inputs)-1]
	}
	e.graph.nodes = append(e.graph.nodes, &exNode{op: op, name: "node_" + outs[0], inputs: inputs, outputs: outs, attrs: attrs})
	return outs
}

// recurrent translates one output of a recurrent layer's composite op,
// writing the layer's nodes on the first of its outputs visited.
func (e *exporter) recurrent(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	out := nInt(n, "output")
	if done, ok := e.rnnOuts[n.Attrs["call"]]; ok {
		return done[out], nil
	}
	if active, _ := n.Attrs["dropoutActive"].(bool); active {
		return "", e.unsupported(v, n, "inter-layer dropout in training mode; call model.Train(false) (Export does)")
	}
	hidden, layers := nInt(n, "hiddenSize"), nInt(n, "numLayers")
	bidir, _ := n.Attrs["bidirectional"].(bool)
	batchFirst, _ := n.Attrs["batchFirst"].(bool)
	dirs := 1
	direction := "forward"
	if bidir {
		dirs, direction = 2, "bidirectional"
	}
	order := onnxGateOrder[n.Op]
	x := n.Inputs[0]
	unbatched := x.Dim() == 2
	unsq := func(s string) string {
		if s == "" || !unbatched {
			return s
		}
		return e.node("Unsqueeze", []string{s, e.ints(1)})
	}
	// Time-major, batched input and states.
	layerIn := in[0]
	switch {
	case unbatched:
		layerIn = unsq(layerIn)
	case batchFirst:
		layerIn = e.node("Transpose", []string{layerIn}, attrIs("perm", []int{1, 0, 2}))
	}
	h0, c0 := unsq(in[1]), unsq(in[2])
	seqLens := ""
	if lengths := nInts(n, "lengths"); lengths != nil {
		l32 := make([]int32, len(lengths))
		for i, l := range lengths {
			l32[i] = int32(l)
		}
		name := "sequence_lens"
		if e.used[name] {
			name = e.fresh(name)
		}
		e.used[name] = true
		seqLens = e.init(name, tensor.FromSlice(l32, len(l32)))
		e.warnf("onnx.Export: op %d (%s) writes its sequence lengths %v as a constant; the exported graph only takes batch size %d", e.step, n.Op, lengths, len(lengths))
	}
	attrs := []exAttr{attrI("hidden_size", hidden), attrS("direction", direction)}
	switch n.Op {
	case "RNN":
		act := "Tanh"
		if s, _ := n.Attrs["nonlinearity"].(string); s == "relu" {
			act = "Relu"
		}
		acts := make([]string, dirs)
		for i := range acts {
			acts[i] = act
		}
		attrs = append(attrs, attrSs("activations", acts...))
	case "GRU":
		attrs = append(attrs, attrI("linear_before_reset", 1))
	}
	nOut := 2
	if n.Op == "LSTM" {
		nOut = 3
	}
	// layerState slices layer l's directions out of a [layers·dirs, N, H]
	// state.
	layerState := func(s string, l int) string {
		if s == "" || layers == 1 {
			return s
		}
		return e.node("Slice", []string{s, e.ints(l * dirs), e.ints((l + 1) * dirs), e.ints(0)})
	}
	var hs, cs []string
	for l := range layers {
		var ws, rs, bs []*tensor.Tensor
		for d := range dirs {
			k := 3 + 4*(l*dirs+d)
			wih, whh, bih, bhh := n.Inputs[k], n.Inputs[k+1], n.Inputs[k+2], n.Inputs[k+3]
			ws = append(ws, reorderGates(wih.Value(), order, hidden))
			rs = append(rs, reorderGates(whh.Value(), order, hidden))
			if bih != nil {
				bs = append(bs, tensor.Concat([]*tensor.Tensor{
					reorderGates(bih.Value(), order, hidden), reorderGates(bhh.Value(), order, hidden)}, 0))
			}
		}
		k := 3 + 4*l*dirs
		w := e.derivedInit(n.Inputs[k], ".onnx_W", tensor.Stack(ws, 0))
		r := e.derivedInit(n.Inputs[k+1], ".onnx_R", tensor.Stack(rs, 0))
		b := ""
		if bs != nil {
			b = e.derivedInit(n.Inputs[k+2], ".onnx_B", tensor.Stack(bs, 0))
		}
		ins := []string{layerIn, w, r, b, seqLens, layerState(h0, l)}
		if n.Op == "LSTM" {
			ins = append(ins, layerState(c0, l))
		}
		res := e.multi(n.Op, ins, nOut, attrs...)
		// Y [T, dirs, N, H] → [T, N, dirs·H].
		if dirs == 1 {
			layerIn = e.node("Squeeze", []string{res[0], e.ints(1)})
		} else {
			t := e.node("Transpose", []string{res[0]}, attrIs("perm", []int{0, 2, 1, 3}))
			layerIn = e.node("Reshape", []string{t, e.ints(0, 0, -1)})
		}
		hs = append(hs, res[1])
		if nOut == 3 {
			cs = append(cs, res[2])
		}
	}
	join := func(s []string) string {
		if len(s) == 1 {
			return s[0]
		}
		return e.node("Concat", s, attrI("axis", 0))
	}
	outs := []string{layerIn, join(hs), ""}
	if cs != nil {
		outs[2] = join(cs)
	}
	switch {
	case unbatched:
		for i, s := range outs {
			if s != "" {
				outs[i] = e.node("Squeeze", []string{s, e.ints(1)})
			}
		}
	case batchFirst:
		outs[0] = e.node("Transpose", []string{outs[0]}, attrIs("perm", []int{1, 0, 2}))
	}
	if e.rnnOuts == nil {
		e.rnnOuts = map[any][]string{}
	}
	e.rnnOuts[n.Attrs["call"]] = outs
	if outs[out] == "" {
		return "", e.unsupported(v, n, fmt.Sprintf("output %d of %s does not exist", out, n.Op))
	}
	return outs[out], nil
}

// unbind translates the ops autograd's Unbind records: the hub standing
// for the unbound Var is the Var itself, and piece i is Gather of index i
// along the axis, as Select is written.
func (e *exporter) unbind(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	if n.Op == "UnbindStack" {
		return e.node("Identity", in), nil
	}
	axis, ok := n.Attrs["axis"].(int)
	idx, ok2 := n.Attrs["index"].(int)
	if !ok || !ok2 {
		return "", e.unsupported(v, n, "the Unbind piece records no axis and index")
	}
	c := e.init(e.fresh("const"), tensor.FromSlice([]int64{int64(idx)}).Reshape())
	return e.node("Gather", []string{in[0], c}, attrI("axis", axis)), nil
}
