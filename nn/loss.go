package nn

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Reduction says how a loss combines its per-element values.
type Reduction int

const (
	// ReduceMean averages (PyTorch's default; weighted losses divide by
	// the total weight).
	ReduceMean Reduction = iota
	// ReduceSum adds.
	ReduceSum
	// ReduceNone returns the per-element losses.
	ReduceNone
)

// String returns PyTorch's name: "mean", "sum" or "none".
func (r Reduction) String() string {
	switch r {
	case ReduceMean:
		return "mean"
	case ReduceSum:
		return "sum"
	case ReduceNone:
		return "none"
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

// DefaultIgnoreIndex is PyTorch's default ignore_index: no real class has
// it, so nothing is ignored.
const DefaultIgnoreIndex = -100

// CrossEntropyLoss is torch.nn.CrossEntropyLoss: the negative
// log-likelihood of the target classes under softmax(logits), with
// optional class weights, an ignored target value and label smoothing.
// Build it with NewCrossEntropyLoss.
type CrossEntropyLoss struct {
	reduction      Reduction
	ignoreIndex    int64
	labelSmoothing float64
	weight         *tensor.Tensor
}

// CrossEntropyOption configures NewCrossEntropyLoss.
type CrossEntropyOption func(*CrossEntropyLoss)

// WithReduction sets the reduction (default ReduceMean).
func WithReduction(r Reduction) CrossEntropyOption {
	return func(l *CrossEntropyLoss) { l.reduction = r }
}

// WithIgnoreIndex makes targets equal to i contribute nothing, to the loss
// or to the mean's denominator (default DefaultIgnoreIndex).
func WithIgnoreIndex(i int64) CrossEntropyOption {
	return func(l *CrossEntropyLoss) { l.ignoreIndex = i }
}

// WithLabelSmoothing mixes the target distribution with the uniform one:
// the target class gets 1-eps+eps/C and every class eps/C. eps is in
// [0, 1].
func WithLabelSmoothing(eps float64) CrossEntropyOption {
	return func(l *CrossEntropyLoss) { l.labelSmoothing = eps }
}

// WithClassWeights rescales each class's loss by w[c] (w has shape [C]).
func WithClassWeights(w *tensor.Tensor) CrossEntropyOption {
	return func(l *CrossEntropyLoss) { l.weight = w }
}

// NewCrossEntropyLoss returns a cross-entropy loss with PyTorch's defaults
// (mean reduction, ignore index -100, no smoothing, no weights) changed by
// opts.
func NewCrossEntropyLoss(opts ...CrossEntropyOption) *CrossEntropyLoss {
	l := &CrossEntropyLoss{ignoreIndex: DefaultIgnoreIndex}
	for _, o := range opts {
		o(l)
	}
	if l.labelSmoothing < 0 || l.labelSmoothing > 1 || l.labelSmoothing != l.labelSmoothing {
		panic(fmt.Sprintf("nn.NewCrossEntropyLoss: label smoothing %v is not in [0, 1]", l.labelSmoothing))
	}
	if l.reduction < ReduceMean || l.reduction > ReduceNone {
		panic(fmt.Sprintf("nn.NewCrossEntropyLoss: unknown reduction %d", int(l.reduction)))
	}
	if l.weight != nil && (l.weight.Dim() != 1 || !l.weight.DType().IsFloat()) {
		panic(fmt.Sprintf("nn.NewCrossEntropyLoss: class weights must be a 1-d float tensor, got %v %s", l.weight.Shape(), l.weight.DType()))
	}
	return l
}

// Forward returns the loss of logits against target.
//
// logits has shape [N, C] or [N, C, d1, ...] (or [C] for one unbatched
// sample) and holds unnormalized scores. target is either class indices
// (Int64 or Int32, shape [N] or [N, d1, ...], values in [0, C) or the
// ignore index) or class probabilities (a float tensor of the logits'
// shape; the ignore index does not apply). With ReduceNone the result has
// the target's shape (class indices) or the logits' shape without the class
// axis (probabilities); otherwise it is a scalar. A mean over nothing but
// ignored targets is NaN, as in PyTorch.
func (l *CrossEntropyLoss) Forward(logits *autograd.Var, target *tensor.Tensor) *autograd.Var {
	xs := logits.Shape()
	if len(xs) == 0 {
		panic("nn.CrossEntropyLoss: logits must have a class axis, got a scalar")
	}
	if !logits.DType().IsFloat() {
		panic(fmt.Sprintf("nn.CrossEntropyLoss: logits must be floating point, got %s", logits.DType()))
	}
	unbatched := len(xs) == 1
	if unbatched {
		logits = logits.Unsqueeze(0)
		if target.DType().IsFloat() {
			if target.Dim() != 1 {
				panic(fmt.Sprintf("nn.CrossEntropyLoss: unbatched logits %v need probability targets of the same shape, got %v", xs, target.Shape()))
			}
		} else if target.Dim() != 0 {
			panic(fmt.Sprintf("nn.CrossEntropyLoss: unbatched logits %v need a scalar class target, got shape %v", xs, target.Shape()))
		}
		target = target.Unsqueeze(0)
		xs = logits.Shape()
	}
	c := xs[1]
	if l.weight != nil && l.weight.Numel() != c {
		panic(fmt.Sprintf("nn.CrossEntropyLoss: %d class weights for %d classes (logits %v)", l.weight.Numel(), c, xs))
	}
	dt := logits.DType()
	// wb is the class weight shaped [1, C, 1, ...] to broadcast over logits.
	var wb *tensor.Tensor
	if l.weight != nil {
		bs := make([]int, len(xs))
		for i := range bs {
			bs[i] = 1
		}
		bs[1] = c
		wb = l.weight.To(dt).Reshape(bs...)
	}
	logp := autograd.LogSoftmax(logits, 1)
	var out *autograd.Var
	if target.DType().IsFloat() {
		out = l.probTargets(logp, target, wb)
	} else {
		out = l.classTargets(logp, target, wb)
	}
	if unbatched && l.reduction == ReduceNone {
		out = out.Squeeze(0)
	}
	return out
}

// classTargets computes the loss for class-index targets from log-probs.
func (l *CrossEntropyLoss) classTargets(logp *autograd.Var, target *tensor.Tensor, wb *tensor.Tensor) *autograd.Var {
	xs := logp.Shape()
	c := xs[1]
	want := slices.Delete(slices.Clone(xs), 1, 2)
	if !slices.Equal(target.Shape(), want) {
		panic(fmt.Sprintf("nn.CrossEntropyLoss: target shape %v does not match logits %v (want %v: logits without the class axis)", target.Shape(), xs, want))
	}
	if !target.DType().IsInt() {
		panic(fmt.Sprintf("nn.CrossEntropyLoss: class targets must be Int64 or Int32, got %s", target.DType()))
	}
	target = target.To(tensor.Int64)
	if wb == nil && l.labelSmoothing == 0 && target.Device() == tensor.CPU {
		return l.pickTargets(logp, target)
	}
	valid := target.Ne(tensor.ScalarOf(float64(l.ignoreIndex), tensor.Int64))
	// The bounds are checked on the target's device; only the verdict (and,
	// on failure, the targets) comes to the host.
	outside := valid.LogicalAnd(target.Lt(tensor.ScalarOf(0, tensor.Int64)).LogicalOr(target.Ge(tensor.ScalarOf(float64(c), tensor.Int64))))
	if target.Numel() > 0 && outside.To(tensor.Int64).Sum(nil, false).Item() != 0 {
		for _, t := range target.Int64s() {
			if t != l.ignoreIndex && (t < 0 || t >= int64(c)) {
				panic(fmt.Sprintf("nn.CrossEntropyLoss: target %d is out of bounds for %d classes", t, c))
			}
		}
	}
	dt := logp.DType()
	safe := tensor.Where(valid, target, tensor.ZerosLike(target)).Unsqueeze(1)
	cs := make([]int, len(xs))
	for i := range cs {
		cs[i] = 1
	}
	cs[1] = c
	classes := classIndices(c, target).Reshape(cs...)
	// onehot[n, k, ...] is true where k is sample n's (non-ignored) target.
	onehot := safe.Eq(classes).LogicalAnd(valid.Unsqueeze(1))
	zero := autograd.New(tensor.ScalarOf(0, dt))

	picked := autograd.Where(onehot, logp, zero)
	tw := onehot.To(dt) // weight of each sample's target class
	if wb != nil {
		picked = picked.Mul(autograd.New(wb))
		tw = tw.Mul(wb)
	}
	total := tw.Sum([]int{1}, false).Sum(nil, false) // mean denominator
	nll := l.reduce(picked.Sum([]int{1}, false).Neg(), total)
	if l.labelSmoothing == 0 {
		return nll
	}
	all := logp
	if wb != nil {
		all = all.Mul(autograd.New(wb))
	}
	smooth := autograd.Where(valid, all.Sum([]int{1}, false).Neg(), zero)
	eps := l.labelSmoothing
	return nll.MulScalar(1 - eps).Add(l.reduce(smooth, total).MulScalar(eps / float64(c)))
}

// pickTargets is classTargets without class weights or label smoothing,
// for Int64 targets in host memory: the loss is minus each sample's
// log-probability of its class, so one Gather picks them (its gradient
// scatters back into a zero tensor) where the general path masks every
// class with a one-hot comparison, a dozen ops for one pick. The targets
// are checked and counted on the host. It gives the general path's values
// and gradients bit for bit: the picked terms are the same numbers (the
// masked sum adds only zeros to them), summed and divided alike.
func (l *CrossEntropyLoss) pickTargets(logp *autograd.Var, target *tensor.Tensor) *autograd.Var {
	c := logp.Shape()[1]
	ts := target.Int64s()
	kept := 0
	for _, t := range ts {
		if t == l.ignoreIndex {
			continue
		}
		if t < 0 || t >= int64(c) {
			panic(fmt.Sprintf("nn.CrossEntropyLoss: target %d is out of bounds for %d classes", t, c))
		}
		kept++
	}
	idx := target
	var valid *tensor.Tensor
	if kept < len(ts) {
		valid = target.Ne(tensor.ScalarOf(float64(l.ignoreIndex), tensor.Int64))
		idx = tensor.Where(valid, target, tensor.ZerosLike(target))
	}
	picked := logp.Gather(1, idx.Unsqueeze(1)).Squeeze(1)
	dt := logp.DType()
	if valid != nil {
		// Masked before the negation, as the general path's sum of
		// zeros is, so an ignored sample's loss is -0 there too.
		picked = autograd.Where(valid, picked, autograd.New(tensor.ScalarOf(0, dt)))
	}
	return l.reduce(picked.Neg(), tensor.ScalarOf(float64(kept), dt))
}

// probTargets computes the loss for class-probability targets.
func (l *CrossEntropyLoss) probTargets(logp *autograd.Var, target *tensor.Tensor, wb *tensor.Tensor) *autograd.Var {
	xs := logp.Shape()
	if !slices.Equal(target.Shape(), xs) {
		panic(fmt.Sprintf("nn.CrossEntropyLoss: probability target shape %v must equal logits shape %v", target.Shape(), xs))
	}
	dt := logp.DType()
	p := target.To(dt)
	if eps := l.labelSmoothing; eps > 0 {
		p = p.MulScalar(1 - eps).AddScalar(eps / float64(xs[1]))
	}
	if wb != nil {
		p = p.Mul(wb)
	}
	per := logp.Mul(autograd.New(p)).Sum([]int{1}, false).Neg()
	count := tensor.ScalarOf(float64(per.Value().Numel()), dt)
	return l.reduce(per, count)
}

// reduce applies the loss's reduction; mean divides by denom.
func (l *CrossEntropyLoss) reduce(per *autograd.Var, denom *tensor.Tensor) *autograd.Var {
	switch l.reduction {
	case ReduceSum:
		return per.Sum(nil, false)
	case ReduceNone:
		return per
	}
	return per.Sum(nil, false).Div(autograd.New(denom))
}

// MSELoss is torch.nn.MSELoss: the squared difference of input and target,
// reduced by Reduction (the zero value averages).
type MSELoss struct {
	Reduction Reduction
}

// NewMSELoss returns a mean-squared-error loss with the given reduction.
func NewMSELoss(r Reduction) *MSELoss { return &MSELoss{Reduction: r} }

// Forward returns the loss; target must have input's shape.
func (l *MSELoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("MSELoss", "input", input)
	sq := input.Sub(targetOf("MSELoss", input, target)).Square()
	switch l.Reduction {
	case ReduceMean:
		return sq.Mean(nil, false)
	case ReduceSum:
		return sq.Sum(nil, false)
	case ReduceNone:
		return sq
	}
	panic(fmt.Sprintf("nn.MSELoss: unknown reduction %d", int(l.Reduction)))
}

// classIndices returns the Int64 vector 0, 1, ..., c-1 on like's device,
// computed there (a running sum of ones) rather than copied from the host.
func classIndices(c int, like *tensor.Tensor) *tensor.Tensor {
	if like.Device() == tensor.CPU {
		return tensor.Arange(0, float64(c), 1, tensor.Int64)
	}
	return tensor.OnesOn(like.Device(), []int{c}, tensor.Int64).CumSum(0).SubScalar(1)
}
