package autograd

import "fmt"

// MatMul returns the matrix product with PyTorch matmul semantics (1-d
// operands promoted, batch axes broadcast).
func (v *Var) MatMul(u *Var) *Var {
	// Which operands need a gradient is fixed when the product is recorded
	// (as PyTorch's needs_input_grad): the product for the other one, often
	// a network's input, is skipped.
	na, nb := v.requiresGrad, u.requiresGrad
	return begin("MatMul", v, u).record(v.value.MatMul(u.value), []*Var{v, u}, saved(v, u), func(g *Var, in []*Var, _ *Var) []*Var {
		a, b := in[0], in[1]
		av, bv, gu := a, b, g
		if a.Dim() == 1 {
			av = a.Unsqueeze(0)
		}
		if b.Dim() == 1 {
			bv = b.Unsqueeze(1)
		}
		switch {
		case a.Dim() == 1 && b.Dim() == 1:
			gu = g.Reshape(1, 1)
		case a.Dim() == 1:
			gu = g.Unsqueeze(-2)
		case b.Dim() == 1:
			gu = g.Unsqueeze(-1)
		}
		var da, db *Var
		if na {
			da = gu.MatMul(bv.Transpose(-1, -2)).SumTo(av.Shape()).Reshape(a.Shape()...)
		}
		if !nb {
			return []*Var{da, nil}
		}
		if bv.Dim() == 2 && b.Dim() == 2 && av.Dim() >= 2 && !b.value.IsContiguous() && b.value.T().IsContiguous() {
			// b is a transposed matrix (Linear's Wᵀ): form the gradient in
			// the layout of the matrix behind the view, (gᵀ @ a)ᵀ, so that
			// the transpose's own backward hands a dense gradient on.
			as, gs := av.Shape(), gu.Shape()
			db = gu.Reshape(-1, gs[len(gs)-1]).T().MatMul(av.Reshape(-1, as[len(as)-1])).T()
		} else if bv.Dim() == 2 && av.Dim() > 2 {
			// A matrix shared by a batch: sum the batch inside one product,
			// (batch·m × k)ᵀ @ (batch·m × n), instead of forming a
			// [batch, k, n] gradient and reducing it.
			as, gs := av.Shape(), gu.Shape()
			db = av.Reshape(-1, as[len(as)-1]).T().MatMul(gu.Reshape(-1, gs[len(gs)-1]))
		} else {
			db = av.Transpose(-1, -2).MatMul(gu).SumTo(bv.Shape())
		}
		return []*Var{da, db.Reshape(b.Shape()...)}
	})
}

// Dot returns the inner product of two 1-d Vars of equal length.
func (v *Var) Dot(u *Var) *Var {
	if v.Dim() != 1 || u.Dim() != 1 || v.Shape()[0] != u.Shape()[0] {
		panic(fmt.Sprintf("autograd.Dot: want two 1-d Vars of equal length, got %v and %v", v.Shape(), u.Shape()))
	}
	return v.MatMul(u)
}

// Outer returns the outer product of two 1-d Vars.
func (v *Var) Outer(u *Var) *Var {
	if v.Dim() != 1 || u.Dim() != 1 {
		panic(fmt.Sprintf("autograd.Outer: want two 1-d Vars, got %v and %v", v.Shape(), u.Shape()))
	}
	return v.Unsqueeze(1).Mul(u.Unsqueeze(0))
}
