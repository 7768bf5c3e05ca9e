package tensor

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor/internal/strided"
)

// Reshape returns a tensor with the same elements in row-major order and the
// given shape. One dimension may be -1 and is inferred. It is a view when t's
// layout allows, else a copy.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	shape = inferShape("Reshape", t.shape, shape)
	if st, ok := viewStrides(t.shape, t.strides, shape); ok {
		return t.view(shape, st, t.offset)
	}
	c := t.Clone()
	return c.view(shape, strided.Contiguous(shape), 0)
}

// View is like Reshape but panics instead of copying when the layout does not
// allow a view, as PyTorch's view does.
func (t *Tensor) View(shape ...int) *Tensor {
	shape = inferShape("View", t.shape, shape)
	st, ok := viewStrides(t.shape, t.strides, shape)
	if !ok {
		panic(fmt.Sprintf("tensor.View: shape %v with strides %v cannot be viewed as %v; call Reshape or Contiguous first", t.shape, t.strides, shape))
	}
	return t.view(shape, st, t.offset)
}

func inferShape(op string, old, shape []int) []int {
	shape = slices.Clone(shape)
	n, infer := 1, -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("tensor.%s: bad shape %v (one -1 allowed, no other negatives)", op, shape))
		default:
			n *= d
		}
	}
	total := numel(old)
	if infer >= 0 {
		if n == 0 || total%n != 0 {
			panic(fmt.Sprintf("tensor.%s: cannot infer -1 in %v for %d elements", op, shape, total))
		}
		shape[infer] = total / n
	} else if n != total {
		panic(fmt.Sprintf("tensor.%s: shape %v has %d elements, tensor of shape %v has %d", op, shape, n, old, total))
	}
	return shape
}

// viewStrides computes strides for viewing (shape, strides) as newShape
// without copying, if possible: walking both shapes from the last axis, each
// run of new axes must exactly cover a run of old axes that is contiguous in
// memory.
func viewStrides(shape, strides, newShape []int) ([]int, bool) {
	if numel(shape) == 0 || strided.IsContiguous(shape, strides) {
		return strided.Contiguous(newShape), true
	}
	out := make([]int, len(newShape))
	nd := len(newShape) - 1
	base := strides[len(strides)-1]
	oldN, newN := 1, 1
	for od := len(shape) - 1; od >= 0; od-- {
		oldN *= shape[od]
		chunkEnds := od == 0 || (shape[od-1] != 1 && strides[od-1] != oldN*base)
		if !chunkEnds {
			continue
		}
		for nd >= 0 && (newN < oldN || newShape[nd] == 1) {
			out[nd] = newN * base
			newN *= newShape[nd]
			nd--
		}
		if newN != oldN {
			return nil, false
		}
		if od > 0 {
			base = strides[od-1]
			oldN, newN = 1, 1
		}
	}
	if nd != -1 {
		return nil, false
	}
	return out, true
}

// Flatten merges dimensions start..end (inclusive, negative from the end)
// into one.
func (t *Tensor) Flatten(start, end int) *Tensor {
	if t.Dim() == 0 {
		return t.Reshape(1)
	}
	s, e := normAxis("Flatten", start, t.Dim()), normAxis("Flatten", end, t.Dim())
	if s > e {
		panic(fmt.Sprintf("tensor.Flatten: start %d after end %d", start, end))
	}
	shape := slices.Clone(t.shape[:s])
	shape = append(shape, numel(t.shape[s:e+1]))
	shape = append(shape, t.shape[e+1:]...)
	return t.Reshape(shape...)
}

// Permute returns a view with the axes reordered: result axis i is t's axis
// axes[i].
func (t *Tensor) Permute(axes ...int) *Tensor {
	n := t.Dim()
	if len(axes) != n {
		panic(fmt.Sprintf("tensor.Permute: %d axes given for a %d-d tensor of shape %v", len(axes), n, t.shape))
	}
	seen := make([]bool, n)
	shape, st := make([]int, n), make([]int, n)
	for i, a := range axes {
		a = normAxis("Permute", a, n)
		if seen[a] {
			panic(fmt.Sprintf("tensor.Permute: axis %d repeated in %v", a, axes))
		}
		seen[a] = true
		shape[i], st[i] = t.shape[a], t.strides[a]
	}
	return t.view(shape, st, t.offset)
}

// Transpose returns a view with axes a and b swapped.
func (t *Tensor) Transpose(a, b int) *Tensor {
	n := t.Dim()
	a, b = normAxis("Transpose", a, n), normAxis("Transpose", b, n)
	axes := make([]int, n)
	for i := range axes {
		axes[i] = i
	}
	axes[a], axes[b] = b, a
	return t.Permute(axes...)
}

// T returns the transpose of a 2-d tensor (a view).
func (t *Tensor) T() *Tensor {
	if t.Dim() != 2 {
		panic(fmt.Sprintf("tensor.T: want a 2-d tensor, got shape %v; use Transpose or Permute", t.shape))
	}
	return t.Transpose(0, 1)
}

// Narrow returns the view of length elements starting at start along axis.
func (t *Tensor) Narrow(axis, start, length int) *Tensor {
	a := normAxis("Narrow", axis, t.Dim())
	if start < 0 {
		start += t.shape[a]
	}
	if start < 0 || length < 0 || start+length > t.shape[a] {
		panic(fmt.Sprintf("tensor.Narrow: [%d, %d) out of range for axis %d of shape %v", start, start+length, axis, t.shape))
	}
	shape := slices.Clone(t.shape)
	shape[a] = length
	return t.view(shape, slices.Clone(t.strides), t.offset+start*t.strides[a])
}

// Slice returns the view t[start:end:step] along axis, with Python's rules
// for negative and out-of-range bounds. step must be positive.
func (t *Tensor) Slice(axis, start, end, step int) *Tensor {
	a := normAxis("Slice", axis, t.Dim())
	if step <= 0 {
		panic(fmt.Sprintf("tensor.Slice: step must be positive, got %d", step))
	}
	n := t.shape[a]
	clampIdx := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	start, end = clampIdx(start), clampIdx(end)
	length := 0
	if end > start {
		length = (end - start + step - 1) / step
	}
	shape, st := slices.Clone(t.shape), slices.Clone(t.strides)
	shape[a] = length
	st[a] *= step
	return t.view(shape, st, t.offset+start*t.strides[a])
}

// Select returns the view at index i along axis, with that axis removed.
func (t *Tensor) Select(axis, i int) *Tensor {
	a := normAxis("Select", axis, t.Dim())
	n := t.shape[a]
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		panic(fmt.Sprintf("tensor.Select: index %d out of range for axis %d of shape %v", i, axis, t.shape))
	}
	shape := slices.Delete(slices.Clone(t.shape), a, a+1)
	st := slices.Delete(slices.Clone(t.strides), a, a+1)
	return t.view(shape, st, t.offset+i*t.strides[a])
}

// Squeeze removes the given axes, which must have size 1; with no axes it
// removes every size-1 axis.
func (t *Tensor) Squeeze(axes ...int) *Tensor {
	drop := make([]bool, t.Dim())
	if len(axes) == 0 {
		for i, d := range t.shape {
			drop[i] = d == 1
		}
	}
	for _, a := range axes {
		a = normAxis("Squeeze", a, t.Dim())
		if t.shape[a] != 1 {
			panic(fmt.Sprintf("tensor.Squeeze: axis %d has size %d, not 1 (shape %v)", a, t.shape[a], t.shape))
		}
		drop[a] = true
	}
	var shape, st []int
	for i := range t.shape {
		if !drop[i] {
			shape = append(shape, t.shape[i])
			st = append(st, t.strides[i])
		}
	}
	return t.view(shape, st, t.offset)
}

// Unsqueeze inserts a size-1 axis at position axis (in [-Dim-1, Dim]).
func (t *Tensor) Unsqueeze(axis int) *Tensor {
	a := normAxis("Unsqueeze", axis, t.Dim()+1)
	st := 1
	if a < t.Dim() {
		st = t.strides[a] * t.shape[a]
	}
	shape := slices.Insert(slices.Clone(t.shape), a, 1)
	strides := slices.Insert(slices.Clone(t.strides), a, st)
	return t.view(shape, strides, t.offset)
}

// Expand returns a broadcast view of t with the given shape: size-1 axes are
// repeated with stride 0 and new leading axes may be added; -1 keeps a size.
func (t *Tensor) Expand(shape ...int) *Tensor {
	n := len(shape)
	if n < t.Dim() {
		panic(fmt.Sprintf("tensor.Expand: cannot expand shape %v to fewer dims %v", t.shape, shape))
	}
	out, st := make([]int, n), make([]int, n)
	lead := n - t.Dim()
	for i := range n {
		if i < lead {
			if shape[i] < 0 {
				panic(fmt.Sprintf("tensor.Expand: -1 not allowed for new leading axis in %v", shape))
			}
			out[i] = shape[i]
			continue
		}
		d, s := t.shape[i-lead], t.strides[i-lead]
		switch {
		case shape[i] < -1:
			panic(fmt.Sprintf("tensor.Expand: negative size %d in %v", shape[i], shape))
		case shape[i] == -1 || shape[i] == d:
			out[i], st[i] = d, s
		case d == 1:
			out[i] = shape[i]
		default:
			panic(fmt.Sprintf("tensor.Expand: cannot expand shape %v to %v: axis %d has size %d, not 1", t.shape, shape, i-lead, d))
		}
	}
	return t.view(out, st, t.offset)
}

// BroadcastShapes returns the NumPy broadcast of the given shapes, or panics
// naming op when they are incompatible.
func BroadcastShapes(op string, shapes ...[]int) []int {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			j := n - len(s) + i
			switch {
			case out[j] == d || d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				panic(fmt.Sprintf("tensor.%s: shapes %v are not broadcastable (axis %d: %d vs %d)", op, shapes, j-n, out[j], d))
			}
		}
	}
	return out
}

// broadcastLayout returns t's layout expanded to shape (stride 0 on
// broadcast axes).
func (t *Tensor) broadcastLayout(shape []int) Layout {
	if sameShape(t.shape, shape) {
		return t.Layout()
	}
	e := t.Expand(shape...)
	return e.Layout()
}
