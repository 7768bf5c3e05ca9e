package autograd

import (
	"github.com/emberml/ember/tensor"
)

// View and layout operations. Their gradients route the output gradient
// back through the inverse view.

// Reshape returns v with a new shape (see tensor.Reshape).
func (v *Var) Reshape(shape ...int) *Var {
	return begin("Reshape", v).recordAttrs(map[string]any{"shape": shape}, v.value.Reshape(shape...), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Reshape(in[0].Shape()...)}
	})
}

// View is Reshape that refuses to copy (see tensor.View).
func (v *Var) View(shape ...int) *Var {
	return begin("View", v).recordAttrs(map[string]any{"shape": shape}, v.value.View(shape...), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Reshape(in[0].Shape()...)}
	})
}

// Flatten merges axes start..end into one.
func (v *Var) Flatten(start, end int) *Var {
	return begin("Flatten", v).recordAttrs(map[string]any{"start": start, "end": end}, v.value.Flatten(start, end), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Reshape(in[0].Shape()...)}
	})
}

// Permute reorders axes.
func (v *Var) Permute(axes ...int) *Var {
	return begin("Permute", v).recordAttrs(map[string]any{"axes": axes}, v.value.Permute(axes...), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		inv := make([]int, len(axes))
		for i, a := range axes {
			if a < 0 {
				a += len(axes)
			}
			inv[a] = i
		}
		return []*Var{g.Permute(inv...)}
	})
}

// Transpose swaps two axes.
func (v *Var) Transpose(a, b int) *Var {
	return begin("Transpose", v).recordAttrs(map[string]any{"a": a, "b": b}, v.value.Transpose(a, b), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Transpose(a, b)}
	})
}

// T transposes a 2-d Var.
func (v *Var) T() *Var {
	v.value.T() // validates
	return v.Transpose(0, 1)
}

// Squeeze removes size-1 axes (all of them when none are given).
func (v *Var) Squeeze(axes ...int) *Var {
	return begin("Squeeze", v).recordAttrs(map[string]any{"axes": axes}, v.value.Squeeze(axes...), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Reshape(in[0].Shape()...)}
	})
}

// Unsqueeze inserts a size-1 axis.
func (v *Var) Unsqueeze(axis int) *Var {
	return begin("Unsqueeze", v).recordAttrs(map[string]any{"axis": axis}, v.value.Unsqueeze(axis), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.Reshape(in[0].Shape()...)}
	})
}

// Expand broadcasts v to shape; the gradient sums over the broadcast axes.
func (v *Var) Expand(shape ...int) *Var {
	return begin("Expand", v).recordAttrs(map[string]any{"shape": shape}, v.value.Expand(shape...), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.SumTo(in[0].Shape())}
	})
}

// Contiguous returns a contiguous Var with v's values.
func (v *Var) Contiguous() *Var {
	if v.value.IsContiguous() {
		return v
	}
	return begin("Contiguous", v).record(v.value.Contiguous(), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g}
	})
}

// To converts v to dtype dt; the gradient converts back.
func (v *Var) To(dt tensor.DType) *Var {
	if v.DType() == dt {
		return v
	}
	from := v.DType()
	return begin("To", v).recordAttrs(map[string]any{"dtype": dt}, v.value.To(dt), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.To(from)}
	})
}

// sliceGrad scatters g into zeros of the input's shape through the same view
// that produced the output.
func sliceGrad(g *Var, inShape []int, view func(*tensor.Tensor) *tensor.Tensor, viewVar func(*Var) *Var) *Var {
	return begin("SliceBackward", g).record(sliceInto(g.value, inShape, view), []*Var{g}, nil, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{viewVar(gg)}
	})
}

func sliceInto(g *tensor.Tensor, inShape []int, view func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	z := zerosOn(g, inShape)
	view(z).CopyFrom(g)
	return z
}

// Narrow returns length elements from start along axis.
func (v *Var) Narrow(axis, start, length int) *Var {
	view := func(t *tensor.Tensor) *tensor.Tensor { return t.Narrow(axis, start, length) }
	return v.viewOp("Narrow", map[string]any{"axis": axis, "start": start, "length": length}, view, func(x *Var) *Var { return x.Narrow(axis, start, length) })
}

// Slice returns v[start:end:step] along axis.
func (v *Var) Slice(axis, start, end, step int) *Var {
	view := func(t *tensor.Tensor) *tensor.Tensor { return t.Slice(axis, start, end, step) }
	return v.viewOp("Slice", map[string]any{"axis": axis, "start": start, "end": end, "step": step}, view, func(x *Var) *Var { return x.Slice(axis, start, end, step) })
}

// Select returns index i along axis, removing the axis.
func (v *Var) Select(axis, i int) *Var {
	view := func(t *tensor.Tensor) *tensor.Tensor { return t.Select(axis, i) }
	return v.viewOp("Select", map[string]any{"axis": axis, "index": i}, view, func(x *Var) *Var { return x.Select(axis, i) })
}

func (v *Var) viewOp(name string, attrs map[string]any, view func(*tensor.Tensor) *tensor.Tensor, viewVar func(*Var) *Var) *Var {
	return begin(name, v).recordAttrs(attrs, view(v.value), []*Var{v}, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{sliceGrad(g, in[0].Shape(), view, viewVar)}
	})
}

// Flip reverses v along the given axes.
func (v *Var) Flip(axes ...int) *Var {
	return begin("Flip", v).recordAttrs(map[string]any{"axes": axes}, v.value.Flip(axes...), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Flip(axes...)}
	})
}

// Concat joins Vars along axis.
func Concat(vs []*Var, axis int) *Var {
	if len(vs) == 0 {
		panic("autograd.Concat: no Vars")
	}
	ts := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		ts[i] = v.value
	}
	s := begin("Concat", vs...)
	out := tensor.Concat(ts, axis)
	return s.recordAttrs(map[string]any{"axis": axis}, out, vs, nil, func(g *Var, in []*Var, _ *Var) []*Var {
		a := axis
		if a < 0 {
			a += out.Dim()
		}
		grads := make([]*Var, len(in))
		at := 0
		for i, x := range in {
			n := x.Shape()[a]
			grads[i] = g.Narrow(a, at, n)
			at += n
		}
		return grads
	})
}

// Stack joins same-shaped Vars along a new axis.
func Stack(vs []*Var, axis int) *Var {
	if len(vs) == 0 {
		panic("autograd.Stack: no Vars")
	}
	us := make([]*Var, len(vs))
	a := axis
	if a < 0 {
		a += vs[0].Dim() + 1
	}
	for i, v := range vs {
		us[i] = v.Unsqueeze(a)
	}
	return Concat(us, a)
}
