package tensor

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor/internal/vec"
)

// GRUGates computes one step of a GRU cell's gate arithmetic, as
// torch.nn.GRU does, from the input projection gi = x·W_ihᵀ + b_ih, the
// hidden projection gh = h·W_hhᵀ + b_hh (both [N, 3·H], gate blocks r, z, n
// in PyTorch's order) and the previous state h ([N, H]):
//
//	r  = sigmoid(gi_r + gh_r)
//	z  = sigmoid(gi_z + gh_z)
//	n  = tanh(gi_n + r * gh_n)
//	h' = n + z * (h - n)          (= (1-z)*n + z*h)
//
// It returns h' ([N, H]) and gates, the contiguous [N, 3·H] concatenation of
// r, z and n that GRUGatesBackward reads. Contiguous float32 and float64 CPU
// operands of one dtype take a single fused pass; others are computed with
// the tensor ops above.
func GRUGates(gi, gh, h *Tensor) (hNew, gates *Tensor) {
	hidden := checkGRUGates("GRUGates", gi, gh, h)
	if sameFloatDense(gi, gh, h) {
		switch gi.dtype {
		case Float32:
			if a, b, ok := gruGatesDense[float32](gi, gh, h, hidden); ok {
				return a, b
			}
		case Float64:
			if a, b, ok := gruGatesDense[float64](gi, gh, h, hidden); ok {
				return a, b
			}
		}
	}
	r := gi.Narrow(-1, 0, hidden).Add(gh.Narrow(-1, 0, hidden)).Sigmoid()
	z := gi.Narrow(-1, hidden, hidden).Add(gh.Narrow(-1, hidden, hidden)).Sigmoid()
	n := gi.Narrow(-1, 2*hidden, hidden).Add(r.Mul(gh.Narrow(-1, 2*hidden, hidden))).Tanh()
	return n.Add(z.Mul(h.Sub(n))), Concat([]*Tensor{r, z, n}, -1)
}

// GRUGatesBackward returns the gradients of GRUGates's h' with respect to
// gi, gh and h, given the gradient dh of h', the gates GRUGates returned
// and the gh and h it was given:
//
//	dn = dh * (1-z) * (1-n²)      dgi_n = dn,  dgh_n = dn * r
//	dz = dh * (h-n) * z * (1-z)   dgi_z = dgh_z = dz
//	dr = dn * gh_n * r * (1-r)    dgi_r = dgh_r = dr
//	dh_prev = dh * z
func GRUGatesBackward(dh, gates, gh, h *Tensor) (dgi, dgh, dhPrev *Tensor) {
	hidden := checkGRUGates("GRUGatesBackward", gates, gh, h)
	if !sameShape(dh.shape, h.shape) {
		panic(fmt.Sprintf("tensor.GRUGatesBackward: gradient shape %v must equal the state shape %v", dh.shape, h.shape))
	}
	if sameFloatDense(dh, gates, gh, h) {
		switch dh.dtype {
		case Float32:
			if a, b, c, ok := gruGatesBackwardDense[float32](dh, gates, gh, h, hidden); ok {
				return a, b, c
			}
		case Float64:
			if a, b, c, ok := gruGatesBackwardDense[float64](dh, gates, gh, h, hidden); ok {
				return a, b, c
			}
		}
	}
	r, z, n := gates.Narrow(-1, 0, hidden), gates.Narrow(-1, hidden, hidden), gates.Narrow(-1, 2*hidden, hidden)
	one := ScalarOf(1, dh.dtype)
	dn := dh.Mul(one.Sub(z)).Mul(one.Sub(n.Mul(n)))
	dz := dh.Mul(h.Sub(n)).Mul(z.Mul(one.Sub(z)))
	dr := dn.Mul(gh.Narrow(-1, 2*hidden, hidden)).Mul(r.Mul(one.Sub(r)))
	dgi = Concat([]*Tensor{dr, dz, dn}, -1)
	dgh = Concat([]*Tensor{dr, dz, dn.Mul(r)}, -1)
	return dgi, dgh, dh.Mul(z)
}

// checkGRUGates checks that a and b are [N, 3·H] and h is [N, H], all of
// one dtype and device, and returns H.
func checkGRUGates(op string, a, b, h *Tensor) int {
	if h.Dim() != 2 || a.Dim() != 2 || b.Dim() != 2 || !sameShape(a.shape, b.shape) ||
		a.shape[0] != h.shape[0] || a.shape[1] != 3*h.shape[1] {
		panic(fmt.Sprintf("tensor.%s: want two [N, 3·H] operands and an [N, H] state, got %v, %v and %v", op, a.shape, b.shape, h.shape))
	}
	if a.dtype != b.dtype || a.dtype != h.dtype || !a.dtype.IsFloat() {
		panic(fmt.Sprintf("tensor.%s: operands must share one floating-point dtype, got %v, %v and %v", op, a.dtype, b.dtype, h.dtype))
	}
	if a.Device() != b.Device() || a.Device() != h.Device() {
		panic(fmt.Sprintf("tensor.%s: operands on different devices (%s, %s, %s)", op, a.Device(), b.Device(), h.Device()))
	}
	return h.shape[1]
}

// sameFloatDense reports whether the tensors are contiguous CPU tensors of
// the first one's dtype.
func sameFloatDense(ts ...*Tensor) bool {
	for _, t := range ts {
		if _, cpu := t.st.backend.(cpuBackend); !cpu || t.dtype != ts[0].dtype || !t.IsContiguous() {
			return false
		}
	}
	return true
}

// gruGatesDense is GRUGates on contiguous CPU operands of element type T.
func gruGatesDense[T float32 | float64](gi, gh, h *Tensor, hidden int) (hNew, gates *Tensor, ok bool) {
	gid, ok1 := cpuDense[T](gi)
	ghd, ok2 := cpuDense[T](gh)
	hd, ok3 := cpuDense[T](h)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, false
	}
	be := h.st.backend
	hNew, gates = emptyOut(be, h.dtype, h.shape), emptyOut(be, h.dtype, gi.shape)
	od, gd := hNew.st.buf.(*cpuBuffer).data.([]T), gates.st.buf.(*cpuBuffer).data.([]T)
	rows, g3 := h.shape[0], 3*hidden
	parallelFor(rows*g3, g3, func(lo, hi int) {
		switch s := any(gd).(type) {
		case []float32:
			gruRows32(s[lo:hi], any(od).([]float32)[lo/3:hi/3], any(gid).([]float32)[lo:hi], any(ghd).([]float32)[lo:hi], any(hd).([]float32)[lo/3:hi/3], hidden)
		case []float64:
			gruRows64(s[lo:hi], any(od).([]float64)[lo/3:hi/3], any(gid).([]float64)[lo:hi], any(ghd).([]float64)[lo:hi], any(hd).([]float64)[lo/3:hi/3], hidden)
		}
	})
	return hNew, gates, true
}

// gruRows32 computes rows of GRUGates: the gates s (r, z, n per row of
// 3·hidden) and h' into out, from the rows of gi, gh and h.
func gruRows32(s, out, gi, gh, h []float32, hidden int) {
	g3 := 3 * hidden
	for lo := 0; lo < len(s); lo += g3 {
		sr, a, b := s[lo:lo+g3], gi[lo:lo+g3], gh[lo:lo+g3]
		o, hp := out[lo/3:lo/3+hidden], h[lo/3:lo/3+hidden]
		r, z, n := sr[:hidden], sr[hidden:2*hidden], sr[2*hidden:]
		vec.Add(r, a[:hidden], b[:hidden])
		vec.Sigmoid(r, r)
		vec.Add(z, a[hidden:2*hidden], b[hidden:2*hidden])
		vec.Sigmoid(z, z)
		vec.Mul(n, r, b[2*hidden:])
		vec.Add(n, n, a[2*hidden:])
		vec.Tanh(n, n)
		vec.Sub(o, hp, n)
		vec.Mul(o, z, o)
		vec.Add(o, n, o)
	}
}

// gruRows64 is gruRows32 for float64, with the float64 functions of math.
func gruRows64(s, out, gi, gh, h []float64, hidden int) {
	g3 := 3 * hidden
	for lo := 0; lo < len(s); lo += g3 {
		sr, a, b := s[lo:lo+g3], gi[lo:lo+g3], gh[lo:lo+g3]
		o, hp := out[lo/3:lo/3+hidden], h[lo/3:lo/3+hidden]
		r, z, n := sr[:hidden], sr[hidden:2*hidden], sr[2*hidden:]
		for j := range hidden {
			r[j] = sigmoid64(a[j] + b[j])
			z[j] = sigmoid64(a[hidden+j] + b[hidden+j])
			n[j] = math.Tanh(a[2*hidden+j] + r[j]*b[2*hidden+j])
			o[j] = n[j] + z[j]*(hp[j]-n[j])
		}
	}
}

// sigmoid64 is the logistic function, computed without overflow.
func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// gruGatesBackwardDense is GRUGatesBackward on contiguous CPU operands of
// element type T.
func gruGatesBackwardDense[T float32 | float64](dh, gates, gh, h *Tensor, hidden int) (dgi, dgh, dhPrev *Tensor, ok bool) {
	dd, ok1 := cpuDense[T](dh)
	sd, ok2 := cpuDense[T](gates)
	ghd, ok3 := cpuDense[T](gh)
	hd, ok4 := cpuDense[T](h)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, nil, nil, false
	}
	be := h.st.backend
	dgi, dgh, dhPrev = emptyOut(be, h.dtype, gates.shape), emptyOut(be, h.dtype, gates.shape), emptyOut(be, h.dtype, h.shape)
	a := dgi.st.buf.(*cpuBuffer).data.([]T)
	b := dgh.st.buf.(*cpuBuffer).data.([]T)
	c := dhPrev.st.buf.(*cpuBuffer).data.([]T)
	n3 := 3 * hidden
	for i := range h.shape[0] {
		g, s, q, hp := dd[i*hidden:(i+1)*hidden], sd[i*n3:(i+1)*n3], ghd[i*n3:(i+1)*n3], hd[i*hidden:(i+1)*hidden]
		ai, bi, ci := a[i*n3:(i+1)*n3], b[i*n3:(i+1)*n3], c[i*hidden:(i+1)*hidden]
		for j := range hidden {
			r, z, n := s[j], s[hidden+j], s[2*hidden+j]
			gj := g[j]
			dn := gj * (1 - z) * (1 - n*n)
			dz := gj * (hp[j] - n) * (z * (1 - z))
			dr := dn * q[2*hidden+j] * (r * (1 - r))
			ai[j], ai[hidden+j], ai[2*hidden+j] = dr, dz, dn
			bi[j], bi[hidden+j], bi[2*hidden+j] = dr, dz, dn*r
			ci[j] = gj * z
		}
	}
	return dgi, dgh, dhPrev, true
}
