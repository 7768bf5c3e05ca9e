package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// labelVar converts a ±1 (or 0/1) label tensor to a constant of dtype dt.
func labelVar(op string, y *tensor.Tensor, dt tensor.DType) *autograd.Var {
	if y.DType() == tensor.Bool {
		panic(fmt.Sprintf("nn.%s: target must be numeric, got bool", op))
	}
	return autograd.New(y.To(dt))
}

// MarginRankingLoss is torch.nn.MarginRankingLoss:
// max(0, -y*(x1 - x2) + Margin) for labels y = 1 (x1 should rank higher)
// or -1.
type MarginRankingLoss struct {
	Margin    float64
	Reduction Reduction
}

// NewMarginRankingLoss returns the loss with the given margin and
// reduction (PyTorch's defaults: 0 and ReduceMean).
func NewMarginRankingLoss(margin float64, r Reduction) *MarginRankingLoss {
	return &MarginRankingLoss{Margin: margin, Reduction: r}
}

// Forward returns the loss; x1, x2 and target have the same shape and both
// inputs may require gradients.
func (l *MarginRankingLoss) Forward(x1, x2 *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("MarginRankingLoss", "input1", x1)
	checkSameShape("MarginRankingLoss", "input1", "input2", x1.Shape(), x2.Shape())
	checkSameShape("MarginRankingLoss", "input1", "target", x1.Shape(), target.Shape())
	y := labelVar("MarginRankingLoss", target, x1.DType())
	per := y.Neg().Mul(x1.Sub(x2)).AddScalar(l.Margin).Relu()
	return reduceLoss("MarginRankingLoss", per, l.Reduction)
}

// HingeEmbeddingLoss is torch.nn.HingeEmbeddingLoss: x where the label is
// 1 and max(0, Margin - x) where it is -1 (x is typically a distance).
type HingeEmbeddingLoss struct {
	Margin    float64
	Reduction Reduction
}

// NewHingeEmbeddingLoss returns the loss with PyTorch's defaults: margin 1,
// mean reduction.
func NewHingeEmbeddingLoss() *HingeEmbeddingLoss { return &HingeEmbeddingLoss{Margin: 1} }

// Forward returns the loss; target holds 1 or -1 and has input's shape.
func (l *HingeEmbeddingLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("HingeEmbeddingLoss", "input", input)
	checkSameShape("HingeEmbeddingLoss", "input", "target", input.Shape(), target.Shape())
	dt := input.DType()
	y := target.To(dt)
	zero := constVar(0, dt)
	neg := autograd.Where(y.Ne(tensor.ScalarOf(1, dt)), input.Neg().AddScalar(l.Margin).Relu(), zero)
	pos := autograd.Where(y.Ne(tensor.ScalarOf(-1, dt)), input, zero)
	return reduceLoss("HingeEmbeddingLoss", neg.Add(pos), l.Reduction)
}

// SoftMarginLoss is torch.nn.SoftMarginLoss: log(1 + exp(-y*x)) for labels
// y = ±1, computed stably.
type SoftMarginLoss struct {
	Reduction Reduction
}

// NewSoftMarginLoss returns the loss with the given reduction.
func NewSoftMarginLoss(r Reduction) *SoftMarginLoss { return &SoftMarginLoss{Reduction: r} }

// Forward returns the loss; target has input's shape.
func (l *SoftMarginLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	checkFloatVar("SoftMarginLoss", "input", input)
	checkSameShape("SoftMarginLoss", "input", "target", input.Shape(), target.Shape())
	y := labelVar("SoftMarginLoss", target, input.DType())
	return reduceLoss("SoftMarginLoss", autograd.LogSigmoid(y.Mul(input)).Neg(), l.Reduction)
}

// batched2d lifts an unbatched [C] input (and its target) to [1, C] and
// checks for [N, C]; it reports whether it lifted.
func batched2d(op string, input *autograd.Var) (*autograd.Var, bool) {
	checkFloatVar(op, "input", input)
	switch input.Dim() {
	case 1:
		return input.Unsqueeze(0), true
	case 2:
		return input, false
	}
	panic(fmt.Sprintf("nn.%s: input must be [C] or [N, C], got %v", op, input.Shape()))
}

// unbatch undoes batched2d on a per-sample result.
func unbatch(op string, per *autograd.Var, lifted bool, r Reduction) *autograd.Var {
	if lifted {
		per = per.Squeeze(0)
	}
	return reduceLoss(op, per, r)
}

// MultiLabelMarginLoss is torch.nn.MultiLabelMarginLoss: for each sample
// with target classes J (the target row up to its first -1) it is
// sum over j in J and i not in J of max(0, 1 - (x[j] - x[i])), divided by
// the number of classes C.
type MultiLabelMarginLoss struct {
	Reduction Reduction
}

// NewMultiLabelMarginLoss returns the loss with the given reduction.
func NewMultiLabelMarginLoss(r Reduction) *MultiLabelMarginLoss {
	return &MultiLabelMarginLoss{Reduction: r}
}

// Forward returns the loss of input ([C] or [N, C]) against target, an
// integer tensor of the same shape holding class indices followed by -1
// padding. With ReduceNone the result has shape [N] (or is a scalar).
func (l *MultiLabelMarginLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	const op = "MultiLabelMarginLoss"
	checkSameShape(op, "input", "target", input.Shape(), target.Shape())
	if !target.DType().IsInt() {
		panic(fmt.Sprintf("nn.%s: target must be Int64 or Int32 class indices, got %s", op, target.DType()))
	}
	x, lifted := batched2d(op, input)
	n, c := x.Shape()[0], x.Shape()[1]
	ys := target.To(tensor.Int64).Contiguous().Int64s()
	// w[n, j, i] counts how often (j target, i not target) pairs occur.
	w := make([]float64, n*c*c)
	for s := range n {
		row := ys[s*c : (s+1)*c]
		count := make([]float64, c)
		for _, y := range row {
			if y < 0 {
				if y != -1 {
					panic(fmt.Sprintf("nn.%s: target %d is not a class in [0, %d) or -1", op, y, c))
				}
				break
			}
			if y >= int64(c) {
				panic(fmt.Sprintf("nn.%s: target %d is out of bounds for %d classes", op, y, c))
			}
			count[y]++
		}
		for j := range c {
			for i := range c {
				if count[i] == 0 {
					w[(s*c+j)*c+i] = count[j]
				}
			}
		}
	}
	wt := autograd.New(tensor.FromSlice(w, n, c, c).To(x.DType()).ToDeviceOf(x.Value()))
	// z[n, j, i] = 1 - x[n, j] + x[n, i]
	z := x.Unsqueeze(1).Sub(x.Unsqueeze(2)).AddScalar(1).Relu()
	per := z.Mul(wt).Sum([]int{1, 2}, false).DivScalar(float64(c))
	return unbatch(op, per, lifted, l.Reduction)
}

// MultiLabelSoftMarginLoss is torch.nn.MultiLabelSoftMarginLoss: the
// per-class binary cross-entropy on logits,
// -(y*logsigmoid(x) + (1-y)*logsigmoid(-x)) times Weight[c], averaged over
// the C classes of each sample.
type MultiLabelSoftMarginLoss struct {
	Weight    *tensor.Tensor // per-class weights, shape [C]; nil means 1
	Reduction Reduction
}

// NewMultiLabelSoftMarginLoss returns the loss with the given reduction
// and no weights.
func NewMultiLabelSoftMarginLoss(r Reduction) *MultiLabelSoftMarginLoss {
	return &MultiLabelSoftMarginLoss{Reduction: r}
}

// Forward returns the loss of input ([C] or [N, C] logits) against target
// (0/1, same shape). With ReduceNone the result has shape [N].
func (l *MultiLabelSoftMarginLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	const op = "MultiLabelSoftMarginLoss"
	checkSameShape(op, "input", "target", input.Shape(), target.Shape())
	x, lifted := batched2d(op, input)
	y := labelVar(op, target.Reshape(x.Shape()...), x.DType())
	per := y.Mul(autograd.LogSigmoid(x)).Add(y.Neg().AddScalar(1).Mul(autograd.LogSigmoid(x.Neg()))).Neg()
	if l.Weight != nil {
		per = per.Mul(lastAxisWeight(op, "weight", l.Weight, x.Shape(), x.DType()))
	}
	return unbatch(op, per.Mean([]int{1}, false), lifted, l.Reduction)
}

// MultiMarginLoss is torch.nn.MultiMarginLoss, the multi-class hinge loss:
// for a sample with target class y it is
// sum over i != y of Weight[y] * max(0, Margin - x[y] + x[i])^P, divided by
// the number of classes C. Build it with NewMultiMarginLoss for PyTorch's
// defaults.
type MultiMarginLoss struct {
	P         int // 1 or 2
	Margin    float64
	Weight    *tensor.Tensor // per-class weights, shape [C]; nil means 1
	Reduction Reduction
}

// NewMultiMarginLoss returns the loss with PyTorch's defaults: p 1, margin
// 1, no weights, mean reduction.
func NewMultiMarginLoss() *MultiMarginLoss { return &MultiMarginLoss{P: 1, Margin: 1} }

// Forward returns the loss of input ([C] or [N, C]) against target (class
// indices, a scalar or shape [N]). With ReduceNone the result has shape
// [N].
func (l *MultiMarginLoss) Forward(input *autograd.Var, target *tensor.Tensor) *autograd.Var {
	const op = "MultiMarginLoss"
	if l.P != 1 && l.P != 2 {
		panic(fmt.Sprintf("nn.%s: p must be 1 or 2, got %d", op, l.P))
	}
	x, lifted := batched2d(op, input)
	n, c := x.Shape()[0], x.Shape()[1]
	if !target.DType().IsInt() || target.Numel() != n || target.Dim() > 1 || (target.Dim() == 1) == lifted {
		panic(fmt.Sprintf("nn.%s: target %v %s must be integer class indices of shape [%d] for input %v (a scalar when unbatched)", op, target.Shape(), target.DType(), n, input.Shape()))
	}
	tg := target.To(tensor.Int64).Reshape(n)
	for _, y := range tg.Contiguous().Int64s() {
		if y < 0 || y >= int64(c) {
			panic(fmt.Sprintf("nn.%s: target %d is out of bounds for %d classes", op, y, c))
		}
	}
	dt := x.DType()
	idx := tg.Unsqueeze(1)
	xy := x.Gather(1, idx)
	z := x.Sub(xy).AddScalar(l.Margin).Relu()
	if l.P == 2 {
		z = z.Square()
	}
	classes := classIndices(c, x.Value()).Reshape(1, c)
	z = autograd.Where(idx.Eq(classes), constVar(0, dt), z)
	if l.Weight != nil {
		if l.Weight.Dim() != 1 || l.Weight.Numel() != c || !l.Weight.DType().IsFloat() {
			panic(fmt.Sprintf("nn.%s: weight must be a float tensor of shape [%d], got %v %s", op, c, l.Weight.Shape(), l.Weight.DType()))
		}
		wy := l.Weight.To(dt).Gather(0, tg).Unsqueeze(1)
		z = z.Mul(autograd.New(wy))
	}
	return unbatch(op, z.Sum([]int{1}, false).DivScalar(float64(c)), lifted, l.Reduction)
}

// cosineEps is PyTorch's EPSILON in cosine_embedding_loss.
const cosineEps = 1e-12

// CosineEmbeddingLoss is torch.nn.CosineEmbeddingLoss: with
// cos = <x1, x2> / sqrt((|x1|² + 1e-12)(|x2|² + 1e-12)) along the last
// axis, it is 1 - cos for label 1 and max(0, cos - Margin) for label -1.
type CosineEmbeddingLoss struct {
	Margin    float64 // in [-1, 1]; PyTorch's default is 0
	Reduction Reduction
}

// NewCosineEmbeddingLoss returns the loss with the given margin and
// reduction (PyTorch's defaults: 0 and ReduceMean).
func NewCosineEmbeddingLoss(margin float64, r Reduction) *CosineEmbeddingLoss {
	return &CosineEmbeddingLoss{Margin: margin, Reduction: r}
}

// Forward returns the loss of x1 and x2 ([D] or [N, D]) against target
// (±1, a scalar or shape [N]). With ReduceNone the result has shape [N].
func (l *CosineEmbeddingLoss) Forward(x1, x2 *autograd.Var, target *tensor.Tensor) *autograd.Var {
	const op = "CosineEmbeddingLoss"
	checkFloatVar(op, "input1", x1)
	checkSameShape(op, "input1", "input2", x1.Shape(), x2.Shape())
	if d := x1.Dim(); d < 1 || d > 2 || target.Dim() != d-1 || (d == 2 && target.Shape()[0] != x1.Shape()[0]) {
		panic(fmt.Sprintf("nn.%s: inputs %v need a target of shape %v, got %v (inputs must be [D] or [N, D])", op, x1.Shape(), x1.Shape()[:max(x1.Dim()-1, 0)], target.Shape()))
	}
	dt := x1.DType()
	prod := x1.Mul(x2).Sum([]int{-1}, false)
	m1 := x1.Square().Sum([]int{-1}, false).AddScalar(cosineEps)
	m2 := x2.Square().Sum([]int{-1}, false).AddScalar(cosineEps)
	cos := prod.Div(m1.Mul(m2).Sqrt())
	y := target.To(dt)
	zero := constVar(0, dt)
	pos := autograd.Where(y.Eq(tensor.ScalarOf(1, dt)), cos.Neg().AddScalar(1), zero)
	neg := autograd.Where(y.Eq(tensor.ScalarOf(-1, dt)), cos.SubScalar(l.Margin).Relu(), zero)
	return reduceLoss(op, pos.Add(neg), l.Reduction)
}

// pairwiseDistance is torch.nn.functional.pairwise_distance: the p-norm of
// x1 - x2 + eps along the last axis.
func pairwiseDistance(x1, x2 *autograd.Var, p, eps float64) *autograd.Var {
	return x1.Sub(x2).AddScalar(eps).Norm(p, []int{-1}, false)
}

// TripletMarginLoss is torch.nn.TripletMarginLoss:
// max(0, d(a, p) - d(a, n) + Margin) with d the pairwise P-norm distance
// |x1 - x2 + Eps|_P along the last axis. With Swap, d(a, n) is replaced by
// min(d(a, n), d(p, n)). Build it with NewTripletMarginLoss for PyTorch's
// defaults.
type TripletMarginLoss struct {
	Margin    float64
	P         float64
	Eps       float64
	Swap      bool
	Reduction Reduction
}

// NewTripletMarginLoss returns the loss with PyTorch's defaults: margin 1,
// p 2, eps 1e-6, no swap, mean reduction.
func NewTripletMarginLoss() *TripletMarginLoss {
	return &TripletMarginLoss{Margin: 1, P: 2, Eps: 1e-6}
}

// Forward returns the loss of anchor, positive and negative ([D] or
// [N, D], all the same shape). With ReduceNone the result has shape [N].
func (l *TripletMarginLoss) Forward(anchor, positive, negative *autograd.Var) *autograd.Var {
	if !(l.P > 0) {
		panic(fmt.Sprintf("nn.TripletMarginLoss: p %v must be positive", l.P))
	}
	d := func(a, b *autograd.Var) *autograd.Var { return pairwiseDistance(a, b, l.P, l.Eps) }
	return tripletLoss("TripletMarginLoss", anchor, positive, negative, d, l.Margin, l.Swap, l.Reduction)
}

// tripletLoss is the loss shared by the triplet losses.
func tripletLoss(op string, a, p, n *autograd.Var, dist func(x1, x2 *autograd.Var) *autograd.Var, margin float64, swap bool, r Reduction) *autograd.Var {
	checkFloatVar(op, "anchor", a)
	checkSameShape(op, "anchor", "positive", a.Shape(), p.Shape())
	checkSameShape(op, "anchor", "negative", a.Shape(), n.Shape())
	if a.Dim() < 1 || a.Dim() > 2 {
		panic(fmt.Sprintf("nn.%s: inputs must be [D] or [N, D], got %v", op, a.Shape()))
	}
	dp := dist(a, p)
	dn := dist(a, n)
	if swap {
		dn = dn.Minimum(dist(p, n))
	}
	return reduceLoss(op, dp.Sub(dn).AddScalar(margin).Relu(), r)
}

// TripletMarginWithDistanceLoss is torch.nn.TripletMarginWithDistanceLoss:
// max(0, d(a, p) - d(a, n) + Margin) for a distance function d (nil means
// the pairwise Euclidean distance |x1 - x2 + 1e-6|_2 along the last axis,
// PyTorch's default). With Swap, d(a, n) is replaced by
// min(d(a, n), d(p, n)). Build it with NewTripletMarginWithDistanceLoss
// for PyTorch's defaults.
type TripletMarginWithDistanceLoss struct {
	// Distance maps two [N, D] (or [D]) inputs to [N] (or scalar)
	// non-negative distances.
	Distance  func(x1, x2 *autograd.Var) *autograd.Var
	Margin    float64 // positive
	Swap      bool
	Reduction Reduction
}

// NewTripletMarginWithDistanceLoss returns the loss with PyTorch's
// defaults: pairwise distance, margin 1, no swap, mean reduction.
func NewTripletMarginWithDistanceLoss() *TripletMarginWithDistanceLoss {
	return &TripletMarginWithDistanceLoss{Margin: 1}
}

// Forward returns the loss of anchor, positive and negative ([D] or
// [N, D], all the same shape).
func (l *TripletMarginWithDistanceLoss) Forward(anchor, positive, negative *autograd.Var) *autograd.Var {
	if !(l.Margin > 0) {
		panic(fmt.Sprintf("nn.TripletMarginWithDistanceLoss: margin %v must be positive", l.Margin))
	}
	d := l.Distance
	if d == nil {
		d = func(a, b *autograd.Var) *autograd.Var { return pairwiseDistance(a, b, 2, 1e-6) }
	}
	return tripletLoss("TripletMarginWithDistanceLoss", anchor, positive, negative, d, l.Margin, l.Swap, l.Reduction)
}
