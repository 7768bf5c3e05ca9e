package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/chewxy/math32"
)

// FusedKernels is the part of the backend contract for fused in-place
// optimizer updates: one pass over contiguous spans of the parameter, its
// gradient and its state, with no temporaries. Each kernel must give the
// same result, element by element, as the unfused sequence of tensor ops its
// doc comment spells out (each op rounding to the dtype).
type FusedKernels interface {
	// FusedAdam applies one Adam step (see AdamUpdate) to n elements.
	// maxExpAvgSq.Buf is nil unless p.AMSGrad.
	FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq Span, p AdamStep)
	// FusedSGD applies one SGD step (see SGDUpdate) to n elements. buf.Buf
	// is nil when p.Momentum is zero.
	FusedSGD(n int, param, grad, buf Span, p SGDStep)
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
	grad = checkFused(op, targets, names, grad)
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
	grad = checkFused(op, targets, names, grad)
	var bs Span
	if p.Momentum != 0 {
		bs = span(buf)
	}
	param.st.backend.FusedSGD(param.Numel(), span(param), span(grad), bs, p)
	for _, t := range targets {
		t.bumpVersion()
	}
}

// FusedSupported reports whether the fused updates (AdamUpdate, SGDUpdate)
// accept t as a parameter or state tensor: a contiguous Float32 or Float64
// tensor.
func FusedSupported(t *Tensor) bool {
	return t != nil && (t.dtype == Float32 || t.dtype == Float64) && t.IsContiguous()
}

func span(t *Tensor) Span { return Span{Buf: t.st.buf, Offset: t.offset} }

// checkFused validates the in-place targets of a fused update and returns
// grad laid out contiguously.
func checkFused(op string, targets []*Tensor, names []string, grad *Tensor) *Tensor {
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
			panic(fmt.Sprintf("tensor.%s: %s is %s %v on %s but param is %s %v on %s; they must match", op, names[i], t.dtype, t.shape, t.Device(), p.dtype, p.shape, p.Device()))
		}
	}
	if grad == nil {
		panic(fmt.Sprintf("tensor.%s: grad is nil", op))
	}
	if grad.dtype != p.dtype || !slices.Equal(grad.shape, p.shape) || grad.Device() != p.Device() {
		panic(fmt.Sprintf("tensor.%s: grad is %s %v on %s but param is %s %v on %s; they must match", op, grad.dtype, grad.shape, grad.Device(), p.dtype, p.shape, p.Device()))
	}
	return grad.Contiguous()
}

// The CPU implementation of FusedKernels.

func (cpuBackend) FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq Span, p AdamStep) {
	switch dt := param.Buf.DType(); dt {
	case Float32:
		adamF32(hostSpan[float32](param, n), hostSpan[float32](grad, n), hostSpan[float32](expAvg, n), hostSpan[float32](expAvgSq, n), hostSpan[float32](maxExpAvgSq, n), p)
	case Float64:
		adamF64(hostSpan[float64](param, n), hostSpan[float64](grad, n), hostSpan[float64](expAvg, n), hostSpan[float64](expAvgSq, n), hostSpan[float64](maxExpAvgSq, n), p)
	default:
		panic(fmt.Sprintf("tensor.FusedAdam: unsupported dtype %s", dt))
	}
}

func (cpuBackend) FusedSGD(n int, param, grad, buf Span, p SGDStep) {
	switch dt := param.Buf.DType(); dt {
	case Float32:
		sgdF32(hostSpan[float32](param, n), hostSpan[float32](grad, n), hostSpan[float32](buf, n), p)
	case Float64:
		sgdF64(hostSpan[float64](param, n), hostSpan[float64](grad, n), hostSpan[float64](buf, n), p)
	default:
		panic(fmt.Sprintf("tensor.FusedSGD: unsupported dtype %s", dt))
	}
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
// only without an explicit conversion).

func adamF32(w, g, m, v, mx []float32, p AdamStep) {
	b1, b2 := float32(p.Beta1), float32(p.Beta2)
	c1, c2 := float32(1-p.Beta1), float32(1-p.Beta2)
	decay := float32(1 - p.LR*p.WeightDecay)
	wd := float32(p.WeightDecay)
	bc2 := float32(math.Sqrt(1 - math.Pow(p.Beta2, p.Step)))
	stepSize := float32(p.LR / (1 - math.Pow(p.Beta1, p.Step)))
	eps := float32(p.Eps)
	for i := range w {
		gi := g[i]
		if p.Maximize {
			gi = -gi
		}
		wi := w[i]
		if p.Decoupled {
			wi = float32(wi * decay)
		} else if p.WeightDecay != 0 {
			gi = gi + float32(wi*wd)
		}
		mi := float32(m[i]*b1) + float32(gi*c1)
		vi := float32(v[i]*b2) + float32(float32(gi*gi)*c2)
		m[i], v[i] = mi, vi
		vh := vi
		if mx != nil {
			vh = max(mx[i], vi) // NaN-propagating, as Maximum
			mx[i] = vh
		}
		denom := float32(math32.Sqrt(vh)/bc2) + eps
		w[i] = wi - float32(float32(mi/denom)*stepSize)
	}
}

func adamF64(w, g, m, v, mx []float64, p AdamStep) {
	b1, b2 := p.Beta1, p.Beta2
	c1, c2 := 1-p.Beta1, 1-p.Beta2
	decay := 1 - p.LR*p.WeightDecay
	wd := p.WeightDecay
	bc2 := math.Sqrt(1 - math.Pow(p.Beta2, p.Step))
	stepSize := p.LR / (1 - math.Pow(p.Beta1, p.Step))
	eps := p.Eps
	for i := range w {
		gi := g[i]
		if p.Maximize {
			gi = -gi
		}
		wi := w[i]
		if p.Decoupled {
			wi = float64(wi * decay)
		} else if wd != 0 {
			gi = gi + float64(wi*wd)
		}
		mi := float64(m[i]*b1) + float64(gi*c1)
		vi := float64(v[i]*b2) + float64(float64(gi*gi)*c2)
		m[i], v[i] = mi, vi
		vh := vi
		if mx != nil {
			vh = max(mx[i], vi)
			mx[i] = vh
		}
		denom := float64(math.Sqrt(vh)/bc2) + eps
		w[i] = wi - float64(float64(mi/denom)*stepSize)
	}
}

func sgdF32(w, g, buf []float32, p SGDStep) {
	wd, mom, damp, lr := float32(p.WeightDecay), float32(p.Momentum), float32(1-p.Dampening), float32(p.LR)
	for i := range w {
		d := g[i]
		if p.Maximize {
			d = -d
		}
		if p.WeightDecay != 0 {
			d = d + float32(w[i]*wd)
		}
		if p.Momentum != 0 {
			b := d
			if !p.InitBuffer {
				b = float32(buf[i]*mom) + float32(d*damp)
			}
			buf[i] = b
			if p.Nesterov {
				d = d + float32(b*mom)
			} else {
				d = b
			}
		}
		w[i] = w[i] - float32(d*lr)
	}
}

func sgdF64(w, g, buf []float64, p SGDStep) {
	wd, mom, damp, lr := p.WeightDecay, p.Momentum, 1-p.Dampening, p.LR
	for i := range w {
		d := g[i]
		if p.Maximize {
			d = -d
		}
		if wd != 0 {
			d = d + float64(w[i]*wd)
		}
		if mom != 0 {
			b := d
			if !p.InitBuffer {
				b = float64(buf[i]*mom) + float64(d*damp)
			}
			buf[i] = b
			if p.Nesterov {
				d = d + float64(b*mom)
			} else {
				d = b
			}
		}
		w[i] = w[i] - float64(d*lr)
	}
}
