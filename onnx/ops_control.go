package onnx

import (
	"context"
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Control flow: If, Loop and Scan run compiled subgraphs. Values a subgraph
// reads from enclosing graphs arrive as extra inputs after the node's own
// (node.numIn onwards).

func controlOps() opTable {
	return opTable{
		"If":   {{since: 1, impl: opIf}},
		"Loop": {{since: 1, impl: opLoop}},
		"Scan": {{since: 8, until: 8, impl: opScan8}, {since: 9, impl: opScan}},
	}
}

// runGraph runs the graph attribute name with the given formal inputs and
// the captured outer values in in[n.numIn:].
func (n *node) runGraph(name string, in []*tensor.Tensor, formal []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p := n.graphs[name]
	if p == nil {
		return nil, fmt.Errorf("onnx: %v: graph attribute %q is missing", n, name)
	}
	if len(formal) != len(p.inputs) {
		return nil, fmt.Errorf("onnx: %v: %s takes %d inputs, given %d", n, name, len(p.inputs), len(formal))
	}
	env := make(map[string]*tensor.Tensor, len(in)+len(p.nodes))
	for i, v := range n.inputs[n.numIn:] {
		env[v] = in[n.numIn+i]
	}
	for i, f := range p.inputs {
		env[f] = formal[i]
	}
	ctx := n.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return p.run(ctx, env)
}

// truth reads a one-element condition tensor.
func (n *node) truth(t *tensor.Tensor) (bool, error) {
	if t.Numel() != 1 {
		return false, fmt.Errorf("onnx: %v: condition of shape %v must hold one element", n, t.Shape())
	}
	return t.Reshape(-1).At(0) != 0, nil
}

func opIf(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	c, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	ok, err := n.truth(c)
	if err != nil {
		return nil, err
	}
	branch := "else_branch"
	if ok {
		branch = "then_branch"
	}
	return n.runGraph(branch, in, nil)
}

func opLoop(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	maxTrip := int64(-1)
	if t := arg(in, 0); t != nil && n.numIn > 0 {
		maxTrip = int64(t.Reshape(-1).At(0))
	}
	cond := true
	if t := arg(in, 1); t != nil && n.numIn > 1 {
		var err error
		if cond, err = n.truth(t); err != nil {
			return nil, err
		}
	}
	vals := slices.Clone(in[min(2, n.numIn):n.numIn])
	for i, v := range vals {
		if v == nil {
			return nil, fmt.Errorf("onnx: %v: loop-carried value %d is absent", n, i)
		}
	}
	body := n.graphs["body"]
	if body == nil {
		return nil, fmt.Errorf("onnx: %v: attribute body is missing", n)
	}
	nScan := len(body.outputs) - 1 - len(vals)
	if nScan < 0 {
		return nil, fmt.Errorf("onnx: %v: body has %d outputs for %d loop-carried values", n, len(body.outputs), len(vals))
	}
	scans := make([][]*tensor.Tensor, nScan)
	var scanned, scannedBytes int64
	for iter := int64(0); (maxTrip < 0 || iter < maxTrip) && cond; iter++ {
		if n.ctx != nil {
			if err := n.ctx.Err(); err != nil {
				return nil, fmt.Errorf("onnx: run stopped in %v: %w", n, err)
			}
		}
		formal := append([]*tensor.Tensor{
			tensor.FromSlice([]int64{iter}, []int{}...),
			tensor.FromSlice([]bool{cond}, []int{}...),
		}, vals...)
		outs, err := n.runGraph("body", in, formal)
		if err != nil {
			return nil, err
		}
		if cond, err = n.truth(outs[0]); err != nil {
			return nil, err
		}
		copy(vals, outs[1:1+len(vals)])
		for k := range nScan {
			t := outs[1+len(vals)+k]
			scans[k] = append(scans[k], t)
			scanned += int64(t.Numel())
			scannedBytes += tensorBytes(t)
		}
		if scanned > n.maxElements {
			return nil, fmt.Errorf("onnx: %v: scan outputs exceed %d elements", n, n.maxElements)
		}
		if err := n.checkScanned(scannedBytes); err != nil {
			return nil, err
		}
	}
	out := vals
	for _, s := range scans {
		if len(s) == 0 {
			out = append(out, tensor.Zeros([]int{0}))
			continue
		}
		out = append(out, tensor.Stack(s, 0))
	}
	return out, nil
}

// scanOutputs returns how many scan outputs the body of a Scan with states
// state variables has.
func (n *node) scanOutputs(states int) (int, error) {
	body := n.graphs["body"]
	if body == nil {
		return 0, fmt.Errorf("onnx: %v: attribute body is missing", n)
	}
	k := len(body.outputs) - states
	if k < 0 {
		return 0, fmt.Errorf("onnx: %v: body has %d outputs for %d states", n, len(body.outputs), states)
	}
	return k, nil
}

func opScan(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	m := int(n.attrInt("num_scan_inputs", 0))
	states := n.numIn - m
	if m <= 0 || states < 0 {
		return nil, fmt.Errorf("onnx: %v: num_scan_inputs %d does not fit %d inputs", n, m, n.numIn)
	}
	for i := range n.numIn {
		if in[i] == nil {
			return nil, fmt.Errorf("onnx: %v: input %d is absent", n, i)
		}
	}
	k, err := n.scanOutputs(states)
	if err != nil {
		return nil, err
	}
	attr := func(name string, count int) []int {
		v := toInts(n.attrInts(name))
		if v == nil {
			v = make([]int, count)
		}
		return v
	}
	inAxes, inDirs := attr("scan_input_axes", m), attr("scan_input_directions", m)
	outAxes, outDirs := attr("scan_output_axes", k), attr("scan_output_directions", k)
	if len(inAxes) != m || len(inDirs) != m || len(outAxes) != k || len(outDirs) != k {
		return nil, fmt.Errorf("onnx: %v: scan axes/directions do not match the inputs and outputs", n)
	}
	seq := -1
	scanIn := in[states:n.numIn]
	for j, x := range scanIn {
		a, err := n.normAxis(inAxes[j], x.Dim())
		if err != nil {
			return nil, err
		}
		inAxes[j] = a
		if seq >= 0 && x.Shape()[a] != seq {
			return nil, fmt.Errorf("onnx: %v: scan inputs differ in length", n)
		}
		seq = x.Shape()[a]
	}
	vals := slices.Clone(in[:states])
	outs := make([][]*tensor.Tensor, k)
	var scannedBytes int64
	for t := range seq {
		if n.ctx != nil {
			if err := n.ctx.Err(); err != nil {
				return nil, fmt.Errorf("onnx: run stopped in %v: %w", n, err)
			}
		}
		formal := slices.Clone(vals)
		for j, x := range scanIn {
			i := t
			if inDirs[j] == 1 {
				i = seq - 1 - t
			}
			formal = append(formal, x.Select(inAxes[j], i))
		}
		res, err := n.runGraph("body", in, formal)
		if err != nil {
			return nil, err
		}
		copy(vals, res[:states])
		for j := range k {
			outs[j] = append(outs[j], res[states+j])
			scannedBytes += tensorBytes(res[states+j])
		}
		if err := n.checkScanned(scannedBytes); err != nil {
			return nil, err
		}
	}
	result := vals
	for j, s := range outs {
		if len(s) == 0 {
			result = append(result, tensor.Zeros([]int{0}))
			continue
		}
		if outDirs[j] == 1 {
			slices.Reverse(s)
		}
		a, err := n.normAxis(outAxes[j], s[0].Dim()+1)
		if err != nil {
			return nil, err
		}
		result = append(result, tensor.Stack(s, a))
	}
	return result, nil
}

// opScan8 is Scan as opset 8 defined it: every input but the optional
// sequence_lens (input 0, one length per batch entry) has a leading batch
// axis, scan inputs run along axis 1, directions (0 forward, 1 reverse)
// apply per scan input, and each batch entry is scanned on its own. Scan
// outputs of entries shorter than the longest are padded with zeros, as
// ONNX Runtime pads them.
func opScan8(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	m := int(n.attrInt("num_scan_inputs", 0))
	states := n.numIn - 1 - m
	if m <= 0 || states < 0 {
		return nil, fmt.Errorf("onnx: %v: num_scan_inputs %d does not fit %d inputs", n, m, n.numIn)
	}
	k, err := n.scanOutputs(states)
	if err != nil {
		return nil, err
	}
	dirs := toInts(n.attrInts("directions"))
	if dirs == nil {
		dirs = make([]int, m)
	}
	if len(dirs) != m {
		return nil, fmt.Errorf("onnx: %v: %d directions for %d scan inputs", n, len(dirs), m)
	}
	batched := in[1:n.numIn]
	batch, seq := -1, -1
	for i, x := range batched {
		if x == nil {
			return nil, fmt.Errorf("onnx: %v: input %d is absent", n, i+1)
		}
		if x.Dim() < 1 || (batch >= 0 && x.Shape()[0] != batch) {
			return nil, fmt.Errorf("onnx: %v: inputs must share a leading batch axis", n)
		}
		batch = x.Shape()[0]
		if i >= states {
			if x.Dim() < 2 || (seq >= 0 && x.Shape()[1] != seq) {
				return nil, fmt.Errorf("onnx: %v: scan inputs must share their length on axis 1", n)
			}
			seq = x.Shape()[1]
		}
	}
	if batch <= 0 {
		return nil, fmt.Errorf("onnx: %v: empty batch", n)
	}
	lens := make([]int, batch)
	for b := range lens {
		lens[b] = seq
	}
	if sl := arg(in, 0); sl != nil {
		v := ints(sl)
		if len(v) != batch {
			return nil, fmt.Errorf("onnx: %v: %d sequence_lens for a batch of %d", n, len(v), batch)
		}
		for b, l := range v {
			if l < 0 || l > seq {
				return nil, fmt.Errorf("onnx: %v: sequence length %d of entry %d outside [0, %d]", n, l, b, seq)
			}
			lens[b] = l
		}
	}
	finals := make([][]*tensor.Tensor, states)
	scans := make([][]*tensor.Tensor, k)
	for b := range batch {
		vals := make([]*tensor.Tensor, states)
		for i := range vals {
			vals[i] = batched[i].Select(0, b)
		}
		steps := make([][]*tensor.Tensor, k)
		for t := range lens[b] {
			if n.ctx != nil {
				if err := n.ctx.Err(); err != nil {
					return nil, fmt.Errorf("onnx: run stopped in %v: %w", n, err)
				}
			}
			formal := slices.Clone(vals)
			for j, x := range batched[states:] {
				i := t
				if dirs[j] == 1 {
					i = lens[b] - 1 - t
				}
				formal = append(formal, x.Select(0, b).Select(0, i))
			}
			res, err := n.runGraph("body", in, formal)
			if err != nil {
				return nil, err
			}
			copy(vals, res[:states])
			for j := range k {
				steps[j] = append(steps[j], res[states+j])
			}
		}
		for i, v := range vals {
			finals[i] = append(finals[i], v)
		}
		for j, s := range steps {
			if len(s) == 0 {
				return nil, fmt.Errorf("onnx: %v: entry %d has no steps, so scan output %d has no element shape", n, b, j)
			}
			for len(s) < seq {
				s = append(s, tensor.ZerosLike(s[0]))
			}
			scans[j] = append(scans[j], tensor.Stack(s, 0))
		}
	}
	result := make([]*tensor.Tensor, 0, states+k)
	for _, f := range finals {
		result = append(result, tensor.Stack(f, 0))
	}
	for _, s := range scans {
		result = append(result, tensor.Stack(s, 0))
	}
	return result, nil
}

// checkScanned refuses scan outputs of a Loop or Scan that, gathered (the
// steps' outputs held, then stacked into one tensor), would take more than
// the session's byte budget.
func (n *node) checkScanned(stepBytes int64) error {
	if limit := n.byteLimit(); 2*stepBytes > limit {
		return fmt.Errorf("onnx: %v: scan outputs of %d bytes, stacked, exceed the limit of %d bytes (SessionOptions.MaxBytes)", n, stepBytes, limit)
	}
	return nil
}
