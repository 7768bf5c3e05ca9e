package tensor

import (
	"fmt"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/emberml/ember/tensor/internal/parallel"
	"github.com/emberml/ember/tensor/internal/vec"
)

// GRUSequence runs a GRU layer's recurrence over a whole sequence: from the
// input projections gi ([T, N, 3·H], gi[t] = x[t]·W_ihᵀ + b_ih, gate blocks
// r, z, n), the initial state h0 ([N, H]), the hidden weight whh ([3·H, H])
// and bias bhh ([3·H], nil for none) it computes, for t = 0…T-1 (T-1…0 when
// reverse is set),
//
//	gh[t] = h[t-1]·whhᵀ + bhh,   h[t] = GRUGates(gi[t], gh[t], h[t-1])
//
// with h[-1] = h0 (h[T] = h0 in reverse), and returns the states out
// ([T, N, H]) and, for GRUSequenceBackward, the gates and gh of every step
// ([T, N, 3·H] each). Contiguous float32 CPU operands take a fused path: the
// batch rows are split into one chunk per thread, each running the whole
// recurrence on its own goroutine with the gate kernel and single-threaded
// products written into preallocated buffers.
func GRUSequence(gi, h0, whh, bhh *Tensor, reverse bool) (out, gates, gh *Tensor) {
	steps, n, hidden := checkGRUSequence("GRUSequence", gi, h0, whh, bhh)
	if gruSequenceFast(gi, h0, whh, bhh) && steps > 0 {
		return gruSequence32(gi, h0, whh, bhh, reverse, steps, n, hidden)
	}
	outs, gs, ghs := make([]*Tensor, steps), make([]*Tensor, steps), make([]*Tensor, steps)
	h, wt := h0, whh.T()
	for i := range steps {
		t := gruStep(i, steps, reverse)
		g := h.MatMul(wt)
		if bhh != nil {
			g = g.Add(bhh)
		}
		ghs[t] = g
		h, gs[t] = GRUGates(gi.Select(0, t), g, h)
		outs[t] = h
	}
	if steps == 0 {
		return Zeros([]int{0, n, hidden}, h0.dtype), Zeros([]int{0, n, 3 * hidden}, h0.dtype), Zeros([]int{0, n, 3 * hidden}, h0.dtype)
	}
	return Stack(outs, 0), Stack(gs, 0), Stack(ghs, 0)
}

// GRUSequenceBackward returns the gradients of GRUSequence's out with
// respect to gi, h0, whh and (when bias is set, else nil) bhh, given the
// gradient gout of out ([T, N, H]), the h0 and whh it was given, and the
// out, gates and gh it returned. It walks the steps backwards with
// GRUGatesBackward and forms the weight gradient of all steps in one
// product per operand block and the bias gradient in one sum.
func GRUSequenceBackward(gout, h0, whh, out, gates, gh *Tensor, bias, reverse bool) (dgi, dh0, dwhh, dbhh *Tensor) {
	steps, n, hidden := checkGRUSequence("GRUSequenceBackward", gates, h0, whh, nil)
	if !sameShape(gout.shape, []int{steps, n, hidden}) || !sameShape(out.shape, gout.shape) || !sameShape(gh.shape, gates.shape) {
		panic(fmt.Sprintf("tensor.GRUSequenceBackward: gout %v and out %v must be [%d %d %d], gh %v must equal gates %v", gout.shape, out.shape, steps, n, hidden, gh.shape, gates.shape))
	}
	if steps == 0 {
		dgi = Zeros([]int{0, n, 3 * hidden}, h0.dtype)
		dh0, dwhh = ZerosLike(h0), ZerosLike(whh)
		if bias {
			dbhh = Zeros([]int{3 * hidden}, h0.dtype)
		}
		return dgi, dh0, dwhh, dbhh
	}
	if sameFloatDense(gout, h0, whh, out, gates, gh) && gout.dtype == Float32 {
		return gruSequenceBackward32(gout, h0, whh, out, gates, gh, bias, reverse, steps, n, hidden)
	}
	dgis, dghs := make([]*Tensor, steps), make([]*Tensor, steps)
	hPrev := func(t int) *Tensor {
		switch {
		case !reverse && t > 0:
			return out.Select(0, t-1)
		case reverse && t < steps-1:
			return out.Select(0, t+1)
		}
		return h0
	}
	var dh *Tensor
	for i := steps - 1; i >= 0; i-- {
		t := gruStep(i, steps, reverse)
		gt := gout.Select(0, t)
		if dh == nil {
			dh = gt
		} else {
			dh = dh.Add(gt)
		}
		var dhp *Tensor
		dgis[t], dghs[t], dhp = GRUGatesBackward(dh, gates.Select(0, t), gh.Select(0, t), hPrev(t))
		dh = dhp.Add(dghs[t].MatMul(whh))
	}
	dgh := Stack(dghs, 0)
	dwhh = ZerosLike(whh)
	for t := range steps {
		dwhh = dwhh.Add(dghs[t].T().MatMul(hPrev(t)))
	}
	if bias {
		dbhh = dgh.Sum([]int{0, 1}, false)
	}
	return Stack(dgis, 0), dh, dwhh, dbhh
}

// gruStep is the time index of the i-th step taken.
func gruStep(i, steps int, reverse bool) int {
	if reverse {
		return steps - 1 - i
	}
	return i
}

// checkGRUSequence checks gi ([T, N, 3·H]), h0 ([N, H]), whh ([3·H, H]) and
// bhh ([3·H] or nil), one float dtype and device, and returns T, N and H.
func checkGRUSequence(op string, gi, h0, whh, bhh *Tensor) (steps, n, hidden int) {
	ok := gi.Dim() == 3 && h0.Dim() == 2 && gi.shape[1] == h0.shape[0] && gi.shape[2] == 3*h0.shape[1] &&
		sameShape(whh.shape, []int{3 * h0.shape[1], h0.shape[1]}) && (bhh == nil || sameShape(bhh.shape, []int{3 * h0.shape[1]}))
	if !ok {
		var bs []int
		if bhh != nil {
			bs = bhh.shape
		}
		panic(fmt.Sprintf("tensor.%s: want gi [T, N, 3·H], h0 [N, H], whh [3·H, H] and bhh [3·H], got %v, %v, %v and %v", op, gi.shape, h0.shape, whh.shape, bs))
	}
	for _, t := range []*Tensor{h0, whh, bhh} {
		if t != nil && (t.dtype != gi.dtype || t.Device() != gi.Device()) {
			panic(fmt.Sprintf("tensor.%s: operands must share one dtype and device, got %v on %s and %v on %s", op, gi.dtype, gi.Device(), t.dtype, t.Device()))
		}
	}
	if !gi.dtype.IsFloat() {
		panic(fmt.Sprintf("tensor.%s: dtype %v; want a floating-point dtype", op, gi.dtype))
	}
	return gi.shape[0], h0.shape[0], h0.shape[1]
}

// gruSequenceFast reports whether GRUSequence's fused float32 path applies.
func gruSequenceFast(gi, h0, whh, bhh *Tensor) bool {
	ts := []*Tensor{gi, h0, whh}
	if bhh != nil {
		ts = append(ts, bhh)
	}
	return gi.dtype == Float32 && sameFloatDense(ts...)
}

// gruChunks splits n rows into one run per thread, of at least 16 rows
// (one run when there are fewer, or when a step is too small to share).
func gruChunks(n, hidden int) [][2]int {
	k := max(1, min(NumThreads(), n/16))
	if n*hidden < 1024 {
		k = 1
	}
	cs := make([][2]int, k)
	for c := range cs {
		cs[c] = [2]int{c * n / k, (c+1)*n/k - c*n/k}
	}
	return cs
}

// eachChunk runs f on every chunk, in parallel on the kernels' workers.
func eachChunk(cs [][2]int, f func(lo, rows int)) {
	parallel.Run(len(cs), func(i int) { f(cs[i][0], cs[i][1]) })
}

// f32 returns the float32 elements of a contiguous CPU tensor.
func f32(t *Tensor) []float32 {
	return t.st.buf.(*cpuBuffer).data.([]float32)[t.offset : t.offset+t.Numel()]
}

func gruSequence32(gi, h0, whh, bhh *Tensor, reverse bool, steps, n, hidden int) (out, gates, gh *Tensor) {
	be := h0.st.backend
	out = emptyOut(be, Float32, []int{steps, n, hidden})
	gates = emptyOut(be, Float32, []int{steps, n, 3 * hidden})
	gh = emptyOut(be, Float32, []int{steps, n, 3 * hidden})
	gid, hd, w, od, sd, ghd := f32(gi), f32(h0), f32(whh), f32(out), f32(gates), f32(gh)
	var b []float32
	if bhh != nil {
		b = f32(bhh)
	}
	g3 := 3 * hidden
	eachChunk(gruChunks(n, hidden), func(lo, rows int) {
		hp := hd[lo*hidden : (lo+rows)*hidden]
		// Every step multiplies by whhᵀ: pack it once for the sequence.
		l := gemm.PackedBLayout(rows, hidden, g3)
		wp := make([]float32, l.Size())
		gemm.PackB(l, wp, true, w, hidden)
		abuf := make([]float32, gemm.PackedSize(rows, hidden))
		for i := range steps {
			t := gruStep(i, steps, reverse)
			r3 := (t*n + lo) * g3
			r1 := (t*n + lo) * hidden
			g := ghd[r3 : r3+rows*g3]
			pa := gemm.PackAInto(abuf, false, rows, hidden, 1, hp, hidden)
			gemm.SgemmPrepacked(&pa, wp, g3, g, g3)
			if b != nil {
				for r := range rows {
					row := g[r*g3 : (r+1)*g3]
					vec.Add(row, row, b)
				}
			}
			o := od[r1 : r1+rows*hidden]
			gruRows32(sd[r3:r3+rows*g3], o, gid[r3:r3+rows*g3], g, hp, hidden)
			hp = o
		}
	})
	return out, gates, gh
}

func gruSequenceBackward32(gout, h0, whh, out, gates, gh *Tensor, bias, reverse bool, steps, n, hidden int) (dgi, dh0, dwhh, dbhh *Tensor) {
	be := h0.st.backend
	g3 := 3 * hidden
	dgi = emptyOut(be, Float32, []int{steps, n, g3})
	dgh := emptyOut(be, Float32, []int{steps, n, g3})
	dh0 = emptyOut(be, Float32, []int{n, hidden})
	god, hd, w, od, sd, ghd := f32(gout), f32(h0), f32(whh), f32(out), f32(gates), f32(gh)
	dgid, dghd, dh0d := f32(dgi), f32(dgh), f32(dh0)
	eachChunk(gruChunks(n, hidden), func(lo, rows int) {
		dh := make([]float32, rows*hidden)
		dhp := make([]float32, rows*hidden)
		// Every step multiplies by whh: pack it once for the sequence.
		l := gemm.PackedBLayout(rows, g3, hidden)
		wp := make([]float32, l.Size())
		gemm.PackB(l, wp, false, w, hidden)
		abuf := make([]float32, gemm.PackedSize(rows, g3))
		prod := make([]float32, rows*hidden)
		for i := steps - 1; i >= 0; i-- {
			t := gruStep(i, steps, reverse)
			r3 := (t*n + lo) * g3
			r1 := (t*n + lo) * hidden
			vec.Add(dh, dh, god[r1:r1+rows*hidden])
			var hp []float32
			switch {
			case !reverse && t > 0:
				hp = od[r1-n*hidden : r1-n*hidden+rows*hidden]
			case reverse && t < steps-1:
				hp = od[r1+n*hidden : r1+n*hidden+rows*hidden]
			default:
				hp = hd[lo*hidden : (lo+rows)*hidden]
			}
			gruBackRows32(dgid[r3:r3+rows*g3], dghd[r3:r3+rows*g3], dhp, dh, sd[r3:r3+rows*g3], ghd[r3:r3+rows*g3], hp, hidden)
			pa := gemm.PackAInto(abuf, false, rows, g3, 1, dghd[r3:r3+rows*g3], g3)
			gemm.SgemmPrepacked(&pa, wp, hidden, prod, hidden)
			vec.Add(dhp, dhp, prod)
			dh, dhp = dhp, dh
		}
		copy(dh0d[lo*hidden:(lo+rows)*hidden], dh)
	})
	// dwhh = Σ_t dgh[t]ᵀ·h[t-1]: the states read are h0 for the first step
	// and a contiguous run of out for the others, so two products.
	dwhh = emptyOut(be, Float32, []int{g3, hidden})
	dw := f32(dwhh)
	th := NumThreads()
	first, rest, restH := 0, dghd[n*g3:], od[:(steps-1)*n*hidden] // forward order
	if reverse {
		first, rest, restH = steps-1, dghd[:(steps-1)*n*g3], od[n*hidden:]
	}
	gemm.SgemmThreads(th, true, false, g3, hidden, n, 1, dghd[first*n*g3:(first+1)*n*g3], g3, hd, hidden, 0, dw, hidden)
	if steps > 1 {
		gemm.SgemmThreads(th, true, false, g3, hidden, (steps-1)*n, 1, rest, g3, restH, hidden, 1, dw, hidden)
	}
	if bias {
		dbhh = dgh.Reshape(steps*n, g3).Sum([]int{0}, false)
	}
	return dgi, dh0, dwhh, dbhh
}

// gruBackRows32 is GRUGatesBackward on rows: from the state gradient dh,
// the gates s, the hidden projection gh and the previous state h it writes
// the gradients of gi (a), gh (b) and h (c, the gate part only).
func gruBackRows32(a, b, c, dh, s, gh, h []float32, hidden int) {
	g3 := 3 * hidden
	for r := 0; r*hidden < len(dh); r++ {
		g, hp, cr := dh[r*hidden:(r+1)*hidden], h[r*hidden:(r+1)*hidden], c[r*hidden:(r+1)*hidden]
		sr, q := s[r*g3:(r+1)*g3], gh[r*g3:(r+1)*g3]
		ar, br := a[r*g3:(r+1)*g3], b[r*g3:(r+1)*g3]
		rr, zr, nr := sr[:hidden], sr[hidden:2*hidden], sr[2*hidden:g3]
		qn := q[2*hidden : g3]
		hp = hp[:len(g)]
		cr = cr[:len(g)]
		for j, gj := range g {
			rj, zj, nj := rr[j], zr[j], nr[j]
			dn := gj * (1 - zj) * (1 - nj*nj)
			dz := gj * (hp[j] - nj) * (zj * (1 - zj))
			dr := dn * qn[j] * (rj * (1 - rj))
			ar[j], ar[hidden+j], ar[2*hidden+j] = dr, dz, dn
			br[j], br[hidden+j], br[2*hidden+j] = dr, dz, dn*rj
			cr[j] = gj * zj
		}
	}
}
