package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Shape inference.
//
// NewSession propagates the declared input shapes through the main graph
// for the common operators (elementwise and broadcasting ops, MatMul, Gemm,
// Conv, pooling, normalization, Softmax, Flatten, Reshape with a constant
// shape, Transpose, Concat, Squeeze/Unsqueeze, Shape, Cast, ...). A
// dimension is a Dim: static (Value >= 0), symbolic (Param names a
// dimension fixed only at run time, such as "batch"), or unknown (Value -1,
// no Param). Values produced by operators outside the table, or whose shape
// depends on run-time data, have no inferred shape and are left to the
// operators to check.
//
// Inference is conservative: it reports an error only for a definite
// conflict between static dimensions (shapes that cannot broadcast, a
// MatMul whose inner dimensions differ, a Conv whose channels do not match
// its weight). At load such a conflict fails NewSession; at Run the same
// propagation is repeated with the fed shapes before any kernel runs, so a
// bad input fails fast with a message naming the node instead of in the
// middle of the graph.

// shapeEnv maps value names to their inferred shapes; a missing name has
// an unknown shape (not even its rank is known).
type shapeEnv map[string][]Dim

// shapeFunc infers the output shapes of n from its input shapes (nil where
// unknown) and the constant values among its inputs (nil where not
// constant). A nil output shape is unknown.
type shapeFunc func(n *node, in [][]Dim, consts []*tensor.Tensor) ([][]Dim, error)

// unknownDim is a dimension nothing is known about.
var unknownDim = Dim{Value: -1}

// static returns a static dimension of size v.
func static(v int) Dim { return Dim{Value: int64(v)} }

// isStatic reports whether d has a known size.
func (d Dim) isStatic() bool { return d.Value >= 0 }

// shapeFuncs holds the inference rule of each operator of the default
// domain that has one. It is built once and never modified.
var shapeFuncs = buildShapeFuncs()

func buildShapeFuncs() map[string]shapeFunc {
	m := map[string]shapeFunc{}
	for _, op := range []string{
		"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sqrt", "Erf",
		"Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Not", "Elu", "Selu",
		"Softplus", "Softsign", "HardSigmoid", "HardSwish", "Gelu", "Mish", "Celu", "Clip",
		"Softmax", "LogSoftmax", "Hardmax", "Identity", "Cast", "CastLike", "InstanceNormalization",
		"LpNormalization", "IsNaN", "IsInf", "ThresholdedRelu", "Shrink",
	} {
		m[op] = sameShape
	}
	for _, op := range []string{
		"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less",
		"Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "PRelu",
		"Mod", "BitShift",
	} {
		m[op] = broadcastShapes
	}
	m["BatchNormalization"] = firstShape
	m["LayerNormalization"] = firstShape
	m["Dropout"] = dropoutShape
	m["MatMul"] = matMulShape
	m["Gemm"] = gemmShape
	m["Conv"] = convShape
	m["MaxPool"] = poolShape
	m["AveragePool"] = poolShape
	m["LpPool"] = poolShape
	m["GlobalAveragePool"] = globalPoolShape
	m["GlobalMaxPool"] = globalPoolShape
	m["GlobalLpPool"] = globalPoolShape
	m["Flatten"] = flattenShape
	m["Reshape"] = reshapeShape
	m["Transpose"] = transposeShape
	m["Concat"] = concatShape
	m["Unsqueeze"] = unsqueezeShape
	m["Squeeze"] = squeezeShape
	m["Shape"] = shapeOfShape
	m["QuantizeLinear"] = sameShape
	m["DequantizeLinear"] = sameShape
	m["DynamicQuantizeLinear"] = dynamicQuantizeShape
	m["MatMulInteger"] = matMulShape
	m["ConvInteger"] = convShape
	// The quantized forms take their data and weight as inputs 0 and 3.
	m["QLinearMatMul"] = onInputs(matMulShape, 0, 3)
	m["QLinearConv"] = onInputs(convShape, 0, 3)
	return m
}

// onInputs applies f to the inputs at positions idx only.
func onInputs(f shapeFunc, idx ...int) shapeFunc {
	return func(n *node, in [][]Dim, c []*tensor.Tensor) ([][]Dim, error) {
		sub := make([][]Dim, len(idx))
		for i, j := range idx {
			if j < len(in) {
				sub[i] = in[j]
			}
		}
		return f(n, sub, nil)
	}
}

// dynamicQuantizeShape gives the input's shape and two scalars.
func dynamicQuantizeShape(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, nil
	}
	return [][]Dim{slices.Clone(in[0]), {}, {}}, nil
}

// inferShapes propagates env (the shapes of the graph inputs) through p's
// nodes and returns every value's inferred shape, constants included.
// Nodes of other domains and control flow get unknown outputs.
func (p *plan) inferShapes(env shapeEnv) (shapeEnv, error) {
	out := make(shapeEnv, len(env)+len(p.consts)+len(p.nodes))
	for name, dims := range env {
		out[name] = dims
	}
	for name, t := range p.consts {
		out[name] = staticDims(t.Shape())
	}
	for _, n := range p.nodes {
		f := shapeFuncs[n.opType]
		if n.domain != "" || f == nil {
			continue
		}
		in := make([][]Dim, n.numIn)
		consts := make([]*tensor.Tensor, n.numIn)
		for i, name := range n.inputs[:n.numIn] {
			in[i] = out[name]
			consts[i] = p.consts[name]
		}
		outs, err := inferNode(f, n, in, consts)
		if err != nil {
			return nil, err
		}
		for i, name := range n.outputs {
			if name != "" && i < len(outs) && outs[i] != nil {
				out[name] = outs[i]
			}
		}
	}
	return out, nil
}

// inferNode runs f, turning a panic (a rule meeting a malformed node) into
// an unknown result: inference must never stop a model that the operators
// themselves would accept or reject with their own messages.
func inferNode(f shapeFunc, n *node, in [][]Dim, consts []*tensor.Tensor) (outs [][]Dim, err error) {
	defer func() {
		if recover() != nil {
			outs, err = nil, nil
		}
	}()
	outs, err = f(n, in, consts)
	if err != nil {
		return nil, fmt.Errorf("onnx: shape inference: %v: %w", n, err)
	}
	return outs, nil
}

// staticDims converts a concrete shape to dims.
func staticDims(shape []int) []Dim {
	d := make([]Dim, len(shape))
	for i, v := range shape {
		d[i] = static(v)
	}
	return d
}

// formatDims writes dims like a shape: [batch 3 224 224].
func formatDims(d []Dim) string {
	s := "["
	for i, x := range d {
		if i > 0 {
			s += " "
		}
		s += x.String()
	}
	return s + "]"
}

func sameShape(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, nil
	}
	return [][]Dim{slices.Clone(in[0])}, nil
}

func firstShape(n *node, in [][]Dim, c []*tensor.Tensor) ([][]Dim, error) {
	return sameShape(n, in, c)
}

func dropoutShape(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, nil
	}
	return [][]Dim{slices.Clone(in[0]), slices.Clone(in[0])}, nil
}

// broadcastDim merges two dimensions under multidirectional broadcasting.
func broadcastDim(a, b Dim) (Dim, bool) {
	switch {
	case a.isStatic() && b.isStatic():
		if a.Value == b.Value || b.Value == 1 {
			return a, true
		}
		if a.Value == 1 {
			return b, true
		}
		return unknownDim, false
	case a.isStatic():
		if a.Value == 1 {
			return b, true
		}
		return a, true // b must be a.Value or 1
	case b.isStatic():
		if b.Value == 1 {
			return a, true
		}
		return b, true
	case a.Param != "" && a.Param == b.Param:
		return a, true
	}
	return unknownDim, true
}

// broadcast merges shapes under multidirectional broadcasting; nil when any
// is unknown.
func broadcast(shapes ...[]Dim) ([]Dim, error) {
	r := 0
	for _, s := range shapes {
		if s == nil {
			return nil, nil
		}
		r = max(r, len(s))
	}
	out := make([]Dim, r)
	for i := range out {
		out[i] = static(1)
	}
	for _, s := range shapes {
		off := r - len(s)
		for i, d := range s {
			m, ok := broadcastDim(out[off+i], d)
			if !ok {
				return nil, fmt.Errorf("shapes %s do not broadcast (axis %d: %v vs %v)", formatAll(shapes), off+i-r, out[off+i], d)
			}
			out[off+i] = m
		}
	}
	return out, nil
}

func formatAll(shapes [][]Dim) string {
	s := ""
	for i, d := range shapes {
		if i > 0 {
			s += ", "
		}
		s += formatDims(d)
	}
	return s
}

func broadcastShapes(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out, err := broadcast(in...)
	if err != nil || out == nil {
		return nil, err
	}
	return [][]Dim{out}, nil
}

// sameDim checks that two dimensions that must be equal can be.
func sameDim(a, b Dim) bool {
	return !a.isStatic() || !b.isStatic() || a.Value == b.Value
}

func matMulShape(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 2 || in[0] == nil || in[1] == nil || len(in[0]) == 0 || len(in[1]) == 0 {
		return nil, nil
	}
	a, b := slices.Clone(in[0]), slices.Clone(in[1])
	va, vb := len(a) == 1, len(b) == 1
	if va {
		a = []Dim{static(1), a[0]}
	}
	if vb {
		b = []Dim{b[0], static(1)}
	}
	k1, k2 := a[len(a)-1], b[len(b)-2]
	if !sameDim(k1, k2) {
		return nil, fmt.Errorf("inner dimensions of %s and %s differ (%v vs %v)", formatDims(in[0]), formatDims(in[1]), k1, k2)
	}
	batch, err := broadcast(a[:len(a)-2], b[:len(b)-2])
	if err != nil {
		return nil, err
	}
	out := batch
	if !va {
		out = append(out, a[len(a)-2])
	}
	if !vb {
		out = append(out, b[len(b)-1])
	}
	return [][]Dim{out}, nil
}

func gemmShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 2 || len(in[0]) != 2 || len(in[1]) != 2 {
		return nil, nil
	}
	a, b := in[0], in[1]
	if n.attrInt("transA", 0) != 0 {
		a = []Dim{a[1], a[0]}
	}
	if n.attrInt("transB", 0) != 0 {
		b = []Dim{b[1], b[0]}
	}
	if !sameDim(a[1], b[0]) {
		return nil, fmt.Errorf("inner dimensions of A %s and B %s differ (%v vs %v)", formatDims(in[0]), formatDims(in[1]), a[1], b[0])
	}
	out := []Dim{a[0], b[1]}
	if len(in) > 2 && in[2] != nil {
		if _, err := broadcast(out, in[2]); err != nil {
			return nil, fmt.Errorf("C: %w", err)
		}
	}
	return [][]Dim{out}, nil
}

// windowDims computes the spatial output dims of a convolution or pooling
// over input dims x [N, C, spatial...] with the given kernel; dims that
// are not static stay unknown (or keep their symbol when the window leaves
// them unchanged).
func windowDims(n *node, x []Dim, kernel []int, ceil bool) ([]Dim, error) {
	k := len(kernel)
	stride, err := n.intsOr("strides", k, 1)
	if err != nil {
		return nil, err
	}
	dil, err := n.intsOr("dilations", k, 1)
	if err != nil {
		return nil, err
	}
	pads, err := n.intsOr("pads", 2*k, 0)
	if err != nil {
		return nil, err
	}
	autoPad := n.attrString("auto_pad", "NOTSET")
	out := make([]Dim, k)
	for i := range k {
		d := x[2+i]
		if stride[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0 {
			return nil, fmt.Errorf("strides %v, dilations %v and kernel %v must be positive", stride, dil, kernel)
		}
		if !d.isStatic() {
			out[i] = unknownDim
			if stride[i] == 1 && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
				out[i] = d
			}
			continue
		}
		in := int(d.Value)
		span := dil[i]*(kernel[i]-1) + 1
		switch autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			out[i] = static((in + stride[i] - 1) / stride[i])
			continue
		case "VALID":
			pads[i], pads[k+i] = 0, 0
		}
		padded := in + pads[i] + pads[k+i]
		if padded < span {
			return nil, fmt.Errorf("input %s with pads %v is smaller than the kernel window %d on spatial axis %d", formatDims(x), pads, span, i)
		}
		o := (padded-span)/stride[i] + 1
		if ceil && (padded-span)%stride[i] != 0 {
			o++
			if (o-1)*stride[i] >= in+pads[i] {
				o-- // the last window must start inside the input or the begin pad
			}
		}
		out[i] = static(o)
	}
	return out, nil
}

func convShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 2 || in[0] == nil || in[1] == nil || len(in[0]) < 3 || len(in[0]) != len(in[1]) {
		return nil, nil
	}
	x, w := in[0], in[1]
	group := n.attrInt("group", 1)
	if group <= 0 {
		return nil, nil
	}
	if x[1].isStatic() && w[1].isStatic() && x[1].Value != w[1].Value*group {
		return nil, fmt.Errorf("input %s has %d channels, weight %s with group %d wants %d", formatDims(x), x[1].Value, formatDims(w), group, w[1].Value*group)
	}
	kernel := toInts(n.attrInts("kernel_shape"))
	if kernel == nil {
		for _, d := range w[2:] {
			if !d.isStatic() {
				return nil, nil
			}
			kernel = append(kernel, int(d.Value))
		}
	}
	if len(kernel) != len(x)-2 {
		return nil, nil
	}
	sp, err := windowDims(n, x, kernel, false)
	if err != nil {
		return nil, err
	}
	out := append([]Dim{x[0], w[0]}, sp...)
	if len(in) == 4 && n.opType != "ConvInteger" {
		// A fourth input is the residual that a Conv+Add fused by
		// optimize.go adds to the convolution (ConvInteger's is its
		// weight zero point).
		if out, err = broadcast(out, in[3]); err != nil {
			return nil, err
		}
	}
	return [][]Dim{out}, nil
}

func poolShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 1 || len(in[0]) < 3 {
		return nil, nil
	}
	x := in[0]
	kernel := toInts(n.attrInts("kernel_shape"))
	if len(kernel) != len(x)-2 {
		return nil, nil
	}
	sp, err := windowDims(n, x, kernel, n.attrInt("ceil_mode", 0) != 0)
	if err != nil {
		return nil, err
	}
	out := append([]Dim{x[0], x[1]}, sp...)
	if n.opType == "MaxPool" {
		return [][]Dim{out, slices.Clone(out)}, nil
	}
	return [][]Dim{out}, nil
}

func globalPoolShape(_ *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 1 || len(in[0]) < 2 {
		return nil, nil
	}
	out := slices.Clone(in[0])
	for i := 2; i < len(out); i++ {
		out[i] = static(1)
	}
	return [][]Dim{out}, nil
}

// product multiplies dims; unknown when any is not static.
func product(ds []Dim) Dim {
	p := int64(1)
	for _, d := range ds {
		if !d.isStatic() {
			return unknownDim
		}
		p *= d.Value
	}
	return Dim{Value: p}
}

func flattenShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 1 || in[0] == nil {
		return nil, nil
	}
	x := in[0]
	axis := int(n.attrInt("axis", 1))
	if axis < 0 {
		axis += len(x)
	}
	if axis < 0 || axis > len(x) {
		return nil, nil
	}
	outer, inner := product(x[:axis]), product(x[axis:])
	if axis == 1 {
		outer = x[0]
	}
	if axis == len(x)-1 {
		inner = x[len(x)-1]
	}
	return [][]Dim{{outer, inner}}, nil
}

func reshapeShape(n *node, in [][]Dim, consts []*tensor.Tensor) ([][]Dim, error) {
	if len(consts) < 2 || consts[1] == nil || in[0] == nil || consts[1].DType() != tensor.Int64 {
		return nil, nil
	}
	x := in[0]
	shape := consts[1].Int64s()
	allowZero := n.attrInt("allowzero", 0) == 1
	out := make([]Dim, len(shape))
	infer := -1
	for i, v := range shape {
		switch {
		case v == 0 && !allowZero:
			if i >= len(x) {
				return nil, nil
			}
			out[i] = x[i]
		case v == -1:
			if infer >= 0 {
				return nil, nil
			}
			infer = i
		case v < 0:
			return nil, nil
		default:
			out[i] = Dim{Value: v}
		}
	}
	if infer >= 0 {
		total, known := product(x), product(slices.Delete(slices.Clone(out), infer, infer+1))
		out[infer] = unknownDim
		if total.isStatic() && known.isStatic() && known.Value > 0 {
			if total.Value%known.Value != 0 {
				return nil, fmt.Errorf("cannot reshape %s to %v", formatDims(x), shape)
			}
			out[infer] = Dim{Value: total.Value / known.Value}
		}
	} else if total, want := product(x), product(out); total.isStatic() && want.isStatic() && total.Value != want.Value {
		return nil, fmt.Errorf("cannot reshape %s (%d elements) to %v (%d)", formatDims(x), total.Value, shape, want.Value)
	}
	return [][]Dim{out}, nil
}

func transposeShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 1 || in[0] == nil {
		return nil, nil
	}
	x := in[0]
	perm := toInts(n.attrInts("perm"))
	if perm == nil {
		for i := len(x) - 1; i >= 0; i-- {
			perm = append(perm, i)
		}
	}
	if len(perm) != len(x) {
		return nil, fmt.Errorf("perm %v does not fit rank %d", perm, len(x))
	}
	out := make([]Dim, len(x))
	for i, p := range perm {
		if p < 0 || p >= len(x) {
			return nil, fmt.Errorf("perm %v out of range for rank %d", perm, len(x))
		}
		out[i] = x[p]
	}
	return [][]Dim{out}, nil
}

func concatShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) == 0 || !n.has("axis") {
		return nil, nil
	}
	for _, s := range in {
		if s == nil || len(s) != len(in[0]) {
			return nil, nil
		}
	}
	r := len(in[0])
	axis := int(n.attrInt("axis", 0))
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return nil, nil
	}
	out := slices.Clone(in[0])
	total := int64(0)
	for _, s := range in {
		for i, d := range s {
			if i == axis {
				continue
			}
			if !sameDim(out[i], d) {
				return nil, fmt.Errorf("inputs %s differ off the concat axis %d", formatAll(in), axis)
			}
			if !out[i].isStatic() && d.isStatic() {
				out[i] = d
			}
		}
		if total >= 0 && s[axis].isStatic() {
			total += s[axis].Value
		} else {
			total = -1
		}
	}
	out[axis] = Dim{Value: total}
	return [][]Dim{out}, nil
}

// constAxes returns the axes of Squeeze/Unsqueeze: the attribute before
// opset 13, the constant second input from it; ok is false when they are
// not known at load.
func constAxes(n *node, consts []*tensor.Tensor) (axes []int, given, ok bool) {
	if n.opset < 13 {
		v := toInts(n.attrInts("axes"))
		return v, v != nil, true
	}
	if len(consts) < 2 {
		return nil, false, true
	}
	if consts[1] == nil {
		return nil, false, false
	}
	return ints(consts[1]), true, true
}

func unsqueezeShape(n *node, in [][]Dim, consts []*tensor.Tensor) ([][]Dim, error) {
	axes, given, ok := constAxes(n, consts)
	if !ok || !given || in[0] == nil {
		return nil, nil
	}
	r := len(in[0]) + len(axes)
	ins := make([]bool, r)
	for _, a := range axes {
		if a < 0 {
			a += r
		}
		if a < 0 || a >= r || ins[a] {
			return nil, nil
		}
		ins[a] = true
	}
	out := make([]Dim, 0, r)
	j := 0
	for i := range r {
		if ins[i] {
			out = append(out, static(1))
		} else {
			out = append(out, in[0][j])
			j++
		}
	}
	return [][]Dim{out}, nil
}

func squeezeShape(n *node, in [][]Dim, consts []*tensor.Tensor) ([][]Dim, error) {
	axes, given, ok := constAxes(n, consts)
	x := in[0]
	if !ok || x == nil {
		return nil, nil
	}
	drop := make([]bool, len(x))
	if !given {
		for i, d := range x {
			if !d.isStatic() {
				return nil, nil // a symbolic 1 would be squeezed at run time
			}
			drop[i] = d.Value == 1
		}
	}
	for _, a := range axes {
		if a < 0 {
			a += len(x)
		}
		if a < 0 || a >= len(x) {
			return nil, nil
		}
		if x[a].isStatic() && x[a].Value != 1 {
			return nil, fmt.Errorf("cannot squeeze axis %d of size %d in %s", a, x[a].Value, formatDims(x))
		}
		drop[a] = true
	}
	var out []Dim
	for i, d := range x {
		if !drop[i] {
			out = append(out, d)
		}
	}
	if out == nil {
		out = []Dim{}
	}
	return [][]Dim{out}, nil
}

func shapeOfShape(n *node, in [][]Dim, _ []*tensor.Tensor) ([][]Dim, error) {
	if len(in) < 1 || in[0] == nil {
		return nil, nil
	}
	r := len(in[0])
	start, end := int(n.attrInt("start", 0)), int(n.attrInt("end", int64(r)))
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	start, end = min(max(start, 0), r), min(max(end, 0), r)
	return [][]Dim{{static(max(end-start, 0))}}, nil
}

// declaredShapes returns the declared shapes of the graph inputs that have
// one.
func (m *Model) declaredShapes() shapeEnv {
	env := shapeEnv{}
	for _, v := range m.Inputs {
		if v.HasShape && (v.Kind == "" || v.Kind == "tensor") {
			env[v.Name] = slices.Clone(v.Shape)
		}
	}
	return env
}

// ValueShape returns the shape inferred at load for the named value of the
// main graph (an input, an intermediate or an output): static dimensions,
// symbolic ones (Param set, as declared by the model's inputs) and unknown
// ones (Value -1, no Param). ok is false when nothing is known about the
// value, not even its rank.
func (s *Session) ValueShape(name string) (dims []Dim, ok bool) {
	d, ok := s.shapes[name]
	return slices.Clone(d), ok
}

// checkShapes binds the symbolic dimensions of the declared inputs to the
// fed sizes (one symbol must have one size across all inputs) and
// propagates the fed shapes through the graph, so a shape conflict is
// reported before any kernel runs.
func (s *Session) checkShapes(inputs map[string]*tensor.Tensor) error {
	bound := map[string]int{}
	boundBy := map[string]string{}
	env := make(shapeEnv, len(inputs))
	for _, v := range s.model.Inputs {
		t, ok := inputs[v.Name]
		if !ok {
			continue
		}
		shape := t.Shape()
		if v.HasShape && len(shape) == len(v.Shape) {
			for i, d := range v.Shape {
				if d.Param == "" || d.isStatic() {
					continue
				}
				if b, seen := bound[d.Param]; seen && b != shape[i] {
					return fmt.Errorf("onnx: input %q has shape %v: dimension %q (axis %d) is %d, but input %q set it to %d", v.Name, shape, d.Param, i, shape[i], boundBy[d.Param], b)
				}
				bound[d.Param], boundBy[d.Param] = shape[i], v.Name
			}
		}
	}
	for name, t := range inputs {
		if t != nil {
			env[name] = staticDims(t.Shape())
		}
	}
	_, err := s.plan.inferShapes(env)
	return err
}
