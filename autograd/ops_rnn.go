package autograd

import "github.com/emberml/ember/tensor"

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
	out, gates := tensor.GRUGates(gi.value, gh.value, h.value)
	hidden := h.value.Shape()[1]
	return record("GRUGates", out, []*Var{gi, gh, h}, []*tensor.Tensor{gi.value, gh.value, h.value}, func(g *Var, in []*Var, _ *Var) []*Var {
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
