package autograd

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// GRUGates is one step of a GRU cell's gate arithmetic (see
// tensor.GRUGates): from the input projection gi = x·W_ihᵀ + b_ih and the
// hidden projection gh = h·W_hhᵀ + b_hh (both [N, 3·H], gate blocks r, z, n
// in PyTorch's order) and the previous state h ([N, H]) it returns the new
// state
//
//	r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
//	n = tanh(gi_n + r*gh_n),  h' = n + z*(h - n),
//
// in one fused pass forward and one backward, instead of the dozen recorded
// ops (and the slice gradients of the six narrows) of the composition. When
// the backward pass is itself recorded (Options.CreateGraph) the gradient is
// built from those Var ops instead, so higher-order gradients work.
func GRUGates(gi, gh, h *Var) *Var {
	s := begin("GRUGates", gi, gh, h)
	out, gates := tensor.GRUGates(gi.value, gh.value, h.value)
	hidden := h.value.Shape()[1]
	return s.record(out, []*Var{gi, gh, h}, []*tensor.Tensor{gi.value, gh.value, h.value}, func(g *Var, in []*Var, _ *Var) []*Var {
		if recording(g, in) {
			return gruGatesGrad(g, in[0], in[1], in[2], hidden)
		}
		dgi, dgh, dh := tensor.GRUGatesBackward(g.value, gates, in[1].value, in[2].value)
		return []*Var{New(dgi), New(dgh), New(dh)}
	})
}

// recording reports whether a backward rule runs inside a recorded
// (CreateGraph) pass: only then do its gradient or inputs require grad.
func recording(g *Var, in []*Var) bool {
	if g.requiresGrad {
		return true
	}
	for _, x := range in {
		if x != nil && x.requiresGrad {
			return true
		}
	}
	return false
}

// gruGatesGrad is GRUGates's gradient rule in Var ops (see
// tensor.GRUGatesBackward for the formulas).
func gruGatesGrad(g, gi, gh, h *Var, hidden int) []*Var {
	r := gi.Narrow(-1, 0, hidden).Add(gh.Narrow(-1, 0, hidden)).Sigmoid()
	z := gi.Narrow(-1, hidden, hidden).Add(gh.Narrow(-1, hidden, hidden)).Sigmoid()
	ghn := gh.Narrow(-1, 2*hidden, hidden)
	n := gi.Narrow(-1, 2*hidden, hidden).Add(r.Mul(ghn)).Tanh()
	oneMinus := func(x *Var) *Var { return x.MulScalar(-1).AddScalar(1) }
	dn := g.Mul(oneMinus(z)).Mul(oneMinus(n.Square()))
	dz := g.Mul(h.Sub(n)).Mul(z.Mul(oneMinus(z)))
	dr := dn.Mul(ghn).Mul(r.Mul(oneMinus(r)))
	return []*Var{Concat([]*Var{dr, dz, dn}, -1), Concat([]*Var{dr, dz, dn.Mul(r)}, -1), g.Mul(z)}
}

// GRUSequence runs a GRU layer's recurrence over a whole sequence as one
// recorded op: given the input projections gi ([T, N, 3·H], gi[t] =
// x[t]·W_ihᵀ + b_ih, gate blocks r, z, n in PyTorch's order), the initial
// state h0 ([N, H]), the hidden weight whh ([3·H, H]) and bias bhh ([3·H],
// nil for none), it returns the states h[t] ([T, N, H]) of
//
//	h[t] = GRUGates(gi[t], h[t-1]·whhᵀ + bhh, h[t-1])
//
// stepping t = 0…T-1, or T-1…0 when reverse is set (the backward direction
// of a bidirectional layer; h[t] is then the state after reading x[t]).
// The work is tensor.GRUSequence and tensor.GRUSequenceBackward: fused
// gates, the batch rows split across threads, and the weight and bias
// gradients of all steps formed in one matrix product and one sum instead
// of one per step. When the backward pass is
// itself recorded (Options.CreateGraph) the gradient is taken through the
// step-by-step composition of Var ops, so higher-order gradients work.
func GRUSequence(gi, h0, whh, bhh *Var, reverse bool) *Var {
	gs, hs := gi.Shape(), h0.Shape()
	if len(gs) != 3 || len(hs) != 2 || gs[1] != hs[0] || gs[2] != 3*hs[1] ||
		!sameShape(whh.Shape(), []int{3 * hs[1], hs[1]}) || (bhh != nil && !sameShape(bhh.Shape(), []int{3 * hs[1]})) {
		var bs []int
		if bhh != nil {
			bs = bhh.Shape()
		}
		panic(fmt.Sprintf("autograd.GRUSequence: want gi [T, N, 3·H], h0 [N, H], whh [3·H, H] and bhh [3·H], got %v, %v, %v and %v", gs, hs, whh.Shape(), bs))
	}
	var bv *tensor.Tensor
	if bhh != nil {
		bv = bhh.value
	}
	inputs := []*Var{gi, h0, whh, bhh}
	s := begin("GRUSequence", inputs...)
	out, gates, gh := tensor.GRUSequence(gi.value, h0.value, whh.value, bv, reverse)
	savedT := []*tensor.Tensor{gi.value, h0.value, whh.value}
	if bv != nil {
		savedT = append(savedT, bv)
	}
	return s.record(out, inputs, savedT, func(g *Var, in []*Var, o *Var) []*Var {
		if recording(g, in) {
			return gruSequenceGrad(g, in, reverse)
		}
		dgi, dh0, dw, db := tensor.GRUSequenceBackward(g.value.Contiguous(), in[1].value, in[2].value, o.value, gates, gh, in[3] != nil, reverse)
		res := []*Var{New(dgi), New(dh0), New(dw), nil}
		if db != nil {
			res[3] = New(db)
		}
		return res
	})
}

// gruSequenceGrad is GRUSequence's gradient through the step-by-step
// composition in Var ops (recorded, for higher-order gradients).
func gruSequenceGrad(g *Var, in []*Var, reverse bool) []*Var {
	gi, h, whh, bhh := in[0], in[1], in[2], in[3]
	steps := gi.Shape()[0]
	outs := make([]*Var, steps)
	for i := range steps {
		t := i
		if reverse {
			t = steps - 1 - i
		}
		gh := h.MatMul(whh.T())
		if bhh != nil {
			gh = gh.Add(bhh)
		}
		h = GRUGates(gi.Select(0, t), gh, h)
		outs[t] = h
	}
	targets := []*Var{gi, in[1], whh}
	if bhh != nil {
		targets = append(targets, bhh)
	}
	grads, err := Grad([]*Var{Stack(outs, 0).Mul(g).Sum(nil, false)}, targets, nil, Options{CreateGraph: true})
	if err != nil {
		panic(fmt.Sprintf("autograd.GRUSequence: recorded gradient: %v", err))
	}
	return append(grads, nil)[:4]
}
