package tensor

import (
	"fmt"
	"slices"
)

// Concat joins tensors along axis; all other axes must match. Dtypes are
// promoted to a common one.
func Concat(ts []*Tensor, axis int) *Tensor {
	if len(ts) == 0 {
		panic("tensor.Concat: no tensors")
	}
	first := ts[0]
	a := normAxis("Concat", axis, first.Dim())
	dt := first.dtype
	total := 0
	for i, t := range ts {
		if t.Dim() != first.Dim() {
			panic(fmt.Sprintf("tensor.Concat: tensor %d has shape %v, tensor 0 has %v: ranks differ", i, t.shape, first.shape))
		}
		for d := range t.shape {
			if d != a && t.shape[d] != first.shape[d] {
				panic(fmt.Sprintf("tensor.Concat: tensor %d has shape %v, tensor 0 has %v: axis %d differs (only axis %d may)", i, t.shape, first.shape, d, a))
			}
		}
		if t.Device() != first.Device() {
			panic(fmt.Sprintf("tensor.Concat: tensor %d is on %s, tensor 0 on %s; move one with ToDevice", i, t.Device(), first.Device()))
		}
		dt = PromoteTypes(dt, t.dtype)
		total += t.shape[a]
	}
	shape := slices.Clone(first.shape)
	shape[a] = total
	out := empty(first.st.backend, dt, shape)
	at := 0
	for _, t := range ts {
		n := t.shape[a]
		if n > 0 {
			out.Narrow(a, at, n).CopyFrom(t)
		}
		at += n
	}
	out.st.version.Store(0)
	return out
}

// Stack joins same-shaped tensors along a new axis.
func Stack(ts []*Tensor, axis int) *Tensor {
	if len(ts) == 0 {
		panic("tensor.Stack: no tensors")
	}
	a := normAxis("Stack", axis, ts[0].Dim()+1)
	us := make([]*Tensor, len(ts))
	for i, t := range ts {
		if !sameShape(t.shape, ts[0].shape) {
			panic(fmt.Sprintf("tensor.Stack: tensor %d has shape %v, tensor 0 has %v", i, t.shape, ts[0].shape))
		}
		us[i] = t.Unsqueeze(a)
	}
	return Concat(us, a)
}

// Flip reverses the order of elements along the given axes (a copy).
func (t *Tensor) Flip(axes ...int) *Tensor {
	st := slices.Clone(t.strides)
	off := t.offset
	seen := make([]bool, t.Dim())
	for _, ax := range axes {
		a := normAxis("Flip", ax, t.Dim())
		if seen[a] {
			panic(fmt.Sprintf("tensor.Flip: axis %d repeated in %v", a, axes))
		}
		seen[a] = true
		if t.shape[a] > 0 {
			off += (t.shape[a] - 1) * st[a]
		}
		st[a] = -st[a]
	}
	return t.view(slices.Clone(t.shape), st, off).Clone()
}
