package nn

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// NLLLoss is torch.nn.NLLLoss: the negative log-likelihood -input[n, t_n]
// of the target classes, given log-probabilities, with optional class
// weights and an ignored target value. The mean divides by the total
// weight of the non-ignored targets. Build it with NewNLLLoss for
// PyTorch's defaults.
type NLLLoss struct {
	Weight      *tensor.Tensor // per-class weights, shape [C]; nil means 1
	IgnoreIndex int64          // targets equal to it contribute nothing
	Reduction   Reduction
}

// NewNLLLoss returns an NLL loss with PyTorch's defaults: no weights,
// ignore index DefaultIgnoreIndex, mean reduction.
func NewNLLLoss() *NLLLoss { return &NLLLoss{IgnoreIndex: DefaultIgnoreIndex} }

// Forward returns the loss of input (log-probabilities, shape [N, C] or
// [N, C, d1, ...], or [C] unbatched) against target (Int64 or Int32 class
// indices of shape [N] or [N, d1, ...], or a scalar unbatched). With
// ReduceNone the result has the target's shape.
func (l *NLLLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	xs := input.Shape()
	if len(xs) == 0 {
		panic("nn.NLLLoss: input must have a class axis, got a scalar")
	}
	checkFloatVar("NLLLoss", "input", input)
	if !target.DType().IsInt() {
		panic(fmt.Sprintf("nn.NLLLoss: target must be Int64 or Int32 class indices, got %s", target.DType()))
	}
	unbatched := len(xs) == 1
	if unbatched {
		if target.Dim() != 0 {
			panic(fmt.Sprintf("nn.NLLLoss: unbatched input %v needs a scalar target, got shape %v", xs, target.Shape()))
		}
		input, target = input.Unsqueeze(0), target.Unsqueeze(0)
		xs = input.Shape()
	}
	c := xs[1]
	var wb *tensor.Tensor
	if l.Weight != nil {
		if l.Weight.Dim() != 1 || l.Weight.Numel() != c || !l.Weight.DType().IsFloat() {
			panic(fmt.Sprintf("nn.NLLLoss: weight must be a float tensor of shape [%d] (classes of input %v), got %v %s", c, xs, l.Weight.Shape(), l.Weight.DType()))
		}
		bs := make([]int, len(xs))
		for i := range bs {
			bs[i] = 1
		}
		bs[1] = c
		wb = l.Weight.To(input.DType()).Reshape(bs...)
	}
	if l.Reduction < ReduceMean || l.Reduction > ReduceNone {
		panic(fmt.Sprintf("nn.NLLLoss: unknown reduction %d", int(l.Reduction)))
	}
	ce := &CrossEntropyLoss{reduction: l.Reduction, ignoreIndex: l.IgnoreIndex}
	out := ce.classTargets(input, target, wb)
	if unbatched && l.Reduction == ReduceNone {
		out = out.Squeeze(0)
	}
	return out
}

// lastAxisWeight checks that w broadcasts against shape (PyTorch's rule)
// and converts it to dt. op and name label the panic.
func lastAxisWeight(op, name string, w *tensor.Tensor, shape []int, dt tensor.DType) *autograd.Var {
	if !w.DType().IsFloat() {
		panic(fmt.Sprintf("nn.%s: %s must be floating point, got %s", op, name, w.DType()))
	}
	ws := w.Shape()
	if len(ws) > len(shape) {
		panic(fmt.Sprintf("nn.%s: %s shape %v does not broadcast to input shape %v", op, name, ws, shape))
	}
	for i := 1; i <= len(ws); i++ {
		if d := ws[len(ws)-i]; d != 1 && d != shape[len(shape)-i] {
			panic(fmt.Sprintf("nn.%s: %s shape %v does not broadcast to input shape %v", op, name, ws, shape))
		}
	}
	return autograd.New(w.To(dt))
}

// BCELoss is torch.nn.BCELoss: the binary cross-entropy
// -Weight*(t*log(x) + (1-t)*log(1-x)) of probabilities x against targets t
// in [0, 1]. Each log is clamped below at -100, as in PyTorch, so the loss
// stays finite at x = 0 or 1.
type BCELoss struct {
	Weight    *tensor.Tensor // broadcast against the input; nil means 1
	Reduction Reduction
}

// NewBCELoss returns a binary cross-entropy loss with the given reduction
// and no weights (PyTorch's default reduction is ReduceMean).
func NewBCELoss(r Reduction) *BCELoss { return &BCELoss{Reduction: r} }

// Forward returns the loss of input (probabilities) against target (a
// float tensor of the same shape). Inputs outside [0, 1] panic.
func (l *BCELoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("BCELoss", "input", input)
	checkSameShape("BCELoss", "input", "target", input.Shape(), target.Shape())
	x := input.Value()
	dt := input.DType()
	if x.Lt(tensor.ZerosLike(x)).LogicalOr(x.Gt(tensor.OnesLike(x))).To(tensor.Float64).Sum(nil, false).Item() > 0 {
		panic("nn.BCELoss: input values must be in [0, 1]")
	}
	t := autograd.New(target.To(dt))
	logx := input.Log().Clamp(-100, math.Inf(1))
	log1mx := input.Neg().AddScalar(1).Log().Clamp(-100, math.Inf(1))
	per := t.Mul(logx).Add(t.Neg().AddScalar(1).Mul(log1mx)).Neg()
	if l.Weight != nil {
		per = per.Mul(lastAxisWeight("BCELoss", "weight", l.Weight, input.Shape(), dt))
	}
	return reduceLoss("BCELoss", per, l.Reduction)
}

// BCEWithLogitsLoss is torch.nn.BCEWithLogitsLoss: BCELoss applied to
// sigmoid(x), computed stably from the logits x as
// (1-t)*x - (1 + (PosWeight-1)*t)*logsigmoid(x), then times Weight.
// PosWeight weighs the positive term per class (it broadcasts along the
// last axis).
type BCEWithLogitsLoss struct {
	Weight    *tensor.Tensor // broadcast against the input; nil means 1
	PosWeight *tensor.Tensor // broadcast against the input; nil means 1
	Reduction Reduction
}

// NewBCEWithLogitsLoss returns the loss with the given reduction and no
// weights (PyTorch's default reduction is ReduceMean).
func NewBCEWithLogitsLoss(r Reduction) *BCEWithLogitsLoss { return &BCEWithLogitsLoss{Reduction: r} }

// Forward returns the loss of input (logits) against target (a float
// tensor of the same shape).
func (l *BCEWithLogitsLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("BCEWithLogitsLoss", "input", input)
	checkSameShape("BCEWithLogitsLoss", "input", "target", input.Shape(), target.Shape())
	dt := input.DType()
	t := autograd.New(target.To(dt))
	// logw = 1 + (pos_weight - 1)*t weighs the positive term.
	logw := constVar(1, dt)
	if l.PosWeight != nil {
		pw := lastAxisWeight("BCEWithLogitsLoss", "pos_weight", l.PosWeight, input.Shape(), dt)
		logw = pw.SubScalar(1).Mul(t).AddScalar(1)
	}
	per := t.Neg().AddScalar(1).Mul(input).Sub(logw.Mul(autograd.LogSigmoid(input)))
	if l.Weight != nil {
		per = per.Mul(lastAxisWeight("BCEWithLogitsLoss", "weight", l.Weight, input.Shape(), dt))
	}
	return reduceLoss("BCEWithLogitsLoss", per, l.Reduction)
}

// FocalLoss is the sigmoid focal loss of Lin et al. with the semantics of
// torchvision.ops.sigmoid_focal_loss: with p = sigmoid(x) and
// p_t = p*t + (1-p)*(1-t), the loss is
// alpha_t * BCEWithLogits(x, t) * (1 - p_t)^Gamma, where
// alpha_t = Alpha*t + (1-Alpha)*(1-t); a negative Alpha leaves out the
// alpha_t factor. Build it with NewFocalLoss for torchvision's defaults.
type FocalLoss struct {
	Alpha     float64
	Gamma     float64 // non-negative
	Reduction Reduction
}

// NewFocalLoss returns a focal loss with torchvision's defaults: alpha
// 0.25, gamma 2 and ReduceNone (torchvision's default reduction is "none").
func NewFocalLoss() *FocalLoss { return &FocalLoss{Alpha: 0.25, Gamma: 2, Reduction: ReduceNone} }

// Forward returns the loss of input (logits) against target (a float
// tensor of the same shape with values in [0, 1]).
func (l *FocalLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("FocalLoss", "input", input)
	checkSameShape("FocalLoss", "input", "target", input.Shape(), target.Shape())
	if l.Gamma < 0 || math.IsNaN(l.Gamma) {
		panic(fmt.Sprintf("nn.FocalLoss: gamma %v must be non-negative", l.Gamma))
	}
	dt := input.DType()
	t := autograd.New(target.To(dt))
	notT := t.Neg().AddScalar(1)
	ce := notT.Mul(input).Sub(autograd.LogSigmoid(input))
	per := ce
	if l.Gamma != 0 {
		p := input.Sigmoid()
		pt := p.Mul(t).Add(p.Neg().AddScalar(1).Mul(notT))
		per = per.Mul(pt.Neg().AddScalar(1).PowScalar(l.Gamma))
	}
	if l.Alpha >= 0 {
		per = t.MulScalar(l.Alpha).Add(notT.MulScalar(1 - l.Alpha)).Mul(per)
	}
	return reduceLoss("FocalLoss", per, l.Reduction)
}

// DiceLoss is the soft Dice loss on probabilities. For each sample n of
// probabilities p and targets t (shape [N, ...]; sums run over every axis
// but the first) it is
//
//	1 - (2*sum(p*t) + Smooth) / (sum(p) + sum(t) + Smooth),
//
// and Reduction combines the N values. Build it with NewDiceLoss for the
// default smoothing 1.
type DiceLoss struct {
	Smooth    float64 // added to numerator and denominator; non-negative
	Reduction Reduction
}

// NewDiceLoss returns a Dice loss with smoothing 1 and mean reduction.
func NewDiceLoss() *DiceLoss { return &DiceLoss{Smooth: 1} }

// Forward returns the loss of input (probabilities, at least 2-d) against
// target (a float tensor of the same shape).
func (l *DiceLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("DiceLoss", "input", input)
	checkSameShape("DiceLoss", "input", "target", input.Shape(), target.Shape())
	if input.Dim() < 2 {
		panic(fmt.Sprintf("nn.DiceLoss: input must be [N, ...] with at least 2 axes, got %v", input.Shape()))
	}
	if l.Smooth < 0 || math.IsNaN(l.Smooth) {
		panic(fmt.Sprintf("nn.DiceLoss: smooth %v must be non-negative", l.Smooth))
	}
	axes := make([]int, input.Dim()-1)
	for i := range axes {
		axes[i] = i + 1
	}
	t := autograd.New(target.To(input.DType()))
	inter := input.Mul(t).Sum(axes, false)
	den := input.Sum(axes, false).Add(t.Sum(axes, false)).AddScalar(l.Smooth)
	per := inter.MulScalar(2).AddScalar(l.Smooth).Div(den).Neg().AddScalar(1)
	return reduceLoss("DiceLoss", per, l.Reduction)
}
