package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Index-driven operators: N-d gathers and scatters, compress, nonzero,
// triangles, identity-like matrices, depth/space rearrangement and hardmax.

func indexOps() opTable {
	return opTable{
		"GatherND":     {{since: 11, impl: opGatherND}},
		"ScatterND":    {{since: 11, impl: opScatterND}},
		"Scatter":      {{since: 9, until: 10, impl: opScatterElements}},
		"Compress":     {{since: 9, impl: opCompress}},
		"NonZero":      {{since: 9, impl: opNonZero}},
		"Trilu":        {{since: 14, impl: opTrilu}},
		"EyeLike":      {{since: 9, impl: opEyeLike}},
		"DepthToSpace": {{since: 1, impl: opDepthToSpace}},
		"SpaceToDepth": {{since: 1, impl: opSpaceToDepth}},
		"Hardmax":      {{since: 1, impl: opHardmax}},
	}
}

func prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}

// linearIndices turns the index tuples in the last axis of idx (into the
// axes dims) into row numbers of dims flattened, wrapping negatives; batch
// rows of size prod(dims) are offset by their batch number.
func (n *node) linearIndices(idx *tensor.Tensor, dims []int, batch int) ([]int64, error) {
	is := idx.Shape()
	k := is[len(is)-1]
	if k != len(dims) {
		return nil, fmt.Errorf("onnx: %v: index tuples of length %d for %d axes", n, k, len(dims))
	}
	v := idx.Int64s()
	rows := len(v) / max(k, 1)
	if k == 0 {
		rows = prod(is[:len(is)-1])
	}
	per := rows / max(batch, 1)
	block := int64(prod(dims))
	out := make([]int64, rows)
	for r := range rows {
		lin := int64(0)
		for j := range k {
			x := v[r*k+j]
			d := int64(dims[j])
			if x < 0 {
				x += d
			}
			if x < 0 || x >= d {
				return nil, fmt.Errorf("onnx: %v: index %d out of range for axis of size %d", n, v[r*k+j], d)
			}
			lin = lin*d + x
		}
		out[r] = lin + int64(r/max(per, 1))*block
	}
	return out, nil
}

func opGatherND(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	b := int(n.attrInt("batch_dims", 0))
	xs, is := x.Shape(), idx.Shape()
	if len(is) < 1 || b < 0 || b >= len(is) || b >= len(xs) {
		return nil, fmt.Errorf("onnx: %v: bad batch_dims %d for data %v and indices %v", n, b, xs, is)
	}
	k := is[len(is)-1]
	if b+k > len(xs) {
		return nil, fmt.Errorf("onnx: %v: index tuples of length %d for data %v", n, k, xs)
	}
	if err := n.checkShape(append(slices.Clone(is[:len(is)-1]), xs[b+k:]...), x.DType()); err != nil {
		return nil, err
	}
	lin, err := n.linearIndices(idx, xs[b:b+k], prod(xs[:b]))
	if err != nil {
		return nil, err
	}
	rows := x.Reshape(append([]int{prod(xs[:b+k])}, xs[b+k:]...)...)
	out := rows.IndexSelect(0, tensor.FromSlice(lin))
	return one(out.Reshape(append(slices.Clone(is[:len(is)-1]), xs[b+k:]...)...))
}

func opScatterND(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	upd, err := n.need(in, 2)
	if err != nil {
		return nil, err
	}
	xs, is := x.Shape(), idx.Shape()
	if len(is) < 1 {
		return nil, fmt.Errorf("onnx: %v: indices must have at least one axis", n)
	}
	k := is[len(is)-1]
	if k > len(xs) {
		return nil, fmt.Errorf("onnx: %v: index tuples of length %d for data %v", n, k, xs)
	}
	lin, err := n.linearIndices(idx, xs[:k], 1)
	if err != nil {
		return nil, err
	}
	rowShape := append([]int{prod(xs[:k])}, xs[k:]...)
	out := x.Contiguous().Clone().Reshape(rowShape...)
	u := upd.Reshape(append([]int{len(lin)}, xs[k:]...)...)
	red := n.attrString("reduction", "none")
	for m, row := range lin {
		dst := out.Select(0, int(row))
		src := u.Select(0, m)
		switch red {
		case "none":
		case "add":
			src = dst.Add(src)
		case "mul":
			src = dst.Mul(src)
		case "max":
			src = dst.Maximum(src)
		case "min":
			src = dst.Minimum(src)
		default:
			return nil, fmt.Errorf("onnx: %v: unknown reduction %q", n, red)
		}
		dst.CopyFrom(src)
	}
	return one(out.Reshape(xs...))
}

func opCompress(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	cond, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	axis := 0
	if n.has("axis") {
		if axis, err = n.normAxis(int(n.attrInt("axis", 0)), x.Dim()); err != nil {
			return nil, err
		}
	} else {
		x = x.Reshape(-1)
	}
	c := cond.Bools()
	if len(c) > x.Shape()[axis] {
		return nil, fmt.Errorf("onnx: %v: condition of length %d for an axis of size %d", n, len(c), x.Shape()[axis])
	}
	sel := []int64{}
	for i, ok := range c {
		if ok {
			sel = append(sel, int64(i))
		}
	}
	return one(x.IndexSelect(axis, tensor.FromSlice(sel)))
}

func opNonZero(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	v := x.Float64s()
	r := len(shape)
	var hits []int
	for i, e := range v {
		if e != 0 {
			hits = append(hits, i)
		}
	}
	out := make([]int64, max(r, 1)*len(hits))
	for j, flat := range hits {
		for a := r - 1; a >= 0; a-- {
			out[a*len(hits)+j] = int64(flat % shape[a])
			flat /= shape[a]
		}
	}
	if r == 0 {
		return one(tensor.FromSlice(out, 1, len(hits)))
	}
	return one(tensor.FromSlice(out, r, len(hits)))
}

func opTrilu(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	k := 0
	if t := arg(in, 1); t != nil {
		k = int(t.Reshape(-1).At(0))
	}
	if n.attrInt("upper", 1) == 1 {
		return one(x.Triu(k))
	}
	return one(x.Tril(k))
}

func opEyeLike(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if x.Dim() != 2 {
		return nil, fmt.Errorf("onnx: %v: input %v must be 2-d", n, x.Shape())
	}
	dt, err := n.dtypeAttr("dtype", x.DType())
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	k := int(n.attrInt("k", 0))
	v := make([]float64, s[0]*s[1])
	for i := range s[0] {
		if j := i + k; j >= 0 && j < s[1] {
			v[i*s[1]+j] = 1
		}
	}
	return one(tensor.FromSlice(v, s...).To(dt))
}

func opDepthToSpace(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b := int(n.attrInt("blocksize", 0))
	s := x.Shape()
	if len(s) != 4 || b <= 0 || s[1]%(b*b) != 0 {
		return nil, fmt.Errorf("onnx: %v: input %v and blocksize %d do not fit", n, s, b)
	}
	N, C, H, W := s[0], s[1], s[2], s[3]
	c := C / (b * b)
	var y *tensor.Tensor
	if n.attrString("mode", "DCR") == "CRD" {
		y = x.Reshape(N, c, b, b, H, W).Permute(0, 1, 4, 2, 5, 3)
	} else {
		y = x.Reshape(N, b, b, c, H, W).Permute(0, 3, 4, 1, 5, 2)
	}
	return one(y.Reshape(N, c, H*b, W*b))
}

func opSpaceToDepth(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	b := int(n.attrInt("blocksize", 0))
	s := x.Shape()
	if len(s) != 4 || b <= 0 || s[2]%b != 0 || s[3]%b != 0 {
		return nil, fmt.Errorf("onnx: %v: input %v and blocksize %d do not fit", n, s, b)
	}
	N, C, H, W := s[0], s[1], s[2], s[3]
	y := x.Reshape(N, C, H/b, b, W/b, b).Permute(0, 3, 5, 1, 2, 4)
	return one(y.Reshape(N, C*b*b, H/b, W/b))
}

// opHardmax is 1 at the first maximum along the axis and 0 elsewhere;
// before opset 13 the input is coerced to a matrix at axis (default 1).
func opHardmax(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	var axis int
	if n.opset < 13 {
		a := int(n.attrInt("axis", 1))
		if a < 0 {
			a += len(s)
		}
		if a < 0 || a > len(s) {
			return nil, fmt.Errorf("onnx: %v: axis %d out of range for rank %d", n, a, len(s))
		}
		x = x.Reshape(prod(s[:a]), prod(s[a:]))
		axis = 1
	} else if axis, err = n.normAxis(int(n.attrInt("axis", -1)), x.Dim()); err != nil {
		return nil, err
	}
	idx := x.ArgMax(axis, true)
	shape := make([]int, x.Dim())
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = x.Shape()[axis]
	classes := tensor.Arange(0, float64(shape[axis]), 1, tensor.Int64).Reshape(shape...)
	return one(idx.Eq(classes).To(x.DType()).Reshape(s...))
}
