package autograd

import (
	"fmt"
)

// Unbind returns every slice of v along axis, removing the axis, as
// torch.unbind does: piece i is v.Select(axis, i).
//
// Its backward runs once for all pieces: it stacks the pieces' gradients
// (zeros for pieces that received none) into one gradient for v. Selecting
// the pieces one by one with Select instead allocates a zero tensor of v's
// full shape per piece in backward, which is quadratic in the number of
// pieces (a recurrent layer's time steps, say).
//
// For graph readers, piece i is recorded as op "Unbind" with attributes
// "axis" and "index" (as Select records them) whose one input is an
// "UnbindStack" node with no attributes standing for v itself.
func (v *Var) Unbind(axis int) []*Var {
	shape := v.Shape()
	if axis < -len(shape) || axis >= len(shape) {
		panic(fmt.Sprintf("autograd.Unbind: axis %d out of range for shape %v", axis, shape))
	}
	if axis < 0 {
		axis += len(shape)
	}
	n := shape[axis]
	out := make([]*Var, n)
	if !NeedsGrad(v) {
		for i := range out {
			out[i] = &Var{value: v.value.Select(axis, i), noGrad: v.noGrad}
		}
		return out
	}
	// The pieces feed one hub node standing for v. Each piece's backward
	// files its gradient in grads and hands the hub a placeholder (a
	// one-element zero expanded to v's shape, added only once); the hub's
	// backward then stacks the collected gradients in one pass.
	grads := make([]*Var, n)
	sink := New(zerosOn(v.value, []int{1}).Expand(shape...))
	sink.gradSink = true
	hub := begin("UnbindStack", v).record(v.value, []*Var{v}, nil, func(_ *Var, _ []*Var, _ *Var) []*Var {
		pieceShape := append(shape[:axis:axis], shape[axis+1:]...)
		gs := make([]*Var, n)
		for i, g := range grads {
			if g == nil {
				g = New(zerosOn(v.value, pieceShape))
			}
			gs[i] = g
		}
		clear(grads) // ready for another pass through a retained graph
		return []*Var{Stack(gs, axis)}
	})
	for i := range out {
		attrs := map[string]any{"axis": axis, "index": i}
		out[i] = begin("Unbind", hub).recordAttrs(attrs, v.value.Select(axis, i), []*Var{hub}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
			grads[i] = g
			return []*Var{sink}
		})
	}
	return out
}
