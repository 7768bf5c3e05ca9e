package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor/internal/strided"
	"github.com/emberml/ember/tensor/internal/vec"
)

// FusedKernels is the part of the backend contract for fused in-place
// updates: optimizer steps in one pass over contiguous spans of the
// parameter, its gradient and its state, and gradient accumulation, with
// no temporaries. Each kernel must give the
// same result, element by element, as the unfused sequence of tensor ops its
// doc comment spells out (each op rounding to the dtype).
type FusedKernels interface {
	// FusedAdam applies one Adam step (see AdamUpdate) to n elements.
	// maxExpAvgSq.Buf is nil unless p.AMSGrad.
	FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq Span, p AdamStep)
	// FusedSGD applies one SGD step (see SGDUpdate) to n elements. buf.Buf
	// is nil when p.Momentum is zero.
	FusedSGD(n int, param, grad, buf Span, p SGDStep)
	// AddInto adds the view sl of src to the n contiguous elements of dst
	// (same dtype, sl of n elements), in place.
	AddInto(n int, dst Span, src Buffer, sl Layout)
}

// Span is a run of contiguous elements of a buffer starting at Offset.
type Span struct {
	Buf    Buffer
	Offset int
}

// AdamStep holds the scalars of one Adam or AdamW update.
type AdamStep struct {
	// LR is the learning rate.
	LR float64
	// Beta1 and Beta2 are the decay rates of the moment averages.
	Beta1, Beta2 float64
	// Eps is added to the denominator.
	Eps float64
	// WeightDecay is the L2 penalty (Adam) or decoupled decay (AdamW).
	WeightDecay float64
	// Step is the 1-based step count used for bias correction.
	Step float64
	// Decoupled selects AdamW's decoupled weight decay.
	Decoupled bool
	// AMSGrad keeps the running maximum of the second moment.
	AMSGrad bool
	// Maximize negates the gradient.
	Maximize bool
}

// SGDStep holds the scalars of one SGD update.
type SGDStep struct {
	// LR is the learning rate.
	LR float64
	// Momentum is the momentum factor (0: no momentum buffer).
	Momentum float64
	// Dampening damps the gradient added to the momentum buffer.
	Dampening float64
	// WeightDecay adds WeightDecay·param to the gradient.
	WeightDecay float64
	// Nesterov uses Nesterov momentum.
	Nesterov bool
	// Maximize negates the gradient.
	Maximize bool
	// InitBuffer sets the momentum buffer to the (decayed) gradient instead
	// of decaying it: the first step of a parameter.
	InitBuffer bool
}

// AdamUpdate applies one Adam (or, with p.Decoupled, AdamW) step in place
// to param, expAvg, expAvgSq and, with p.AMSGrad, maxExpAvgSq (nil
// otherwise), reading grad. It computes exactly what these tensor ops
// compute, elementwise in the parameter's dtype (scalars rounded to it),
// as torch.optim.Adam's single-tensor path does:
//
//	g = grad (negated with Maximize)
//	AdamW: param = param * (1 - lr·weight_decay)
//	Adam:  g = g + param * weight_decay            (if weight_decay != 0)
//	expAvg   = expAvg * β1 + g * (1-β1)
//	expAvgSq = expAvgSq * β2 + (g*g) * (1-β2)
//	v̂ = maxExpAvgSq = Maximum(maxExpAvgSq, expAvgSq) with AMSGrad, else expAvgSq
//	param = param - expAvg / (Sqrt(v̂) / sqrt(1-β2^step) + eps) * (lr/(1-β1^step))
//
// param and the state tensors must be contiguous Float32 or Float64 tensors
// of one shape, dtype and device; grad must have that shape and dtype (any
// layout). Every tensor written has its version bumped.
func AdamUpdate(param, grad, expAvg, expAvgSq, maxExpAvgSq *Tensor, p AdamStep) {
	const op = "AdamUpdate"
	targets := []*Tensor{param, expAvg, expAvgSq}
	names := []string{"param", "expAvg", "expAvgSq"}
	if p.AMSGrad {
		targets = append(targets, maxExpAvgSq)
		names = append(names, "maxExpAvgSq")
	} else if maxExpAvgSq != nil {
		panic("tensor.AdamUpdate: maxExpAvgSq given without AMSGrad")
	}
	grad = checkFused(op, targets, names, grad, "grad").Contiguous()
	var mx Span
	if p.AMSGrad {
		mx = span(maxExpAvgSq)
	}
	param.st.backend.FusedAdam(param.Numel(), span(param), span(grad), span(expAvg), span(expAvgSq), mx, p)
	for _, t := range targets {
		t.bumpVersion()
	}
}

// SGDUpdate applies one SGD step in place to param and, when p.Momentum is
// not zero, to the momentum buffer buf (nil otherwise), reading grad. It
// computes exactly what these tensor ops compute, elementwise in the
// parameter's dtype (scalars rounded to it), as torch.optim.SGD's
// single-tensor path does:
//
//	d = grad (negated with Maximize)
//	d = d + param * weight_decay               (if weight_decay != 0)
//	buf = d with InitBuffer, else buf * momentum + d * (1-dampening)
//	d = d + buf * momentum with Nesterov, else buf    (if momentum != 0)
//	param = param - d * lr
//
// param and buf must be contiguous Float32 or Float64 tensors of one shape,
// dtype and device; grad must have that shape and dtype (any layout). Every
// tensor written has its version bumped.
func SGDUpdate(param, grad, buf *Tensor, p SGDStep) {
	const op = "SGDUpdate"
	targets := []*Tensor{param}
	names := []string{"param"}
	if p.Momentum != 0 {
		targets = append(targets, buf)
		names = append(names, "buf")
	} else if buf != nil {
		panic("tensor.SGDUpdate: momentum buffer given with zero momentum")
	}
	grad = checkFused(op, targets, names, grad, "grad").Contiguous()
	var bs Span
	if p.Momentum != 0 {
		bs = span(buf)
	}
	param.st.backend.FusedSGD(param.Numel(), span(param), span(grad), bs, p)
	for _, t := range targets {
		t.bumpVersion()
	}
}

// AddInto adds src to dst in place (dst += src) and bumps dst's version:
// the accumulation an autograd engine does into a gradient buffer it owns,
// without the temporary that dst.AddInPlace(src) makes. dst must be a
// contiguous Float32 or Float64 tensor; src must have dst's shape, dtype and
// device (any layout) and must not share dst's storage. Each element gets
// exactly dst.Add(src)'s value.
func AddInto(dst, src *Tensor) {
	const op = "AddInto"
	if src != nil && dst != nil && src.st == dst.st {
		panic("tensor.AddInto: src shares dst's storage")
	}
	checkFused(op, []*Tensor{dst}, []string{"dst"}, src, "src")
	dst.st.backend.AddInto(dst.Numel(), span(dst), src.st.buf, src.Layout())
	dst.bumpVersion()
}

// FusedSupported reports whether the fused updates (AdamUpdate, SGDUpdate)
// accept t as a parameter or state tensor: a contiguous Float32 or Float64
// tensor.
func FusedSupported(t *Tensor) bool {
	return t != nil && (t.dtype == Float32 || t.dtype == Float64) && t.IsContiguous()
}

func span(t *Tensor) Span { return Span{Buf: t.st.buf, Offset: t.offset} }

// checkFused validates the in-place targets of a fused update (the first
// one leads) and the operand it reads, and returns that operand.
func checkFused(op string, targets []*Tensor, names []string, grad *Tensor, gradName string) *Tensor {
	p := targets[0]
	for i, t := range targets {
		if t == nil {
			panic(fmt.Sprintf("tensor.%s: %s is nil", op, names[i]))
		}
		if t.dtype != Float32 && t.dtype != Float64 {
			panic(fmt.Sprintf("tensor.%s: %s has dtype %s; fused updates need Float32 or Float64", op, names[i], t.dtype))
		}
		if !t.IsContiguous() {
			panic(fmt.Sprintf("tensor.%s: %s of shape %v and strides %v is not contiguous; fused updates write contiguous tensors", op, names[i], t.shape, t.strides))
		}
		if t.dtype != p.dtype || !slices.Equal(t.shape, p.shape) || t.Device() != p.Device() {
			panic(fmt.Sprintf("tensor.%s: %s is %s %v on %s but %s is %s %v on %s; they must match", op, names[i], t.dtype, t.shape, t.Device(), names[0], p.dtype, p.shape, p.Device()))
		}
	}
	if grad == nil {
		panic(fmt.Sprintf("tensor.%s: %s is nil", op, gradName))
	}
	if grad.dtype != p.dtype || !slices.Equal(grad.shape, p.shape) || grad.Device() != p.Device() {
		panic(fmt.Sprintf("tensor.%s: %s is %s %v on %s but %s is %s %v on %s; they must match", op, gradName, grad.dtype, grad.shape, grad.Device(), names[0], p.dtype, p.shape, p.Device()))
	}
	return grad
}

// The CPU implementation of FusedKernels.

func (cpuBackend) FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq Span, p AdamStep) {
	switch dt := param.Buf.DType(); dt {
	case Float32:
		w, g, m, v := hostSpan[float32](param, n), hostSpan[float32](grad, n), hostSpan[float32](expAvg, n), hostSpan[float32](expAvgSq, n)
		if !p.Maximize && !p.AMSGrad && (p.Decoupled || p.WeightDecay == 0) {
			// The common configuration: SIMD, split across threads.
			c := adamConsts32(p)
			parallelFor(n, 64, func(lo, hi int) { vec.Adam(w[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], c) })
			return
		}
		adamKernel(w, g, m, v, hostSpan[float32](maxExpAvgSq, n), p)
	case Float64:
		adamKernel(hostSpan[float64](param, n), hostSpan[float64](grad, n), hostSpan[float64](expAvg, n), hostSpan[float64](expAvgSq, n), hostSpan[float64](maxExpAvgSq, n), p)
	default:
		panic(fmt.Sprintf("tensor.FusedAdam: unsupported dtype %s", dt))
	}
}

func (cpuBackend) FusedSGD(n int, param, grad, buf Span, p SGDStep) {
	switch dt := param.Buf.DType(); dt {
	case Float32:
		w, g, b := hostSpan[float32](param, n), hostSpan[float32](grad, n), hostSpan[float32](buf, n)
		if !p.Maximize && p.WeightDecay == 0 && p.Momentum != 0 && !p.Nesterov && !p.InitBuffer {
			// The common configuration: SIMD, split across threads.
			mom, damp, lr := float32(p.Momentum), float32(1-p.Dampening), float32(p.LR)
			parallelFor(n, 64, func(lo, hi int) { vec.SGDMomentum(w[lo:hi], g[lo:hi], b[lo:hi], mom, damp, lr) })
			return
		}
		sgdKernel(w, g, b, p)
	case Float64:
		sgdKernel(hostSpan[float64](param, n), hostSpan[float64](grad, n), hostSpan[float64](buf, n), p)
	default:
		panic(fmt.Sprintf("tensor.FusedSGD: unsupported dtype %s", dt))
	}
}

func (cpuBackend) AddInto(n int, dst Span, src Buffer, sl Layout) {
	switch dt := dst.Buf.DType(); dt {
	case Float32:
		addInto(hostSpan[float32](dst, n), src.(*cpuBuffer).data.([]float32), sl)
	case Float64:
		addInto(hostSpan[float64](dst, n), src.(*cpuBuffer).data.([]float64), sl)
	default:
		panic(fmt.Sprintf("tensor.AddInto: unsupported dtype %s", dt))
	}
}

// addInto adds the strided view sl of src to the contiguous dst.
func addInto[T float32 | float64](dst, src []T, sl Layout) {
	if strided.IsContiguous(sl.Shape, sl.Strides) {
		src = src[sl.Offset : sl.Offset+len(dst)]
		parallelFor(len(dst), 64, func(lo, hi int) {
			switch d := any(dst[lo:hi]).(type) {
			case []float32:
				vec.Add(d, d, any(src[lo:hi]).([]float32))
			default:
				d64, s64 := any(dst[lo:hi]).([]float64), any(src[lo:hi]).([]float64)
				for i := range d64 {
					d64[i] += s64[i]
				}
			}
		})
		return
	}
	strided.Walk(sl.Shape, [][]int{strided.Contiguous(sl.Shape), sl.Strides}, []int{0, sl.Offset}, func(offs []int, n int, inc []int) {
		od, os, id, is := offs[0], offs[1], inc[0], inc[1]
		for j := range n {
			dst[od+j*id] += src[os+j*is]
		}
	})
}

// hostSpan returns the n elements of a CPU span, or nil for an absent one.
func hostSpan[T float32 | float64](s Span, n int) []T {
	if s.Buf == nil {
		return nil
	}
	return s.Buf.(*cpuBuffer).data.([]T)[s.Offset : s.Offset+n]
}

// The loops below spell out every rounding the unfused ops make: each
// product and sum is converted to the element type on its own, so that no
// compiler may fuse a multiply and an add (the Go spec allows fusing x*y+z
// only without an explicit conversion). Flags are read into locals once and
// the commonest configurations get loops of their own.

// adamConsts32 are adamKernel's float32 scalars, for vec.Adam.
func adamConsts32(p AdamStep) vec.AdamConsts {
	decay := float32(1)
	if p.Decoupled {
		decay = float32(1 - p.LR*p.WeightDecay)
	}
	return vec.AdamConsts{
		B1: float32(p.Beta1), C1: float32(1 - p.Beta1), B2: float32(p.Beta2), C2: float32(1 - p.Beta2),
		BC2:      float32(math.Sqrt(1 - math.Pow(p.Beta2, p.Step))),
		Eps:      float32(p.Eps),
		StepSize: float32(p.LR / (1 - math.Pow(p.Beta1, p.Step))),
		Decay:    decay,
	}
}

func adamKernel[T float32 | float64](w, g, m, v, mx []T, p AdamStep) {
	n := len(w)
	g, m, v = g[:n], m[:n], v[:n]
	b1, b2 := T(p.Beta1), T(p.Beta2)
	c1, c2 := T(1-p.Beta1), T(1-p.Beta2)
	decay, wd := T(1-p.LR*p.WeightDecay), T(p.WeightDecay)
	bc2 := T(math.Sqrt(1 - math.Pow(p.Beta2, p.Step)))
	stepSize := T(p.LR / (1 - math.Pow(p.Beta1, p.Step)))
	eps := T(p.Eps)
	maximize, decoupled, l2 := p.Maximize, p.Decoupled, !p.Decoupled && p.WeightDecay != 0
	if !maximize && !l2 && mx == nil {
		if !decoupled {
			decay = 1 // param * 1 is param: skip the multiply below
		}
		for i := range w {
			gi := g[i]
			wi := T(w[i] * decay)
			mi := T(m[i]*b1) + T(gi*c1)
			vi := T(v[i]*b2) + T(T(gi*gi)*c2)
			m[i], v[i] = mi, vi
			denom := T(sqrt(vi)/bc2) + eps
			w[i] = wi - T(T(mi/denom)*stepSize)
		}
		return
	}
	if mx != nil {
		mx = mx[:n]
	}
	for i := range w {
		gi := g[i]
		if maximize {
			gi = -gi
		}
		wi := w[i]
		if decoupled {
			wi = T(wi * decay)
		} else if l2 {
			gi = gi + T(wi*wd)
		}
		mi := T(m[i]*b1) + T(gi*c1)
		vi := T(v[i]*b2) + T(T(gi*gi)*c2)
		m[i], v[i] = mi, vi
		vh := vi
		if mx != nil {
			vh = max(mx[i], vi) // NaN-propagating, as Maximum
			mx[i] = vh
		}
		denom := T(sqrt(vh)/bc2) + eps
		w[i] = wi - T(T(mi/denom)*stepSize)
	}
}

// sqrt is the correctly rounded square root in T (for float32, rounding
// the float64 root once more gives the correctly rounded float32 root).
func sqrt[T float32 | float64](x T) T { return T(math.Sqrt(float64(x))) }

func sgdKernel[T float32 | float64](w, g, buf []T, p SGDStep) {
	n := len(w)
	g = g[:n]
	wd, mom, damp, lr := T(p.WeightDecay), T(p.Momentum), T(1-p.Dampening), T(p.LR)
	maximize, l2, momentum, nesterov, init := p.Maximize, p.WeightDecay != 0, p.Momentum != 0, p.Nesterov, p.InitBuffer
	if momentum {
		buf = buf[:n]
	}
	switch {
	case !maximize && !l2 && !momentum:
		for i := range w {
			w[i] = w[i] - T(g[i]*lr)
		}
		return
	case !maximize && !l2 && momentum && !nesterov && !init:
		for i := range w {
			b := T(buf[i]*mom) + T(g[i]*damp)
			buf[i] = b
			w[i] = w[i] - T(b*lr)
		}
		return
	}
	for i := range w {
		d := g[i]
		if maximize {
			d = -d
		}
		if l2 {
			d = d + T(w[i]*wd)
		}
		if momentum {
			b := d
			if !init {
				b = T(buf[i]*mom) + T(d*damp)
			}
			buf[i] = b
			if nesterov {
				d = d + T(b*mom)
			} else {
				d = b
			}
		}
		w[i] = w[i] - T(d*lr)
	}
}
