package autograd

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Neural-network operations. Forward passes run the fused tensor kernels
// (tensor/nn*.go); each gradient rule sits beside its op. Every rule here is
// itself recordable, so all of these ops support higher-order gradients:
//
//   - Softmax, LogSoftmax, Dropout: closed-form gradients written in Var
//     operations.
//   - BatchNorm, LayerNorm, GroupNorm: a plain backward pass uses the fused
//     tensor kernels (tensor.BatchNormBackward, ...); when the pass is being
//     recorded through the input, weight or output gradient (CreateGraph),
//     the same closed form is written in Var operations, recomputing the
//     batch statistics from x so that second derivatives see them.
//   - Convolutions: the forward convolution C(x, w), its input gradient
//     T(g, w) (which is also the transposed convolution) and its weight
//     gradient W(x, g) are three recorded ops whose gradients are each other
//     (all three are partial derivatives of one trilinear form <C(x,w), g>).
//   - Pooling and Embedding: the backward ops are linear in the gradient,
//     and are recorded with their adjoint (the forward op, or a gather at the
//     saved argmax indices) as their own gradient.
//
// Gradients for inputs that did not require one when the op ran are not
// computed.

// Softmax returns exp(x) normalized along axis (stable). Its gradient is
// y * (g - sum(g*y)) with y the output.
func Softmax(x *Var, axis int) *Var {
	if x.Dim() == 0 {
		return Softmax(x.Reshape(1), axis).Reshape()
	}
	s := begin("Softmax", x)
	out := x.value.Softmax(axis)
	return s.recordAttrs(map[string]any{"axis": axis}, out, []*Var{x}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, y *Var) []*Var {
		if constant(g, y) {
			return []*Var{New(tensor.SoftmaxBackward(g.value, y.value, axis))}
		}
		return []*Var{y.Mul(g.Sub(g.Mul(y).Sum([]int{axis}, true)))}
	})
}

// LogSoftmax returns x minus its log-sum-exp along axis (stable). Its
// gradient is g - exp(y) * sum(g) with y the output.
func LogSoftmax(x *Var, axis int) *Var {
	if x.Dim() == 0 {
		return LogSoftmax(x.Reshape(1), axis).Reshape()
	}
	s := begin("LogSoftmax", x)
	out := x.value.LogSoftmax(axis)
	return s.recordAttrs(map[string]any{"axis": axis}, out, []*Var{x}, []*tensor.Tensor{out}, func(g *Var, _ []*Var, y *Var) []*Var {
		return []*Var{g.Sub(y.Exp().Mul(g.Sum([]int{axis}, true)))}
	})
}

// value returns v's tensor, or nil for a nil Var.
func value(v *Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.value
}

// needs reports whether v is non-nil and requires a gradient: which inputs
// of a recorded op get one. Whether the op records at all is NeedsGrad's
// question; an op that records has no no-grad input, so the two agree.
func needs(v *Var) bool { return v != nil && v.requiresGrad }

// convOp is one convolution geometry; its three methods are the recorded
// primitives C (fwd), T (bwdInput) and W (bwdWeight).
type convOp struct {
	g      tensor.ConvGeom
	groups int
}

func groupsOf(g int) int {
	if g == 0 {
		return 1
	}
	return g
}

// fwd records C(x, w): the bias-free convolution.
func (c convOp) fwd(x, w *Var) *Var {
	s := begin("ConvForward", x, w)
	out := tensor.ConvForward(x.value, w.value, c.g, c.groups)
	nx, nw := needs(x), needs(w)
	return s.record(out, []*Var{x, w}, saved(x, w), func(g *Var, in []*Var, _ *Var) []*Var {
		res := make([]*Var, 2)
		if nx {
			res[0] = c.bwdInput(g, in[1])
		}
		if nw {
			res[1] = c.bwdWeight(in[0], g)
		}
		return res
	})
}

// bwdInput records T(gy, w): the input gradient of C, also the transposed
// convolution. <T(gy,w), h> = <C(h,w), gy>, so its gradients are C(h, w)
// for gy and W(h, gy) for w.
func (c convOp) bwdInput(gy, w *Var) *Var {
	s := begin("ConvBackwardInput", gy, w)
	out := tensor.ConvBackwardInput(gy.value, w.value, c.g, c.groups)
	ng, nw := needs(gy), needs(w)
	return s.record(out, []*Var{gy, w}, saved(gy, w), func(h *Var, in []*Var, _ *Var) []*Var {
		res := make([]*Var, 2)
		if ng {
			res[0] = c.fwd(h, in[1])
		}
		if nw {
			res[1] = c.bwdWeight(h, in[0])
		}
		return res
	})
}

// bwdWeight records W(x, gy): the weight gradient of C.
// <W(x,gy), h> = <C(x,h), gy>, so its gradients are T(gy, h) for x and
// C(x, h) for gy.
func (c convOp) bwdWeight(x, gy *Var) *Var {
	s := begin("ConvBackwardWeight", x, gy)
	out := tensor.ConvBackwardWeight(x.value, gy.value, c.g, c.groups)
	nx, ng := needs(x), needs(gy)
	return s.record(out, []*Var{x, gy}, saved(x, gy), func(h *Var, in []*Var, _ *Var) []*Var {
		res := make([]*Var, 2)
		if nx {
			res[0] = c.bwdInput(in[1], h)
		}
		if ng {
			res[1] = c.fwd(in[0], h)
		}
		return res
	})
}

// biasGrad sums g over every axis but the channel axis 1: first over the
// trailing (spatial) axes, which are contiguous in each plane, then over the
// batch, which is several times faster than one reduction over the
// non-adjacent axes 0, 2, 3.
func biasGrad(g *Var) *Var {
	if g.Dim() <= 2 {
		return g.Sum([]int{0}, false)
	}
	var axes []int
	for a := 2; a < g.Dim(); a++ {
		axes = append(axes, a)
	}
	return g.Sum(axes, false).Sum([]int{0}, false)
}

// Conv2d returns the 2-d convolution of x ([N, C, H, W], or unbatched
// [C, H, W]) with w ([O, C/groups, KH, KW]) plus the optional bias b ([O];
// nil for none); see tensor.Conv2d. Gradients: input via the transposed
// convolution (GEMM + Col2Im), weight via Im2Col + GEMM, bias by summing.
func Conv2d(x, w, b *Var, opt tensor.Conv2dOptions) *Var {
	if x.Dim() == 3 {
		return Conv2d(x.Unsqueeze(0), w, b, opt).Squeeze(0)
	}
	s := begin("Conv2d", x, w, b)
	out := tensor.Conv2d(x.value, w.value, value(b), opt)
	c := convOp{g: tensor.Conv2dGeometry(x.Shape(), w.Shape(), opt), groups: groupsOf(opt.Groups)}
	nx, nw, nb := needs(x), needs(w), needs(b)
	return s.recordAttrs(map[string]any{"options": opt}, out, []*Var{x, w, b}, saved(x, w), func(g *Var, in []*Var, _ *Var) []*Var {
		res := make([]*Var, 3)
		if nx {
			res[0] = c.bwdInput(g, in[1])
		}
		if nw {
			res[1] = c.bwdWeight(in[0], g)
		}
		if nb {
			res[2] = biasGrad(g)
		}
		return res
	})
}

// Conv1d returns the 1-d convolution of x ([N, C, L], or unbatched [C, L])
// with w ([O, C/groups, K]) plus the optional bias b ([O]); it runs Conv2d
// on height-1 images.
func Conv1d(x, w, b *Var, opt tensor.Conv1dOptions) *Var {
	if x.Dim() == 2 {
		return Conv1d(x.Unsqueeze(0), w, b, opt).Squeeze(0)
	}
	if x.Dim() != 3 || w.Dim() != 3 {
		panic(fmt.Sprintf("autograd.Conv1d: want input [N, C, L] and weight [out, in/groups, k], got shapes %v and %v", x.Shape(), w.Shape()))
	}
	return Conv2d(x.Unsqueeze(2), w.Unsqueeze(2), b, opt.To2d()).Squeeze(2)
}

// ConvTranspose2d returns the transposed convolution of x ([N, Cin, H, W],
// or unbatched) with w ([Cin, Cout/groups, KH, KW]) plus the optional bias b
// ([Cout]); see tensor.ConvTranspose2d. Its input gradient is the forward
// convolution of g with w.
func ConvTranspose2d(x, w, b *Var, opt tensor.ConvTranspose2dOptions) *Var {
	if x.Dim() == 3 {
		return ConvTranspose2d(x.Unsqueeze(0), w, b, opt).Squeeze(0)
	}
	s := begin("ConvTranspose2d", x, w, b)
	out := tensor.ConvTranspose2d(x.value, w.value, value(b), opt)
	c := convOp{g: tensor.ConvTranspose2dGeometry(x.Shape(), w.Shape(), opt), groups: groupsOf(opt.Groups)}
	nx, nw, nb := needs(x), needs(w), needs(b)
	return s.recordAttrs(map[string]any{"options": opt}, out, []*Var{x, w, b}, saved(x, w), func(g *Var, in []*Var, _ *Var) []*Var {
		res := make([]*Var, 3)
		if nx {
			res[0] = c.fwd(g, in[1])
		}
		if nw {
			res[1] = c.bwdWeight(g, in[0])
		}
		if nb {
			res[2] = biasGrad(g)
		}
		return res
	})
}

// spatial returns the last two dimensions of a shape.
func spatial(s []int) (h, w int) { return s[len(s)-2], s[len(s)-1] }

// MaxPool2d returns the maximum over each pooling window of x ([N, C, H, W]
// or [C, H, W]); see tensor.MaxPool2d. The gradient goes to the argmax of
// each window (scatter-added where windows overlap). When x does not
// require a gradient (or is marked no-grad) nothing is recorded and no positions are computed
// (tensor.MaxPool2dValues: a zero maximum of both signs may come out +0).
func MaxPool2d(x *Var, opt tensor.Pool2dOptions) *Var {
	if !NeedsGrad(x) {
		return &Var{value: tensor.MaxPool2dValues(x.value, opt), noGrad: x.noGrad}
	}
	out, _ := maxPool2d(x, opt, false)
	return out
}

// MaxPool2dWithIndices is MaxPool2d that also returns the Int64 argmax
// positions (ih*W+iw within each plane), as PyTorch's return_indices. The
// recorded node's attribute "indices" is the returned tensor itself, so
// graph readers (onnx.Export) can tell that a later MaxUnpool2d reads this
// pooling's second output rather than a value computed outside the graph.
func MaxPool2dWithIndices(x *Var, opt tensor.Pool2dOptions) (*Var, *tensor.Tensor) {
	return maxPool2d(x, opt, true)
}

// maxPool2d records MaxPool2d, with the indices among its attributes when
// withIndices is set.
func maxPool2d(x *Var, opt tensor.Pool2dOptions, withIndices bool) (*Var, *tensor.Tensor) {
	s := begin("MaxPool2d", x)
	out, idx := tensor.MaxPool2d(x.value, opt)
	h, w := spatial(x.Shape())
	attrs := map[string]any{"options": opt}
	if withIndices {
		attrs["indices"] = idx
	}
	y := s.recordAttrs(attrs, out, []*Var{x}, []*tensor.Tensor{idx}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{maxPoolScatter(g, idx, h, w)}
	})
	return y, idx
}

// maxPoolScatter records the max-pooling backward: g added at idx into
// h×w planes. Its adjoint is the gather at idx.
func maxPoolScatter(g *Var, idx *tensor.Tensor, h, w int) *Var {
	s := begin("MaxPool2dBackward", g)
	out := tensor.MaxPool2dBackward(g.value, idx, h, w)
	return s.record(out, []*Var{g}, []*tensor.Tensor{idx}, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{maxPoolGather(gg, idx)}
	})
}

// maxPoolGather records the gather of x at idx; its adjoint is the scatter.
func maxPoolGather(x *Var, idx *tensor.Tensor) *Var {
	s := begin("MaxPool2dGather", x)
	out := tensor.MaxPool2dGather(x.value, idx)
	h, w := spatial(x.Shape())
	return s.record(out, []*Var{x}, []*tensor.Tensor{idx}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{maxPoolScatter(g, idx, h, w)}
	})
}

// AvgPool2d returns the average over each pooling window of x; see
// tensor.AvgPool2d. The gradient spreads each output gradient, divided by
// its window's divisor, over the window.
func AvgPool2d(x *Var, opt tensor.Pool2dOptions) *Var {
	s := begin("AvgPool2d", x)
	out := tensor.AvgPool2d(x.value, opt)
	h, w := spatial(x.Shape())
	return s.recordAttrs(map[string]any{"options": opt}, out, []*Var{x}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{avgPoolBackward(g, h, w, opt)}
	})
}

// avgPoolBackward records AvgPool2d's backward, whose adjoint is AvgPool2d.
func avgPoolBackward(g *Var, h, w int, opt tensor.Pool2dOptions) *Var {
	s := begin("AvgPool2dBackward", g)
	out := tensor.AvgPool2dBackward(g.value, h, w, opt)
	return s.record(out, []*Var{g}, nil, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{AvgPool2d(gg, opt)}
	})
}

// AdaptiveAvgPool2d averages x ([N, C, H, W] or [C, H, W]) down to
// outH×outW with PyTorch's adaptive windows; see tensor.AdaptiveAvgPool2d.
func AdaptiveAvgPool2d(x *Var, outH, outW int) *Var {
	s := begin("AdaptiveAvgPool2d", x)
	out := tensor.AdaptiveAvgPool2d(x.value, outH, outW)
	h, w := spatial(x.Shape())
	return s.recordAttrs(map[string]any{"outH": outH, "outW": outW}, out, []*Var{x}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{adaptiveAvgPoolBackward(g, h, w)}
	})
}

// adaptiveAvgPoolBackward records the adaptive pooling backward, whose
// adjoint is the adaptive pooling itself.
func adaptiveAvgPoolBackward(g *Var, h, w int) *Var {
	s := begin("AdaptiveAvgPool2dBackward", g)
	out := tensor.AdaptiveAvgPool2dBackward(g.value, h, w)
	oh, ow := spatial(g.Shape())
	return s.record(out, []*Var{g}, nil, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{AdaptiveAvgPool2d(gg, oh, ow)}
	})
}

// normStats describes where a normalization takes its statistics: x is
// viewed as view, the statistics reduce axes of that view and have shape
// stat (view with those axes set to 1).
type normStats struct {
	view, axes, stat []int
	eps              float64
}

func newNormStats(view, axes []int, eps float64) normStats {
	stat := slices.Clone(view)
	for _, a := range axes {
		stat[a] = 1
	}
	return normStats{view: view, axes: axes, stat: stat, eps: eps}
}

// channelGrads is the recorded backward of the per-channel norms (batch and
// group norm): input, weight and bias gradients, each only where needed.
func (s normStats) channelGrads(g, x, weight *Var, bshape []int, mean, variance *tensor.Tensor, batchStats, nx, nw, nb bool) []*Var {
	gw := g
	if weight != nil {
		gw = g.Mul(weight.Reshape(bshape...))
	}
	m, r := s.meanRstd(x, mean, variance, batchStats)
	xhat, dx := s.grads(x, gw, m, r, batchStats)
	res := make([]*Var, 3)
	if nx {
		res[0] = dx
	}
	if nw {
		res[1] = biasGrad(g.Mul(xhat))
	}
	if nb {
		res[2] = biasGrad(g)
	}
	return res
}

// meanRstd returns the mean and 1/sqrt(var+eps) as Vars of the stat shape.
// Batch statistics are recomputed from x in Var operations when x is
// differentiable here (a recorded backward, so that second derivatives see
// how the statistics depend on x); otherwise the saved tensors are used.
func (s normStats) meanRstd(x *Var, mean, variance *tensor.Tensor, batchStats bool) (m, r *Var) {
	if batchStats && x.requiresGrad {
		x3 := x.Reshape(s.view...)
		m = x3.Mean(s.axes, true)
		d := x3.Sub(m)
		r = d.Mul(d).Mean(s.axes, true).AddScalar(s.eps).Rsqrt()
		return m, r
	}
	return New(mean.Reshape(s.stat...)), New(variance.Reshape(s.stat...).AddScalar(s.eps).Rsqrt())
}

// grads returns the normalized input xhat (in x's shape) and, for
// y = xhat*weight + bias with gw = g*weight (g when there is no weight),
// the input gradient: with batch statistics
// rstd * (gw - mean(gw) - xhat*mean(gw*xhat)), else gw * rstd.
func (s normStats) grads(x, gw, m, r *Var, batchStats bool) (xhat, dx *Var) {
	shape := x.Shape()
	xh := x.Reshape(s.view...).Sub(m).Mul(r)
	g3 := gw.Reshape(s.view...)
	if !batchStats {
		return xh.Reshape(shape...), g3.Mul(r).Reshape(shape...)
	}
	m1 := g3.Mean(s.axes, true)
	m2 := g3.Mul(xh).Mean(s.axes, true)
	return xh.Reshape(shape...), g3.Sub(m1).Sub(xh.Mul(m2)).Mul(r).Reshape(shape...)
}

// constant reports whether none of vs (nil entries allowed) requires a
// gradient: the backward pass is not being recorded through them, so a
// normalization can use its fused tensor-level backward instead of Var
// operations.
func constant(vs ...*Var) bool {
	for _, v := range vs {
		if needs(v) {
			return false
		}
	}
	return true
}

// pick3 wraps the gradients whose inputs need one.
func pick3(n0, n1, n2 bool, g0, g1, g2 *tensor.Tensor) []*Var {
	res := make([]*Var, 3)
	for i, p := range []struct {
		need bool
		g    *tensor.Tensor
	}{{n0, g0}, {n1, g1}, {n2, g2}} {
		if p.need {
			res[i] = New(p.g)
		}
	}
	return res
}

// BatchNorm normalizes x ([N, C, ...]) per channel; see tensor.BatchNorm.
// weight and bias ([C]) may be nil. With training (or with nil running
// statistics) it uses the batch mean and biased variance and, in training,
// updates runningMean and runningVar in place (momentum, unbiased
// variance), as PyTorch does; otherwise it uses the running statistics.
func BatchNorm(x, weight, bias *Var, runningMean, runningVar *tensor.Tensor, training bool, momentum, eps float64) *Var {
	s := begin("BatchNorm", x, weight, bias)
	out, mean, variance := tensor.BatchNormWithStats(x.value, runningMean, runningVar, value(weight), value(bias), training, momentum, eps)
	batchStats := training || runningMean == nil
	xs := x.Shape()
	n, c := xs[0], xs[1]
	st := newNormStats([]int{n, c, numel(xs[2:])}, []int{0, 2}, eps)
	bshape := make([]int, len(xs))
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[1] = c
	nx, nw, nb := needs(x), needs(weight), needs(bias)
	attrs := map[string]any{"runningMean": runningMean, "runningVar": runningVar, "training": training, "momentum": momentum, "eps": eps}
	return s.recordAttrs(attrs, out, []*Var{x, weight, bias}, saved(x), func(g *Var, in []*Var, _ *Var) []*Var {
		x := in[0]
		if constant(g, x, in[1]) {
			dx, dw, db := tensor.BatchNormBackward(g.value, x.value, mean, variance, value(in[1]), batchStats, eps)
			return pick3(nx, nw, nb, dx, dw, db)
		}
		return st.channelGrads(g, x, in[1], bshape, mean, variance, batchStats, nx, nw, nb)
	})
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// LayerNorm normalizes x over its trailing axes normalizedShape; see
// tensor.LayerNorm. weight and bias (shape normalizedShape) may be nil.
func LayerNorm(x *Var, normalizedShape []int, weight, bias *Var, eps float64) *Var {
	s := begin("LayerNorm", x, weight, bias)
	out, mean, variance := tensor.LayerNormWithStats(x.value, normalizedShape, value(weight), value(bias), eps)
	xs := x.Shape()
	lead := len(xs) - len(normalizedShape)
	st := newNormStats([]int{numel(xs[:lead]), numel(normalizedShape)}, []int{1}, eps)
	leadAxes := make([]int, lead)
	for i := range leadAxes {
		leadAxes[i] = i
	}
	sumLead := func(v *Var) *Var {
		if lead == 0 {
			return v
		}
		return v.Sum(leadAxes, false)
	}
	nx, nw, nb := needs(x), needs(weight), needs(bias)
	return s.recordAttrs(map[string]any{"normalizedShape": normalizedShape, "eps": eps}, out, []*Var{x, weight, bias}, saved(x), func(g *Var, in []*Var, _ *Var) []*Var {
		x := in[0]
		if constant(g, x, in[1]) {
			dx, dw, db := tensor.LayerNormBackward(g.value, x.value, mean, variance, normalizedShape, value(in[1]), eps)
			return pick3(nx, nw, nb, dx, dw, db)
		}
		gw := g
		if in[1] != nil {
			gw = g.Mul(in[1])
		}
		m, r := st.meanRstd(x, mean, variance, true)
		xhat, dx := st.grads(x, gw, m, r, true)
		res := make([]*Var, 3)
		if nx {
			res[0] = dx
		}
		if nw {
			res[1] = sumLead(g.Mul(xhat))
		}
		if nb {
			res[2] = sumLead(g)
		}
		return res
	})
}

// GroupNorm normalizes x ([N, C, ...]) over groups of C/groups consecutive
// channels, then applies the per-channel weight and bias ([C] or nil); see
// tensor.GroupNorm.
func GroupNorm(x *Var, groups int, weight, bias *Var, eps float64) *Var {
	s := begin("GroupNorm", x, weight, bias)
	out, mean, variance := tensor.GroupNormWithStats(x.value, groups, value(weight), value(bias), eps)
	xs := x.Shape()
	n, c := xs[0], xs[1]
	st := newNormStats([]int{n, groups, c / groups * numel(xs[2:])}, []int{2}, eps)
	bshape := make([]int, len(xs))
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[1] = c
	nx, nw, nb := needs(x), needs(weight), needs(bias)
	return s.recordAttrs(map[string]any{"groups": groups, "eps": eps}, out, []*Var{x, weight, bias}, saved(x), func(g *Var, in []*Var, _ *Var) []*Var {
		x := in[0]
		if constant(g, x, in[1]) {
			dx, dw, db := tensor.GroupNormBackward(g.value, x.value, mean, variance, groups, value(in[1]), eps)
			return pick3(nx, nw, nb, dx, dw, db)
		}
		return st.channelGrads(g, x, in[1], bshape, mean, variance, true, nx, nw, nb)
	})
}

// Dropout zeroes each element of x with probability p and scales the rest
// by 1/(1-p) (inverted dropout), drawing the mask from gen; see
// tensor.DropoutWithMask. When training is false or p is 0 it returns x itself.
// The gradient is g times the same mask.
func Dropout(x *Var, p float64, training bool, gen *tensor.Generator) *Var {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("autograd.Dropout: probability %v out of [0, 1]", p))
	}
	if !training || p == 0 {
		return x
	}
	s := begin("Dropout", x)
	out, mask := tensor.DropoutWithMask(x.value, p, gen)
	return s.recordAttrs(map[string]any{"p": p}, out, []*Var{x}, nil, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{g.Mul(New(mask))}
	})
}

// Embedding returns the rows of weight ([V, D]) picked by the integer ids
// (any shape), shaped ids.Shape() + [D]; see tensor.Embedding. The weight
// gradient adds each output row's gradient into the row it came from.
func Embedding(ids *tensor.Tensor, weight *Var) *Var {
	return embedding(begin("Embedding", weight), ids, weight)
}

// embedding is Embedding for the span s, begun before the lookup.
func embedding(s span, ids *tensor.Tensor, weight *Var) *Var {
	out := tensor.Embedding(ids, weight.value)
	v := weight.Shape()[0]
	return s.recordAttrs(map[string]any{"ids": ids}, out, []*Var{weight}, []*tensor.Tensor{ids}, func(g *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{embeddingBackward(g, ids, v)}
	})
}

// embeddingBackward records Embedding's weight gradient, whose adjoint is
// the lookup itself.
func embeddingBackward(g *Var, ids *tensor.Tensor, v int) *Var {
	s := begin("EmbeddingBackward", g)
	out := tensor.EmbeddingBackward(g.value, ids, v)
	return s.record(out, []*Var{g}, []*tensor.Tensor{ids}, func(gg *Var, _ []*Var, _ *Var) []*Var {
		return []*Var{Embedding(ids, gg)}
	})
}
