package autograd

import (
	"fmt"
	"sync"

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
// The backward pass walks the steps in reverse with the fused gate kernel
// and forms the weight and bias gradients of all steps in one matrix
// product and one sum, instead of one per step. When the backward pass is
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
	n, hidden := hs[0], hs[1]
	var bv *tensor.Tensor
	if bhh != nil {
		bv = bhh.value
	}
	// The batch rows are independent sequences: split them into one chunk
	// per thread, each running the whole recurrence on its own goroutine
	// (no synchronization per step).
	chunks := gruChunks(n, hidden)
	each(len(chunks), func(c int) { chunks[c].forward(gi.value, h0.value, whh.value, bv, reverse) })
	outs := make([]*tensor.Tensor, len(chunks))
	for c, ch := range chunks {
		outs[c] = ch.out
	}
	out := tensor.Concat(outs, 1)
	if len(chunks) == 1 {
		out = outs[0]
	}
	inputs := []*Var{gi, h0, whh, bhh}
	savedT := []*tensor.Tensor{gi.value, h0.value, whh.value}
	if bv != nil {
		savedT = append(savedT, bv)
	}
	return record("GRUSequence", out, inputs, savedT, func(g *Var, in []*Var, _ *Var) []*Var {
		if recording(g, in) {
			return gruSequenceGrad(g, in, reverse)
		}
		each(len(chunks), func(c int) { chunks[c].backward(g.value, in[2].value, reverse, in[3] != nil) })
		dgis, dhs := make([]*tensor.Tensor, len(chunks)), make([]*tensor.Tensor, len(chunks))
		dw, db := chunks[0].dw, chunks[0].db
		for c, ch := range chunks {
			dgis[c], dhs[c] = ch.dgi, ch.dh
			if c > 0 {
				dw = dw.Add(ch.dw)
				if db != nil {
					db = db.Add(ch.db)
				}
			}
		}
		res := []*Var{New(tensor.Concat(dgis, 1)), New(tensor.Concat(dhs, 0)), New(dw), nil}
		if len(chunks) == 1 {
			res[0], res[1] = New(dgis[0]), New(dhs[0])
		}
		if db != nil {
			res[3] = New(db)
		}
		return res
	})
}

// gruChunk is GRUSequence's work on the batch rows [lo, lo+rows): the
// saved per-step tensors of its forward pass and the gradients of its
// backward pass.
type gruChunk struct {
	lo, rows int
	// forward: the state each step read, the hidden projection and the
	// gates of each step (indexed by time), and the states [T, rows, H].
	hPrev, gh, gates []*tensor.Tensor
	out              *tensor.Tensor
	// backward: dgi [T, rows, 3·H], dh0 [rows, H], and this chunk's share
	// of the weight and bias gradients.
	dgi, dh, dw, db *tensor.Tensor
}

// gruChunks splits n batch rows into one chunk per thread (tensor.NumThreads),
// at least 16 rows each unless there are fewer rows in all, or hidden is
// too small to be worth a goroutine.
func gruChunks(n, hidden int) []*gruChunk {
	k := max(1, min(tensor.NumThreads(), n/16))
	if n*hidden < 1024 {
		k = 1
	}
	cs := make([]*gruChunk, k)
	for c := range cs {
		lo, hi := c*n/k, (c+1)*n/k
		cs[c] = &gruChunk{lo: lo, rows: hi - lo}
	}
	return cs
}

// each runs f(0..n-1), on n goroutines when n > 1.
func each(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { f(i) })
	}
	f(0)
	wg.Wait()
}

// rowsOf returns rows [c.lo, c.lo+c.rows) of x along axis.
func (c *gruChunk) rowsOf(x *tensor.Tensor, axis int) *tensor.Tensor {
	if c.lo == 0 && c.rows == x.Shape()[axis] {
		return x
	}
	return x.Narrow(axis, c.lo, c.rows)
}

func (c *gruChunk) forward(gi, h0, whh, bhh *tensor.Tensor, reverse bool) {
	steps := gi.Shape()[0]
	gi = c.rowsOf(gi, 1)
	h := c.rowsOf(h0, 0)
	wt := whh.T()
	c.hPrev, c.gh, c.gates = make([]*tensor.Tensor, steps), make([]*tensor.Tensor, steps), make([]*tensor.Tensor, steps)
	outs := make([]*tensor.Tensor, steps)
	for i := range steps {
		t := i
		if reverse {
			t = steps - 1 - i
		}
		gh := h.MatMul(wt)
		if bhh != nil {
			gh = gh.Add(bhh)
		}
		c.hPrev[t], c.gh[t] = h, gh
		h, c.gates[t] = tensor.GRUGates(gi.Select(0, t), gh, h)
		outs[t] = h
	}
	c.out = tensor.Stack(outs, 0)
}

func (c *gruChunk) backward(g, w *tensor.Tensor, reverse, bias bool) {
	steps := len(c.gates)
	g = c.rowsOf(g, 1)
	dgis, dghs := make([]*tensor.Tensor, steps), make([]*tensor.Tensor, steps)
	var dh *tensor.Tensor
	for i := steps - 1; i >= 0; i-- {
		t := i
		if reverse {
			t = steps - 1 - i
		}
		gt := g.Select(0, t)
		if dh == nil {
			dh = gt
		} else {
			dh = dh.Add(gt)
		}
		var dhp *tensor.Tensor
		dgis[t], dghs[t], dhp = tensor.GRUGatesBackward(dh.Contiguous(), c.gates[t], c.gh[t], c.hPrev[t])
		dh = dhp.Add(dghs[t].MatMul(w))
	}
	hidden := w.Shape()[1]
	dgh := tensor.Stack(dghs, 0).Reshape(steps*c.rows, 3*hidden)
	c.dgi, c.dh = tensor.Stack(dgis, 0), dh
	c.dw = dgh.T().MatMul(tensor.Stack(c.hPrev, 0).Reshape(steps*c.rows, hidden))
	if bias {
		c.db = dgh.Sum([]int{0}, false)
	}
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
