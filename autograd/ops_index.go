package autograd

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Indexing and joining operations (see tensor/index.go for the forward
// semantics). Index and mask tensors are plain tensors: they take no
// gradient, and they are saved for the in-place version check because the
// gradient rules read them. Gathers and scatters are each other's adjoints,
// so every rule below is again an op of this file and higher-order
// gradients work.

// zerosOn returns zeros of the given shape with like's dtype on like's
// device.
func zerosOn(like *tensor.Tensor, shape []int) *tensor.Tensor {
	return tensor.ZerosOn(like.Device(), shape, like.DType())
}

// indexOn returns the CPU index tensor idx on like's device.
func indexOn(like, idx *tensor.Tensor) *tensor.Tensor {
	if like.Device() == idx.Device() {
		return idx
	}
	out, err := idx.ToDevice(like.Device())
	if err != nil {
		panic(fmt.Sprintf("autograd: index on %s: %v", like.Device(), err))
	}
	return out
}

// IndexSelect returns the entries of v at positions idx along axis (see
// tensor.IndexSelect); an embedding lookup is weight.IndexSelect(0, ids).
// The gradient adds each row of the output gradient into a zero tensor at
// its index, one pass over the output gradient whatever the size of v.
func (v *Var) IndexSelect(axis int, idx *tensor.Tensor) *Var {
	return begin("IndexSelect", v).recordAttrs(map[string]any{"axis": axis, "index": idx}, v.value.IndexSelect(axis, idx), []*Var{v}, []*tensor.Tensor{idx}, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{indexSelectBackward(g, tensor.ZerosLike(in[0].value), axis, idx)}
	})
}

// indexSelectBackward adds g into the zero tensor z at positions idx along
// axis: the adjoint of IndexSelect, whose own adjoint is IndexSelect again.
func indexSelectBackward(g *Var, z *tensor.Tensor, axis int, idx *tensor.Tensor) *Var {
	s := begin("IndexSelectBackward", g)
	out := z.IndexAddInPlace(axis, idx, g.value)
	return s.record(out, []*Var{g}, []*tensor.Tensor{idx}, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{gg.IndexSelect(axis, idx)}
	})
}

// IndexAdd returns v with the slices of src added at positions idx along
// axis (see tensor.IndexAdd).
func (v *Var) IndexAdd(axis int, idx *tensor.Tensor, src *Var) *Var {
	return begin("IndexAdd", v, src).record(v.value.IndexAdd(axis, idx, src.value), []*Var{v, src}, []*tensor.Tensor{idx}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g, g.IndexSelect(axis, idx)}
	})
}

// Gather picks v's entries along axis at positions idx (see tensor.Gather).
// The gradient scatter-adds the output gradient back.
func (v *Var) Gather(axis int, idx *tensor.Tensor) *Var {
	return begin("Gather", v).recordAttrs(map[string]any{"axis": axis, "index": idx}, v.value.Gather(axis, idx), []*Var{v}, []*tensor.Tensor{idx}, func(g *Var, in []*Var, _ *Var) []*Var {
		z := tensor.ZerosLike(in[0].value)
		s := begin("GatherBackward", g)
		out := z.ScatterAddInPlace(axis, idx, g.value)
		return []*Var{s.record(out, []*Var{g}, []*tensor.Tensor{idx}, func(gg *Var, _ []*Var, _ *Var) []*Var {
			return []*Var{gg.Gather(axis, idx)}
		})}
	})
}

// padToShape zero-pads x at the end of each axis up to shape.
func padToShape(x *Var, shape []int) *Var {
	xs := x.Shape()
	if sameShape(xs, shape) {
		return x
	}
	pads := make([]int, 2*len(shape))
	for d := range shape {
		pads[2*(len(shape)-1-d)+1] = shape[d] - xs[d]
	}
	return x.Pad(pads, tensor.PadConstant, 0)
}

// Scatter returns v with src's values written at the positions idx names
// along axis (see tensor.Scatter). The gradient of v is the output gradient
// with the overwritten positions zeroed; that of src gathers the output
// gradient at idx (zero for src entries outside idx's shape).
func (v *Var) Scatter(axis int, idx *tensor.Tensor, src *Var) *Var {
	return begin("Scatter", v, src).record(v.value.Scatter(axis, idx, src.value), []*Var{v, src}, []*tensor.Tensor{idx}, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g.ScatterScalar(axis, idx, 0), padToShape(g.Gather(axis, idx), in[1].Shape())}
	})
}

// ScatterScalar returns v with value written at the positions idx names
// along axis; the gradient zeroes those positions.
func (v *Var) ScatterScalar(axis int, idx *tensor.Tensor, value float64) *Var {
	return begin("ScatterScalar", v).record(v.value.ScatterScalar(axis, idx, value), []*Var{v}, []*tensor.Tensor{idx}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.ScatterScalar(axis, idx, 0)}
	})
}

// ScatterAdd returns v with src's values added at the positions idx names
// along axis (see tensor.ScatterAdd). The gradient of v is the output
// gradient; that of src gathers it at idx.
func (v *Var) ScatterAdd(axis int, idx *tensor.Tensor, src *Var) *Var {
	return begin("ScatterAdd", v, src).record(v.value.ScatterAdd(axis, idx, src.value), []*Var{v, src}, []*tensor.Tensor{idx}, func(g *Var, in []*Var, _ *Var) []*Var {
		return []*Var{g, padToShape(g.Gather(axis, idx), in[1].Shape())}
	})
}

// MaskedFill returns v with value where mask is true (see
// tensor.MaskedFill); no gradient flows through the filled positions.
func (v *Var) MaskedFill(mask *tensor.Tensor, value float64) *Var {
	return begin("MaskedFill", v).recordAttrs(map[string]any{"mask": mask, "value": value}, v.value.MaskedFill(mask, value), []*Var{v}, []*tensor.Tensor{mask}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.MaskedFill(mask, 0)}
	})
}

// MaskedSelect returns the 1-d Var of v's elements where mask is true (v and
// mask broadcast together; see tensor.MaskedSelect). The gradient scatters
// the output gradient back into zeros at the selected positions.
func (v *Var) MaskedSelect(mask *tensor.Tensor) *Var {
	shape := tensor.BroadcastShapes("MaskedSelect", v.Shape(), mask.Shape())
	x := v
	if !sameShape(v.Shape(), shape) {
		x = v.Expand(shape...)
	}
	return begin("MaskedSelect", x).record(x.value.MaskedSelect(mask), []*Var{x}, []*tensor.Tensor{mask}, func(g *Var, in []*Var, _ *Var) []*Var {
		z := tensor.ZerosLike(in[0].value)
		s := begin("MaskedSelectBackward", g)
		out := z.MaskedScatterInPlace(mask, g.value)
		return []*Var{s.record(out, []*Var{g}, []*tensor.Tensor{mask}, func(gg *Var, _ []*Var, _ *Var) []*Var {
			return []*Var{gg.MaskedSelect(mask)}
		})}
	})
}

// MaskedScatter returns v with the positions where mask is true replaced by
// consecutive elements of src (see tensor.MaskedScatter). The gradient of v
// is zero at those positions; src's gradient takes the output gradient at
// them, in order, and zero for src elements left unused.
func (v *Var) MaskedScatter(mask *tensor.Tensor, src *Var) *Var {
	return begin("MaskedScatter", v, src).record(v.value.MaskedScatter(mask, src.value), []*Var{v, src}, []*tensor.Tensor{mask}, func(g *Var, in []*Var, _ *Var) []*Var {
		sel := g.MaskedSelect(mask)
		n, k := in[1].value.Numel(), sel.value.Numel()
		if k < n {
			sel = sel.Pad([]int{0, n - k}, tensor.PadConstant, 0)
		}
		return []*Var{g.MaskedFill(mask, 0), sel.Reshape(in[1].Shape()...)}
	})
}

// narrowPieces cuts v along axis into Narrow views of the lengths of the
// tensor pieces.
func (v *Var) narrowPieces(axis int, pieces []*tensor.Tensor) []*Var {
	a := axis
	if a < 0 {
		a += v.Dim()
	}
	out := make([]*Var, len(pieces))
	at := 0
	for i, p := range pieces {
		n := p.Shape()[a]
		out[i] = v.Narrow(a, at, n)
		at += n
	}
	return out
}

// Split cuts v along axis into pieces of size elements (the last may be
// smaller); see tensor.Split.
func (v *Var) Split(size, axis int) []*Var {
	return v.narrowPieces(axis, v.value.Split(size, axis))
}

// SplitSizes cuts v along axis into pieces of the given sizes; see
// tensor.SplitSizes.
func (v *Var) SplitSizes(sizes []int, axis int) []*Var {
	return v.narrowPieces(axis, v.value.SplitSizes(sizes, axis))
}

// Chunk cuts v along axis into at most n equal pieces; see tensor.Chunk.
func (v *Var) Chunk(n, axis int) []*Var {
	return v.narrowPieces(axis, v.value.Chunk(n, axis))
}

// Pad pads v as tensor.Pad does. The gradient of constant padding crops
// (pads by the negated amounts); that of reflect, replicate and circular
// padding adds every copied element's gradient back to its source.
func (v *Var) Pad(pads []int, mode tensor.PadMode, value float64) *Var {
	pads = slices.Clone(pads)
	inShape := v.Shape()
	return begin("Pad", v).recordAttrs(map[string]any{"pads": pads, "mode": mode, "value": value}, v.value.Pad(pads, mode, value), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{padBackward(g, inShape, pads, mode)}
	})
}

func padBackward(g *Var, inShape, pads []int, mode tensor.PadMode) *Var {
	if mode == tensor.PadConstant {
		neg := make([]int, len(pads))
		for i, p := range pads {
			neg[i] = -p
		}
		return g.Pad(neg, tensor.PadConstant, 0)
	}
	nd := len(inShape)
	for i := 0; i < len(pads); i += 2 {
		if pads[i] == 0 && pads[i+1] == 0 {
			continue
		}
		a := nd - 1 - i/2
		idx := indexOn(g.value, tensor.PadIndex(mode, inShape[a], pads[i], pads[i+1]))
		shape := g.Shape()
		shape[a] = inShape[a]
		g = indexSelectBackward(g, zerosOn(g.value, shape), a, idx)
	}
	return g
}

// Repeat tiles v reps[i] times along axis i (see tensor.Repeat); the
// gradient sums the copies.
func (v *Var) Repeat(reps ...int) *Var {
	reps = slices.Clone(reps)
	inShape := v.Shape()
	return begin("Repeat", v).record(v.value.Repeat(reps...), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		lead := len(reps) - len(inShape)
		inter := make([]int, 0, 2*len(reps))
		var axes []int
		for i, r := range reps {
			s := 1
			if i >= lead {
				s = inShape[i-lead]
			}
			axes = append(axes, len(inter))
			inter = append(inter, r, s)
		}
		gs := g.Reshape(inter...)
		if len(axes) > 0 {
			gs = gs.Sum(axes, false)
		}
		return []*Var{gs.Reshape(inShape...)}
	})
}

// Tile is Repeat with reps padded by leading ones to v's rank (see
// tensor.Tile).
func (v *Var) Tile(reps ...int) *Var {
	if len(reps) < v.Dim() {
		r := make([]int, v.Dim()-len(reps), v.Dim())
		for i := range r {
			r[i] = 1
		}
		reps = append(r, reps...)
	}
	return v.Repeat(reps...)
}

// Roll shifts v's elements along axes, wrapping around (see tensor.Roll);
// the gradient rolls back.
func (v *Var) Roll(shifts, axes []int) *Var {
	shifts, axes = slices.Clone(shifts), slices.Clone(axes)
	return begin("Roll", v).recordAttrs(map[string]any{"shifts": slices.Clone(shifts), "axes": slices.Clone(axes)}, v.value.Roll(shifts, axes), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		back := make([]int, len(shifts))
		for i, s := range shifts {
			back[i] = -s
		}
		return []*Var{g.Roll(back, axes)}
	})
}

// Tril keeps the elements of the last two axes on and below diagonal k
// (see tensor.Tril); the gradient is masked the same way.
func (v *Var) Tril(k int) *Var {
	return begin("Tril", v).record(v.value.Tril(k), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Tril(k)}
	})
}

// Triu keeps the elements of the last two axes on and above diagonal k
// (see tensor.Triu); the gradient is masked the same way.
func (v *Var) Triu(k int) *Var {
	return begin("Triu", v).record(v.value.Triu(k), []*Var{v}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Triu(k)}
	})
}
