package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Shape and data-movement operators: constants, reshaping, joining,
// slicing, indexing, broadcasting and padding.

func shapeOps() opTable {
	return opTable{
		"Identity":        {{since: 1, impl: opIdentity}},
		"Constant":        {{since: 1, impl: opConstant}},
		"ConstantOfShape": {{since: 9, impl: opConstantOfShape}},
		"Shape":           {{since: 1, impl: opShape}},
		"Size":            {{since: 1, impl: opSize}},
		"Reshape":         {{since: 5, impl: opReshape}},
		"Flatten":         {{since: 1, impl: opFlatten}},
		"Transpose":       {{since: 1, impl: opTranspose}},
		"Squeeze":         {{since: 1, impl: opSqueeze}},
		"Unsqueeze":       {{since: 1, impl: opUnsqueeze}},
		"Concat":          {{since: 4, impl: opConcat}},
		"Split":           {{since: 2, impl: opSplit}},
		"Slice":           {{since: 1, impl: opSlice}},
		"Gather":          {{since: 1, impl: opGather}},
		"GatherElements":  {{since: 11, impl: opGatherElements}},
		"ScatterElements": {{since: 11, impl: opScatterElements}},
		"Expand":          {{since: 8, impl: opExpand}},
		"Tile":            {{since: 6, impl: opTile}},
		"Pad":             {{since: 2, impl: opPad}},
		"CenterCropPad":   {{since: 18, impl: opCenterCropPad}},
		"Range":           {{since: 11, impl: opRange}},
		"OneHot":          {{since: 9, impl: opOneHot}},
	}
}

func opIdentity(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(x)
}

func opConstant(n *node, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
	switch {
	case n.has("value"):
		t, err := n.attrTensor("value")
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("onnx: %v: attribute value holds no tensor", n)
		}
		return one(t)
	case n.has("sparse_value"):
		sp := n.attrs["sparse_value"].sparse
		if sp == nil {
			return nil, fmt.Errorf("onnx: %v: attribute sparse_value holds no sparse tensor", n)
		}
		t, err := sp.toTensor(n.source())
		if err != nil {
			return nil, err
		}
		return one(t)
	case n.has("value_float"):
		return one(tensor.ScalarOf(n.attrFloat("value_float", 0), tensor.Float32))
	case n.has("value_floats"):
		return one(tensor.FromSlice(slices.Clone(n.attrFloats("value_floats"))))
	case n.has("value_int"):
		return one(tensor.FromSlice([]int64{n.attrInt("value_int", 0)}, []int{}...).Reshape())
	case n.has("value_ints"):
		return one(tensor.FromSlice(slices.Clone(n.attrInts("value_ints"))))
	}
	return nil, fmt.Errorf("onnx: %v: no supported value attribute (value, value_float(s), value_int(s))", n)
}

// shapeArg reads a 1-d int64 shape input and checks its element count and
// bytes as a tensor of dtype dt.
func (n *node) shapeArg(t *tensor.Tensor, dt tensor.DType) ([]int, error) {
	if t.DType() != tensor.Int64 || t.Dim() > 1 {
		return nil, fmt.Errorf("onnx: %v: shape input must be a 1-d int64 tensor, got %s %v", n, t.DType(), t.Shape())
	}
	s := ints(t)
	for _, d := range s {
		if d < 0 {
			return nil, fmt.Errorf("onnx: %v: negative dimension in shape %v", n, s)
		}
	}
	return s, n.checkShape(s, dt)
}

func opConstantOfShape(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	st, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	v, err := n.attrTensor("value")
	if err != nil {
		return nil, err
	}
	dt := tensor.Float32
	if v != nil {
		dt = v.DType()
	}
	shape, err := n.shapeArg(st, dt)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return one(tensor.Zeros(shape, tensor.Float32))
	}
	if v.Numel() != 1 {
		return nil, fmt.Errorf("onnx: %v: value must hold one element, has %d", n, v.Numel())
	}
	return one(v.Reshape().Expand(shape...).Contiguous())
}

func opShape(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	r := len(s)
	clampAxis := func(a int) int {
		if a < 0 {
			a += r
		}
		return min(max(a, 0), r)
	}
	start, end := clampAxis(int(n.attrInt("start", 0))), clampAxis(int(n.attrInt("end", int64(r))))
	out := []int64{}
	for i := start; i < end; i++ {
		out = append(out, int64(s[i]))
	}
	return one(tensor.FromSlice(out))
}

func opSize(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	return one(tensor.FromSlice([]int64{int64(x.Numel())}, []int{}...))
}

func opReshape(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	st, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if st.DType() != tensor.Int64 || st.Dim() != 1 {
		return nil, fmt.Errorf("onnx: %v: shape must be a 1-d int64 tensor, got %s %v", n, st.DType(), st.Shape())
	}
	shape := ints(st)
	if len(shape) > maxRank {
		return nil, fmt.Errorf("onnx: %v: shape of rank %d exceeds %d", n, len(shape), maxRank)
	}
	xs := x.Shape()
	allowZero := n.attrInt("allowzero", 0) == 1
	for i, d := range shape {
		if d == 0 && !allowZero {
			if i >= len(xs) {
				return nil, fmt.Errorf("onnx: %v: shape %v copies axis %d of an input of rank %d", n, shape, i, len(xs))
			}
			shape[i] = xs[i]
		}
	}
	return one(x.Reshape(shape...))
}

func opFlatten(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	r := x.Dim()
	axis := int(n.attrInt("axis", 1))
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis > r {
		return nil, fmt.Errorf("onnx: %v: axis %d out of range for rank %d", n, axis, r)
	}
	s := x.Shape()
	outer := 1
	for _, d := range s[:axis] {
		outer *= d
	}
	inner := 1
	for _, d := range s[axis:] {
		inner *= d
	}
	return one(x.Reshape(outer, inner))
}

func opTranspose(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	perm := toInts(n.attrInts("perm"))
	if perm == nil {
		for i := x.Dim() - 1; i >= 0; i-- {
			perm = append(perm, i)
		}
	}
	return one(x.Permute(perm...))
}

// axesArg returns the axes given as attribute "axes" (before opset
// inputFrom) or as input idx (from opset inputFrom on), and whether any were
// given.
func (n *node) axesArg(in []*tensor.Tensor, idx int, inputFrom int64) ([]int, bool) {
	if n.opset >= inputFrom {
		if t := arg(in, idx); t != nil {
			return ints(t), true
		}
		return nil, false
	}
	if n.has("axes") {
		return toInts(n.attrInts("axes")), true
	}
	return nil, false
}

func opSqueeze(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axes, _ := n.axesArg(in, 1, 13)
	return one(x.Squeeze(axes...))
}

func opUnsqueeze(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axes, ok := n.axesArg(in, 1, 13)
	if !ok {
		return nil, fmt.Errorf("onnx: %v: axes are required", n)
	}
	r := x.Dim() + len(axes)
	if r > maxRank {
		return nil, fmt.Errorf("onnx: %v: result rank %d exceeds %d", n, r, maxRank)
	}
	norm := make([]int, len(axes))
	for i, a := range axes {
		if norm[i], err = n.normAxis(a, r); err != nil {
			return nil, err
		}
	}
	slices.Sort(norm)
	if len(slices.Compact(slices.Clone(norm))) != len(norm) {
		return nil, fmt.Errorf("onnx: %v: repeated axes %v", n, axes)
	}
	for _, a := range norm {
		x = x.Unsqueeze(a)
	}
	return one(x)
}

func opConcat(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("onnx: %v needs inputs", n)
	}
	for i, t := range in {
		if t == nil {
			return nil, fmt.Errorf("onnx: %v: input %d is absent", n, i)
		}
	}
	if !n.has("axis") {
		return nil, fmt.Errorf("onnx: %v: attribute axis is required", n)
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), in[0].Dim())
	if err != nil {
		return nil, err
	}
	return one(tensor.Concat(in, axis))
}

func opSplit(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
	if err != nil {
		return nil, err
	}
	var sizes []int
	if n.opset >= 13 {
		if t := arg(in, 1); t != nil {
			sizes = ints(t)
		}
	} else if n.has("split") {
		sizes = toInts(n.attrInts("split"))
	}
	dim := x.Shape()[axis]
	if sizes == nil {
		k := len(n.outputs)
		if n.has("num_outputs") && n.attrInt("num_outputs", 0) != int64(k) {
			return nil, fmt.Errorf("onnx: %v: num_outputs %d but %d outputs", n, n.attrInt("num_outputs", 0), k)
		}
		if k <= 0 {
			return nil, fmt.Errorf("onnx: %v: cannot split into %d parts", n, k)
		}
		chunk := (dim + k - 1) / k
		for rest := dim; len(sizes) < k; rest -= chunk {
			sizes = append(sizes, max(min(chunk, rest), 0))
		}
	}
	return x.SplitSizes(sizes, axis), nil
}

// sliceAxis applies ONNX slice semantics (clamping, negative steps) on one
// axis.
func sliceAxis(x *tensor.Tensor, axis, start, end, step int) *tensor.Tensor {
	dim := x.Shape()[axis]
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start, end = min(max(start, 0), dim), min(max(end, 0), dim)
		if end <= start {
			return x.Narrow(axis, 0, 0)
		}
		return x.Slice(axis, start, end, step)
	}
	start, end = min(max(start, 0), dim-1), min(max(end, -1), dim-1)
	var idx []int64
	for i := start; i > end; i += step {
		idx = append(idx, int64(i))
	}
	if idx == nil {
		return x.Narrow(axis, 0, 0)
	}
	return x.IndexSelect(axis, tensor.FromSlice(idx))
}

func opSlice(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	var starts, ends, axes, steps []int
	if n.opset < 10 {
		starts, ends, axes = toInts(n.attrInts("starts")), toInts(n.attrInts("ends")), toInts(n.attrInts("axes"))
	} else {
		s, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		e, err := n.need(in, 2)
		if err != nil {
			return nil, err
		}
		starts, ends = ints(s), ints(e)
		if t := arg(in, 3); t != nil {
			axes = ints(t)
		}
		if t := arg(in, 4); t != nil {
			steps = ints(t)
		}
	}
	if len(starts) != len(ends) {
		return nil, fmt.Errorf("onnx: %v: %d starts but %d ends", n, len(starts), len(ends))
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, i)
		}
	}
	if steps == nil {
		steps = make([]int, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("onnx: %v: starts, ends, axes and steps differ in length", n)
	}
	for i := range starts {
		a, err := n.normAxis(axes[i], x.Dim())
		if err != nil {
			return nil, err
		}
		if steps[i] == 0 {
			return nil, fmt.Errorf("onnx: %v: step 0", n)
		}
		x = sliceAxis(x, a, starts[i], ends[i], steps[i])
	}
	return one(x)
}

// wrapIndices maps negative indices into [0, dim) as int64.
func wrapIndices(idx *tensor.Tensor, dim int) *tensor.Tensor {
	idx = idx.To(tensor.Int64)
	neg := idx.Lt(tensor.ZerosLike(idx))
	return tensor.Where(neg, idx.AddScalar(float64(dim)), idx)
}

func opGather(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	shape := append(append(slices.Clone(xs[:axis]), idx.Shape()...), xs[axis+1:]...)
	if err := n.checkShape(shape, x.DType()); err != nil {
		return nil, err
	}
	flat := wrapIndices(idx, xs[axis]).Reshape(-1)
	return one(x.IndexSelect(axis, flat).Reshape(shape...))
}

func opGatherElements(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
	if err != nil {
		return nil, err
	}
	return one(x.Gather(axis, wrapIndices(idx, x.Shape()[axis])))
}

func opScatterElements(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	src, err := n.need(in, 2)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
	if err != nil {
		return nil, err
	}
	idx = wrapIndices(idx, x.Shape()[axis])
	switch r := n.attrString("reduction", "none"); r {
	case "none":
		return one(x.Scatter(axis, idx, src))
	case "add":
		return one(x.ScatterAdd(axis, idx, src))
	case "mul", "max", "min":
		y, err := scatterElementsReduce(n, x, idx, src, axis, r)
		if err != nil {
			return nil, err
		}
		return one(y)
	default:
		return nil, fmt.Errorf("onnx: %v: reduction %q is not supported", n, r)
	}
}

func opExpand(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	st, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	shape, err := n.shapeArg(st, x.DType())
	if err != nil {
		return nil, err
	}
	out := tensor.BroadcastShapes("Expand", x.Shape(), shape)
	if err := n.checkShape(out, x.DType()); err != nil {
		return nil, err
	}
	return one(x.Expand(out...))
}

func opTile(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	rt, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	reps := ints(rt)
	if len(reps) != x.Dim() {
		return nil, fmt.Errorf("onnx: %v: %d repeats for rank %d", n, len(reps), x.Dim())
	}
	out := x.Shape()
	for i := range out {
		if reps[i] < 0 {
			return nil, fmt.Errorf("onnx: %v: negative repeat %v", n, reps)
		}
		out[i] *= reps[i]
	}
	if err := n.checkShape(out, x.DType()); err != nil {
		return nil, err
	}
	return one(x.Tile(reps...))
}

func opPad(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	var pads []int
	value := 0.0
	if n.opset < 11 {
		pads = toInts(n.attrInts("pads"))
		value = n.attrFloat("value", 0)
	} else {
		pt, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		pads = ints(pt)
		if t := arg(in, 2); t != nil && t.Numel() > 0 {
			value = t.Reshape(-1).At(0)
		}
	}
	r := x.Dim()
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if t := arg(in, 3); t != nil && n.opset >= 18 {
		axes = ints(t)
	}
	if len(pads) != 2*len(axes) {
		return nil, fmt.Errorf("onnx: %v: %d pads for %d axes", n, len(pads), len(axes))
	}
	full := make([]int, 2*r)
	for i, a := range axes {
		a, err := n.normAxis(a, r)
		if err != nil {
			return nil, err
		}
		full[a], full[r+a] = pads[i], pads[len(axes)+i]
	}
	// tensor.Pad takes (before, after) pairs from the last axis.
	tp := make([]int, 0, 2*r)
	out := x.Shape()
	for a := r - 1; a >= 0; a-- {
		tp = append(tp, full[a], full[r+a])
		out[a] += full[a] + full[r+a]
	}
	if err := n.checkShape(out, x.DType()); err != nil {
		return nil, err
	}
	var mode tensor.PadMode
	switch m := n.attrString("mode", "constant"); m {
	case "constant":
		mode = tensor.PadConstant
	case "reflect":
		mode = tensor.PadReflect
	case "edge":
		mode = tensor.PadReplicate
	case "wrap":
		mode = tensor.PadCircular
	default:
		return nil, fmt.Errorf("onnx: %v: unknown mode %q", n, m)
	}
	return one(x.Pad(tp, mode, value))
}

func opRange(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var v [3]*tensor.Tensor
	for i := range v {
		t, err := n.need(in, i)
		if err != nil {
			return nil, err
		}
		v[i] = t
	}
	start, limit, delta := v[0].Item(), v[1].Item(), v[2].Item()
	if delta == 0 {
		return nil, fmt.Errorf("onnx: %v: delta is 0", n)
	}
	count := max(0, int64(ceilDiv(limit-start, delta)))
	if count > n.maxElements {
		return nil, fmt.Errorf("onnx: %v: range of %d elements is too large", n, count)
	}
	dt := v[0].DType()
	if dt.IsInt() {
		s, d := int64(start), int64(delta)
		out := make([]int64, count)
		for i := range out {
			out[i] = s + int64(i)*d
		}
		return one(tensor.FromSlice(out).To(dt))
	}
	out := make([]float64, count)
	for i := range out {
		out[i] = start + float64(i)*delta
	}
	return one(tensor.FromSlice(out).To(dt))
}

func ceilDiv(a, b float64) float64 {
	q := a / b
	c := float64(int64(q))
	if c < q {
		c++
	}
	return c
}

func opOneHot(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	idx, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	dt, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	vals, err := n.need(in, 2)
	if err != nil {
		return nil, err
	}
	depth := int(dt.Reshape(-1).At(0))
	if depth <= 0 {
		return nil, fmt.Errorf("onnx: %v: depth %d must be positive", n, depth)
	}
	r := idx.Dim() + 1
	axis, err := n.normAxis(int(n.attrInt("axis", -1)), r)
	if err != nil {
		return nil, err
	}
	out := append(idx.Shape(), depth)
	if err := n.checkShape(out, vals.DType()); err != nil {
		return nil, err
	}
	if vals.Numel() != 2 {
		return nil, fmt.Errorf("onnx: %v: values must hold [off, on]", n)
	}
	i := idx.To(tensor.Float64)
	i = tensor.Where(i.Lt(tensor.ZerosLike(i)), i.AddScalar(float64(depth)), i).Unsqueeze(axis)
	shape := make([]int, r)
	for k := range shape {
		shape[k] = 1
	}
	shape[axis] = depth
	classes := tensor.Arange(0, float64(depth), 1, tensor.Float64).Reshape(shape...)
	flat := vals.Reshape(-1)
	return one(tensor.Where(i.Eq(classes), flat.Narrow(0, 1, 1).Reshape(), flat.Narrow(0, 0, 1).Reshape()))
}

// opCenterCropPad crops or zero-pads each listed axis (all by default) to
// the target size, centred: an odd difference leaves the extra element on
// the far side (crop) or puts the extra padding there (pad).
func opCenterCropPad(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 2)
	if err != nil {
		return nil, err
	}
	x, target := args[0], ints(args[1])
	axes := toInts(n.attrInts("axes"))
	if axes == nil {
		axes = make([]int, x.Dim())
		for i := range axes {
			axes[i] = i
		}
	}
	if len(target) != len(axes) {
		return nil, fmt.Errorf("onnx: %v: %d target sizes for %d axes", n, len(target), len(axes))
	}
	shape := x.Shape()
	pads := make([]int, 2*x.Dim()) // tensor.Pad order: last axis first
	seen := make([]bool, x.Dim())
	for i, a := range axes {
		a, err := n.normAxis(a, x.Dim())
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("onnx: %v: axis %d listed twice", n, a)
		}
		seen[a] = true
		if target[i] < 0 {
			return nil, fmt.Errorf("onnx: %v: target size %d is negative", n, target[i])
		}
		shape[a] = target[i]
		// Cropping is a negative pad; the odd element goes to the end.
		diff := target[i] - x.Shape()[a]
		before := diff / 2
		if diff < 0 {
			before = -((-diff) / 2)
		}
		k := x.Dim() - 1 - a
		pads[2*k], pads[2*k+1] = before, diff-before
	}
	if err := n.checkShape(shape, x.DType()); err != nil {
		return nil, err
	}
	return one(x.Pad(pads, tensor.PadConstant, 0))
}
