package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Metric is a streaming evaluation metric. Update folds in one batch of
// predictions and targets, Compute returns the value over everything seen
// since the last Reset, and Reset starts over. Every metric in this package
// is exact under streaming: updating batch by batch gives the same value as
// one Update with all the data concatenated along the first axis.
//
// Update panics when the shapes or dtypes of pred and target do not fit the
// metric or when a class label is out of range; the message names the
// metric, the shapes and the rule broken.
type Metric interface {
	Update(pred, target *tensor.Tensor)
	Compute() float64
	Reset()
}

// Average selects how per-class scores of a multiclass metric are combined.
type Average int

const (
	// AverageMicro pools the true positives, false positives and false
	// negatives of all classes before dividing (for single-label
	// multiclass data micro precision, recall and F1 equal accuracy).
	AverageMicro Average = iota
	// AverageMacro is the unweighted mean of the per-class scores over all
	// NumClasses classes; a class with an empty denominator scores 0, as in
	// scikit-learn with zero_division=0.
	AverageMacro
	// AverageWeighted is the mean of the per-class scores weighted by each
	// class's support (its number of true instances).
	AverageWeighted
)

// String returns "micro", "macro" or "weighted".
func (a Average) String() string {
	switch a {
	case AverageMicro:
		return "micro"
	case AverageMacro:
		return "macro"
	case AverageWeighted:
		return "weighted"
	}
	return fmt.Sprintf("Average(%d)", int(a))
}

// classLabels turns a batch into predicted and true class labels in
// [0, numClasses). target holds integer labels; pred is either integer labels
// of the same shape or scores with a class axis at position 1 (shape of
// target with numClasses inserted at axis 1, e.g. [N,C] for target [N] or
// [N,C,H,W] for target [N,H,W]) whose argmax is the prediction.
func classLabels(op string, pred, target *tensor.Tensor, numClasses int) (p, t []int64) {
	t = intLabels(op, target, numClasses)
	ps, ts := pred.Shape(), target.Shape()
	switch {
	case slices.Equal(ps, ts):
		if !pred.DType().IsInt() {
			panic(fmt.Sprintf("%s: pred %v has the shape of target, so it must hold integer labels, got %s (scores need a class axis at 1)", op, ps, pred.DType()))
		}
		p = intLabels(op, pred, numClasses)
	case len(ps) == len(ts)+1 && len(ts) >= 1 && slices.Equal(slices.Delete(slices.Clone(ps), 1, 2), ts):
		if ps[1] != numClasses {
			panic(fmt.Sprintf("%s: pred %v has %d classes on axis 1, metric has %d", op, ps, ps[1], numClasses))
		}
		p = pred.ArgMax(1, false).Int64s()
	default:
		panic(fmt.Sprintf("%s: pred %v does not fit target %v (want the same shape of labels, or scores with the class axis inserted at 1)", op, ps, ts))
	}
	return p, t
}

// intLabels reads integer labels and checks they lie in [0, numClasses).
func intLabels(op string, x *tensor.Tensor, numClasses int) []int64 {
	if !x.DType().IsInt() {
		panic(fmt.Sprintf("%s: class labels must be Int64 or Int32, got %s with shape %v", op, x.DType(), x.Shape()))
	}
	v := x.Int64s()
	for _, l := range v {
		if l < 0 || l >= int64(numClasses) {
			panic(fmt.Sprintf("%s: label %d is out of range for %d classes", op, l, numClasses))
		}
	}
	return v
}

// ConfusionMatrix accumulates a numClasses×numClasses matrix of counts whose
// entry [i][j] is the number of samples with true class i predicted as class
// j (scikit-learn's convention). Every classification score in this package
// is derived from it, so the methods below can all be read off one pass over
// the data. As a Metric, Compute returns the accuracy.
type ConfusionMatrix struct {
	op     string
	n      int
	counts []int64
}

// NewConfusionMatrix returns an empty confusion matrix over numClasses
// classes. It panics if numClasses < 1.
func NewConfusionMatrix(numClasses int) *ConfusionMatrix {
	return newConfusion("nn.ConfusionMatrix", numClasses)
}

func newConfusion(op string, numClasses int) *ConfusionMatrix {
	if numClasses < 1 {
		panic(fmt.Sprintf("%s: numClasses must be at least 1, got %d", op, numClasses))
	}
	return &ConfusionMatrix{op: op, n: numClasses, counts: make([]int64, numClasses*numClasses)}
}

// Update adds a batch. target holds integer class labels of any shape; pred
// holds integer labels of the same shape or scores (logits or
// probabilities) with a class axis of size NumClasses at axis 1, reduced by
// argmax (the first maximum wins).
func (m *ConfusionMatrix) Update(pred, target *tensor.Tensor) {
	p, t := classLabels(m.op, pred, target, m.n)
	for i := range t {
		m.counts[int(t[i])*m.n+int(p[i])]++
	}
}

// Reset clears all counts.
func (m *ConfusionMatrix) Reset() { clear(m.counts) }

// NumClasses returns the number of classes.
func (m *ConfusionMatrix) NumClasses() int { return m.n }

// Matrix returns a copy of the counts, rows indexed by true class and
// columns by predicted class.
func (m *ConfusionMatrix) Matrix() [][]int64 {
	out := make([][]int64, m.n)
	for i := range out {
		out[i] = slices.Clone(m.counts[i*m.n : (i+1)*m.n])
	}
	return out
}

// Total returns the number of samples seen.
func (m *ConfusionMatrix) Total() int64 {
	var s int64
	for _, c := range m.counts {
		s += c
	}
	return s
}

// Compute returns the accuracy, so that a ConfusionMatrix is a Metric.
func (m *ConfusionMatrix) Compute() float64 { return m.Accuracy() }

// stats returns per-class true positives, predicted totals (column sums) and
// true totals (row sums = support).
func (m *ConfusionMatrix) stats() (tp, predicted, support []float64) {
	tp = make([]float64, m.n)
	predicted = make([]float64, m.n)
	support = make([]float64, m.n)
	for i := range m.n {
		for j := range m.n {
			c := float64(m.counts[i*m.n+j])
			support[i] += c
			predicted[j] += c
			if i == j {
				tp[i] = c
			}
		}
	}
	return tp, predicted, support
}

// div returns a/b, or 0 when b is 0 (scikit-learn's zero_division=0).
func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Accuracy returns the fraction of samples whose prediction equals the
// target (0 before any update).
func (m *ConfusionMatrix) Accuracy() float64 {
	tp, _, _ := m.stats()
	return div(sum(tp), float64(m.Total()))
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// PerClassPrecision returns tp/(tp+fp) for each class (0 where nothing was
// predicted as the class).
func (m *ConfusionMatrix) PerClassPrecision() []float64 {
	tp, pr, _ := m.stats()
	out := make([]float64, m.n)
	for i := range out {
		out[i] = div(tp[i], pr[i])
	}
	return out
}

// PerClassRecall returns tp/(tp+fn) for each class (0 for classes with no
// true instances).
func (m *ConfusionMatrix) PerClassRecall() []float64 {
	tp, _, sp := m.stats()
	out := make([]float64, m.n)
	for i := range out {
		out[i] = div(tp[i], sp[i])
	}
	return out
}

// PerClassF1 returns 2tp/(2tp+fp+fn) for each class (0 where the
// denominator is 0). This equals the per-class Dice coefficient.
func (m *ConfusionMatrix) PerClassF1() []float64 {
	tp, pr, sp := m.stats()
	out := make([]float64, m.n)
	for i := range out {
		out[i] = div(2*tp[i], pr[i]+sp[i])
	}
	return out
}

// average combines per-class scores; micro is the pooled ratio num/den.
func (m *ConfusionMatrix) average(op string, avg Average, perClass []float64, microNum, microDen float64) float64 {
	switch avg {
	case AverageMicro:
		return div(microNum, microDen)
	case AverageMacro:
		return sum(perClass) / float64(m.n)
	case AverageWeighted:
		_, _, sp := m.stats()
		var s float64
		for i, v := range perClass {
			s += v * sp[i]
		}
		return div(s, sum(sp))
	}
	panic(fmt.Sprintf("%s: unknown averaging %v", op, avg))
}

// Precision returns precision combined over classes with avg.
func (m *ConfusionMatrix) Precision(avg Average) float64 {
	tp, pr, _ := m.stats()
	return m.average("nn.ConfusionMatrix.Precision", avg, m.PerClassPrecision(), sum(tp), sum(pr))
}

// Recall returns recall combined over classes with avg.
func (m *ConfusionMatrix) Recall(avg Average) float64 {
	tp, _, sp := m.stats()
	return m.average("nn.ConfusionMatrix.Recall", avg, m.PerClassRecall(), sum(tp), sum(sp))
}

// F1 returns the F1 score combined over classes with avg (macro is the mean
// of per-class F1, not the F1 of macro precision and recall).
func (m *ConfusionMatrix) F1(avg Average) float64 {
	tp, pr, sp := m.stats()
	return m.average("nn.ConfusionMatrix.F1", avg, m.PerClassF1(), 2*sum(tp), sum(pr)+sum(sp))
}

// BalancedAccuracy returns the mean recall over the classes that occur in
// the targets (scikit-learn's balanced_accuracy_score); 0 before any
// update.
func (m *ConfusionMatrix) BalancedAccuracy() float64 {
	tp, _, sp := m.stats()
	var s float64
	k := 0
	for i := range tp {
		if sp[i] > 0 {
			s += tp[i] / sp[i]
			k++
		}
	}
	return div(s, float64(k))
}

// MatthewsCorrCoef returns the multiclass Matthews correlation coefficient
// (Gorodkin's R_K statistic, as scikit-learn computes it); 0 when either
// the targets or the predictions hold a single class.
func (m *ConfusionMatrix) MatthewsCorrCoef() float64 {
	tp, pr, sp := m.stats()
	n := sum(sp)
	var tpp, pp, tt float64
	for i := range tp {
		tpp += sp[i] * pr[i]
		pp += pr[i] * pr[i]
		tt += sp[i] * sp[i]
	}
	covYtYp := sum(tp)*n - tpp
	covYpYp := n*n - pp
	covYtYt := n*n - tt
	if covYpYp*covYtYt == 0 {
		return 0
	}
	return covYtYp / math.Sqrt(covYtYt*covYpYp)
}

// CohenKappa returns Cohen's kappa (unweighted) between targets and
// predictions: (po-pe)/(1-pe) with observed agreement po and chance
// agreement pe from the marginals. It is NaN when pe is 1 or nothing was
// seen, as in scikit-learn.
func (m *ConfusionMatrix) CohenKappa() float64 {
	tp, pr, sp := m.stats()
	n := sum(sp)
	if n == 0 {
		return math.NaN()
	}
	var pe float64
	for i := range tp {
		pe += sp[i] * pr[i]
	}
	pe /= n * n
	po := sum(tp) / n
	// 1 - (1-po)/(1-pe), written as scikit-learn does.
	return 1 - (1-po)/(1-pe)
}

// IoU returns the per-class intersection over union (Jaccard index)
// tp/(tp+fp+fn), 0 for classes absent from both targets and predictions.
func (m *ConfusionMatrix) IoU() []float64 {
	tp, pr, sp := m.stats()
	out := make([]float64, m.n)
	for i := range out {
		out[i] = div(tp[i], pr[i]+sp[i]-tp[i])
	}
	return out
}

// presentMean averages v over classes that occur in targets or predictions.
func (m *ConfusionMatrix) presentMean(v []float64) float64 {
	_, pr, sp := m.stats()
	var s float64
	k := 0
	for i := range v {
		if pr[i]+sp[i] > 0 {
			s += v[i]
			k++
		}
	}
	return div(s, float64(k))
}

// MeanIoU returns the mean IoU over the classes that occur in the targets
// or the predictions (the usual segmentation convention: classes absent
// from both are skipped rather than counted as 0).
func (m *ConfusionMatrix) MeanIoU() float64 { return m.presentMean(m.IoU()) }

// Dice returns the per-class Dice coefficient 2tp/(2tp+fp+fn).
func (m *ConfusionMatrix) Dice() []float64 { return m.PerClassF1() }

// MeanDice returns the mean Dice coefficient over the classes that occur in
// the targets or the predictions.
func (m *ConfusionMatrix) MeanDice() float64 { return m.presentMean(m.Dice()) }

// ClassificationMetric is a Metric computed from a ConfusionMatrix that it
// embeds (so Matrix and the other scores stay available). Build one with
// NewAccuracy, NewPrecision, NewRecall, NewF1, NewBalancedAccuracy,
// NewMatthewsCorrCoef, NewCohenKappa, NewMeanIoU or NewMeanDice.
type ClassificationMetric struct {
	*ConfusionMatrix
	score func(*ConfusionMatrix) float64
}

// Compute returns the metric's score over all samples seen.
func (m *ClassificationMetric) Compute() float64 { return m.score(m.ConfusionMatrix) }

func newClassification(op string, numClasses int, f func(*ConfusionMatrix) float64) *ClassificationMetric {
	return &ClassificationMetric{ConfusionMatrix: newConfusion(op, numClasses), score: f}
}

// NewAccuracy returns a streaming accuracy over numClasses classes; pred may
// be labels or [N,C,...] scores (see ConfusionMatrix.Update).
func NewAccuracy(numClasses int) *ClassificationMetric {
	return newClassification("nn.Accuracy", numClasses, (*ConfusionMatrix).Accuracy)
}

// NewPrecision returns a streaming multiclass precision with averaging avg.
func NewPrecision(numClasses int, avg Average) *ClassificationMetric {
	return newClassification("nn.Precision", numClasses, func(m *ConfusionMatrix) float64 { return m.Precision(avg) })
}

// NewRecall returns a streaming multiclass recall with averaging avg.
func NewRecall(numClasses int, avg Average) *ClassificationMetric {
	return newClassification("nn.Recall", numClasses, func(m *ConfusionMatrix) float64 { return m.Recall(avg) })
}

// NewF1 returns a streaming multiclass F1 score with averaging avg.
func NewF1(numClasses int, avg Average) *ClassificationMetric {
	return newClassification("nn.F1", numClasses, func(m *ConfusionMatrix) float64 { return m.F1(avg) })
}

// NewBalancedAccuracy returns a streaming balanced accuracy (mean per-class
// recall over classes present in the targets).
func NewBalancedAccuracy(numClasses int) *ClassificationMetric {
	return newClassification("nn.BalancedAccuracy", numClasses, (*ConfusionMatrix).BalancedAccuracy)
}

// NewMatthewsCorrCoef returns a streaming multiclass Matthews correlation
// coefficient.
func NewMatthewsCorrCoef(numClasses int) *ClassificationMetric {
	return newClassification("nn.MatthewsCorrCoef", numClasses, (*ConfusionMatrix).MatthewsCorrCoef)
}

// NewCohenKappa returns a streaming Cohen's kappa.
func NewCohenKappa(numClasses int) *ClassificationMetric {
	return newClassification("nn.CohenKappa", numClasses, (*ConfusionMatrix).CohenKappa)
}

// NewMeanIoU returns a streaming mean intersection over union, e.g. for
// segmentation with pred [N,C,H,W] logits and target [N,H,W] labels.
// ConfusionMatrix.IoU gives the per-class values.
func NewMeanIoU(numClasses int) *ClassificationMetric {
	return newClassification("nn.MeanIoU", numClasses, (*ConfusionMatrix).MeanIoU)
}

// NewMeanDice returns a streaming mean Dice coefficient; ConfusionMatrix.Dice
// gives the per-class values.
func NewMeanDice(numClasses int) *ClassificationMetric {
	return newClassification("nn.MeanDice", numClasses, (*ConfusionMatrix).MeanDice)
}

// TopKAccuracy is the fraction of samples whose target class is among the k
// highest-scoring classes. Ties are broken as scikit-learn's
// top_k_accuracy_score does: among equal scores the higher class index
// ranks first.
type TopKAccuracy struct {
	k              int
	correct, total int64
}

// NewTopKAccuracy returns a streaming top-k accuracy; it panics if k < 1.
func NewTopKAccuracy(k int) *TopKAccuracy {
	if k < 1 {
		panic(fmt.Sprintf("nn.TopKAccuracy: k must be at least 1, got %d", k))
	}
	return &TopKAccuracy{k: k}
}

// Update adds a batch of scores pred [N,C] and integer targets [N].
func (m *TopKAccuracy) Update(pred, target *tensor.Tensor) {
	ps, ts := pred.Shape(), target.Shape()
	if len(ps) != 2 || len(ts) != 1 || ps[0] != ts[0] {
		panic(fmt.Sprintf("nn.TopKAccuracy: want pred [N,C] and target [N], got %v and %v", ps, ts))
	}
	c := ps[1]
	t := intLabels("nn.TopKAccuracy", target, c)
	s := pred.Float64s()
	for i, l := range t {
		row := s[i*c : (i+1)*c]
		st := row[l]
		above := 0
		for j, v := range row {
			if v > st || (v == st && j > int(l)) {
				above++
			}
		}
		if above < m.k {
			m.correct++
		}
	}
	m.total += int64(len(t))
}

// Compute returns the top-k accuracy (0 before any update).
func (m *TopKAccuracy) Compute() float64 { return div(float64(m.correct), float64(m.total)) }

// Reset clears the counts.
func (m *TopKAccuracy) Reset() { m.correct, m.total = 0, 0 }
