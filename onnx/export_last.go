package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// This file maps the last tensor ops without an nn layer (Roll, CumProd),
// MaxUnpool2d (fed by the Indices output of the traced max-pooling), and
// guards the export against values computed outside the traced graph.

// maxCumProdLength is the longest axis CumProd is unrolled over.
const maxCumProdLength = 256

// last translates the ops that neither export.go nor export_more.go maps;
// anything else fails with an error naming the op.
func (e *exporter) last(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	switch n.Op {
	case "Roll":
		return e.roll(v, n, in[0])
	case "CumProd":
		return e.cumProd(v, n, in[0])
	case "MaxUnpool2d":
		return e.maxUnpool(v, n, in[0])
	}
	return "", e.unsupported(v, n, "")
}

// roll writes Roll along each axis as a Concat of two Slices: the last s
// elements, then the others (s is the shift modulo the traced size). Rolling
// a dynamic batch axis (axis 0 while an input's axis 0 is dynamic) or the
// flattened tensor fails, since the shift modulo the size would change.
func (e *exporter) roll(v *autograd.Var, n autograd.NodeInfo, x string) (string, error) {
	shifts, ok := n.Attrs["shifts"].([]int)
	if !ok {
		return "", e.unsupported(v, n, "the shifts were not recorded")
	}
	axes := nInts(n, "axes")
	shape := n.Inputs[0].Shape()
	if len(axes) == 0 {
		if e.dynamic {
			return "", e.unsupported(v, n, "rolling the flattened tensor depends on the dynamic batch size")
		}
		flat := e.node("Reshape", []string{x, e.ints(-1)})
		r := e.rollAxis(flat, 0, shifts[0], shapeNumel(shape))
		return e.node("Reshape", []string{r, e.node("Shape", []string{x})}), nil
	}
	out := x
	for i, a := range axes {
		a = normAxis(a, len(shape))
		if a == 0 && e.dynamic {
			return "", e.unsupported(v, n, "rolling axis 0 depends on the dynamic batch size")
		}
		out = e.rollAxis(out, a, shifts[i], shape[a])
	}
	return out, nil
}

// rollAxis rolls x by shift along axis a of traced size size.
func (e *exporter) rollAxis(x string, a, shift, size int) string {
	if size == 0 {
		return x
	}
	s := ((shift % size) + size) % size
	if s == 0 {
		return x
	}
	tail := e.node("Slice", []string{x, e.ints(size - s), e.ints(size), e.ints(a)})
	head := e.node("Slice", []string{x, e.ints(0), e.ints(size - s), e.ints(a)})
	return e.node("Concat", []string{tail, head}, attrI("axis", a))
}

// cumProd writes CumProd exactly: ONNX has no running product, so the axis
// is unrolled into a chain of Muls over its Slices, concatenated back. The
// axis must be static (not the dynamic batch axis) and at most
// maxCumProdLength long.
func (e *exporter) cumProd(v *autograd.Var, n autograd.NodeInfo, x string) (string, error) {
	axis, ok := n.Attrs["axis"].(int)
	if !ok {
		return "", e.unsupported(v, n, "the axis was not recorded")
	}
	shape := n.Inputs[0].Shape()
	a := normAxis(axis, len(shape))
	if a == 0 && e.dynamic {
		return "", e.unsupported(v, n, "ONNX has no running product and axis 0 is dynamic, so it cannot be unrolled")
	}
	l := shape[a]
	if l > maxCumProdLength {
		return "", e.unsupported(v, n, fmt.Sprintf("ONNX has no running product and axis %d has %d elements, more than the %d it is unrolled over", a, l, maxCumProdLength))
	}
	if l <= 1 {
		return e.node("Identity", []string{x}), nil
	}
	parts := make([]string, l)
	axes := e.ints(a)
	for k := range l {
		s := e.node("Slice", []string{x, e.ints(k), e.ints(k + 1), axes})
		if k == 0 {
			parts[k] = s
		} else {
			parts[k] = e.node("Mul", []string{parts[k-1], s})
		}
	}
	return e.node("Concat", parts, attrI("axis", a)), nil
}

func shapeNumel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// indexAttrs are the tensor attributes that are index data read by a
// lookup: a constant there means ids computed outside the traced graph.
var indexAttrs = map[string][]string{
	"Embedding":    {"ids"},
	"EmbeddingBag": {"ids"},
	"IndexSelect":  {"index"},
	"Gather":       {"index"},
	"MaxUnpool2d":  {"indices"},
}

// known reports whether t is an example input, a named buffer or the
// indices output of a traced MaxPool2dWithIndices.
func (e *exporter) known(t *tensor.Tensor) bool {
	if e.isInputTensor(t) {
		return true
	}
	if _, ok := e.poolOf[t]; ok {
		return true
	}
	_, ok := e.buffers[t]
	return ok
}

// batchSizes returns the traced sizes of the example inputs' dynamic axis 0.
func (e *exporter) batchSizes() []int {
	var sizes []int
	for t, name := range e.tensorName {
		for _, in := range e.graph.inputs {
			if in.name == name && len(in.dims) > 0 && in.dims[0].Param != "" && t.Dim() > 0 {
				sizes = append(sizes, t.Shape()[0])
			}
		}
	}
	return sizes
}

// batchShaped reports whether t's axis 0 has the traced size of a dynamic
// batch axis (larger than 1: a size-1 axis is as likely a broadcast axis).
func (e *exporter) batchShaped(t *tensor.Tensor) bool {
	if t.Dim() == 0 || t.Shape()[0] <= 1 {
		return false
	}
	return slices.Contains(e.batchSizes(), t.Shape()[0])
}

// selectsBatch reports whether n's index data runs along the batch axis:
// always, except for IndexSelect along an axis other than 0, whose 1-d
// index has the size of that axis.
func selectsBatch(n autograd.NodeInfo) bool {
	if n.Op != "IndexSelect" {
		return true
	}
	return normAxis(nInt(n, "axis"), n.Inputs[0].Dim()) == 0
}

// inputShaped reports whether t has the shape of an example input without
// being one: a value most likely computed from it.
func (e *exporter) inputShaped(t *tensor.Tensor) bool {
	if t.Dim() == 0 {
		return false
	}
	for u, name := range e.tensorName {
		if slices.Equal(u.Shape(), t.Shape()) && e.isInputTensor(u) && name != "" {
			return true
		}
	}
	return false
}

// checkOutside fails the export when the op n (making v) reads a tensor
// that is neither an example input, a parameter or buffer, nor the output
// of a traced op, and that therefore would be baked into the graph as a
// constant although it was most likely computed from the inputs in Go:
// index data of a lookup (Embedding and EmbeddingBag ids, IndexSelect and
// Gather indices, MaxUnpool2d indices) shaped like an example input or
// with the traced size of a dynamic batch axis on axis 0, and any other
// such value with that batch size on axis 0. Index data of other shapes
// (positions from Arange, interpolation tables that depend on shapes
// only) is written as a constant. Other such values (masks,
// scalars, small tables) are still written as constants, as Export's doc
// says.
func (e *exporter) checkOutside(v *autograd.Var, n autograd.NodeInfo) error {
	for _, k := range indexAttrs[n.Op] {
		t, ok := n.Attrs[k].(*tensor.Tensor)
		if !ok || e.known(t) || !(e.batchShaped(t) && selectsBatch(n) || e.inputShaped(t)) {
			continue
		}
		return e.outsideErr(v, n, fmt.Sprintf("its %s (%s %v) were computed outside the traced graph (not an example input, a buffer or the output of a traced op) and would be written as a constant; pass them as an input or register them as a buffer", k, t.DType(), t.Shape()))
	}
	if !e.dynamic {
		return nil
	}
	for k, a := range n.Attrs {
		if slices.Contains(indexAttrs[n.Op], k) {
			continue
		}
		if t, ok := a.(*tensor.Tensor); ok && !e.known(t) && e.batchShaped(t) {
			return e.outsideErr(v, n, fmt.Sprintf("its %s %v has the traced batch size on axis 0 but was computed outside the traced graph; it would be written as a constant", k, t.Shape()))
		}
	}
	for i, in := range n.Inputs {
		if in == nil {
			continue
		}
		if _, traced := e.source(in); traced {
			continue
		}
		if _, isParam := e.params[in]; isParam || e.known(in.Value()) {
			continue
		}
		if e.batchShaped(in.Value()) {
			return e.outsideErr(v, n, fmt.Sprintf("its input %d %v has the traced batch size on axis 0 but was computed outside the traced graph; it would be written as a constant", i, in.Shape()))
		}
	}
	return nil
}

func (e *exporter) outsideErr(v *autograd.Var, n autograd.NodeInfo, why string) error {
	return fmt.Errorf("onnx.Export: op %q (op %d of the trace, output shape %v): %s", n.Op, e.step+1, v.Shape(), why)
}

// findPools records, for every MaxPool2dWithIndices in the graph that
// computes outs (walked as visit walks it), its indices tensor, so that a
// MaxUnpool2d reading them is written as reading the pooling's second
// output.
func (e *exporter) findPools(outs []*autograd.Var) {
	e.poolOf = map[*tensor.Tensor]*autograd.Var{}
	seen := map[*autograd.Var]bool{}
	stack := slices.Clone(outs)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == nil || seen[v] {
			continue
		}
		seen[v] = true
		n, ok := e.source(v)
		if !ok {
			continue
		}
		if !builtin(n) && n.Forward != nil {
			if _, mapped := e.custom[n.Key.Name()]; !mapped {
				if inl, err := e.inline(v, n); err == nil {
					stack = append(stack, inl)
				}
				continue
			}
		}
		if idx, ok := n.Attrs["indices"].(*tensor.Tensor); ok && builtin(n) && n.Op == "MaxPool2d" {
			e.poolOf[idx] = v
		}
		stack = append(stack, n.Inputs...)
	}
}

// maxUnpool writes MaxUnpool2d as ONNX MaxUnpool fed by the Indices output
// of the ONNX MaxPool that MaxPool2dWithIndices was written as. ONNX
// indices are flat over the whole pooled input (plane·H·W + ih·W + iw),
// Ember's are per plane, so they are re-based onto output planes of
// outH·outW with Div and Mod when the planes differ in size. The kernel is
// chosen so that MaxUnpool's default output shape is [N, C, outH, outW],
// where ONNX Runtime and Ember's import agree on the flat positions. The
// indices must come from a MaxPool2dWithIndices on a 4-d input that is
// traced (not folded to a constant), and the output plane must be at least
// the input's size.
func (e *exporter) maxUnpool(v *autograd.Var, n autograd.NodeInfo, x string) (string, error) {
	idx, _ := n.Attrs["indices"].(*tensor.Tensor)
	pool, ok := e.poolOf[idx]
	if !ok {
		return "", e.unsupported(v, n, "its indices do not come from a MaxPool2dWithIndices on a 4-d input in the traced graph (indices computed in Go, or reshaped, cannot follow other inputs)")
	}
	pn, _ := pool.Node()
	xs, ps := n.Inputs[0].Shape(), pn.Inputs[0].Shape()
	outH, outW := nInt(n, "outH"), nInt(n, "outW")
	if len(xs) != 4 || len(ps) != 4 {
		return "", e.unsupported(v, n, fmt.Sprintf("the pooled input %v and the unpooled input %v must both be [N, C, H, W]", ps, xs))
	}
	if outH < xs[2] || outW < xs[3] {
		return "", e.unsupported(v, n, fmt.Sprintf("the output plane %dx%d is smaller than the input plane %dx%d, which ONNX MaxUnpool cannot express", outH, outW, xs[2], xs[3]))
	}
	if err := e.visit(pool); err != nil {
		return "", err
	}
	var mp *exNode
	for _, nd := range e.graph.nodes {
		if nd.op == "MaxPool" && nd.outputs[0] == e.names[pool] {
			mp = nd
		}
	}
	if mp == nil {
		return "", e.unsupported(v, n, "the max-pooling that made its indices was folded to a constant, so its indices are not a traced value")
	}
	if len(mp.outputs) == 1 {
		mp.outputs = append(mp.outputs, e.fresh("MaxPool_indices"))
	}
	ind := mp.outputs[1]
	if hw, ohw := ps[2]*ps[3], outH*outW; hw != ohw {
		h := e.scalar(float64(hw), tensor.Int64)
		plane := e.node("Mul", []string{e.node("Div", []string{ind, h}), e.scalar(float64(ohw), tensor.Int64)})
		ind = e.node("Add", []string{plane, e.node("Mod", []string{ind, h})})
	}
	return e.node("MaxUnpool", []string{x, ind},
		attrIs("kernel_shape", []int{outH - xs[2] + 1, outW - xs[3] + 1}), attrIs("strides", []int{1, 1})), nil
}
