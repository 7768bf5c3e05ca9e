package nn

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/emberml/ember/tensor"
)

// LogLoss is the streaming cross-entropy of predicted probabilities, as
// scikit-learn's log_loss computes it: probabilities are clipped to
// [eps, 1-eps], each row is renormalized to sum to 1, and the result is the
// mean of -log p[target].
//
// Binary: pred holds the probability of class 1 with the shape of target,
// whose labels are 0 or 1. Multiclass: pred is [N,C,...] with the class
// axis at 1 and target [N,...] holds labels in [0, C).
type LogLoss struct {
	eps float64
	sum float64
	n   int64
}

// NewLogLoss returns an empty streaming log loss. eps is the clipping bound;
// 0 selects scikit-learn's "auto": the machine epsilon of pred's dtype
// (2⁻²³ for Float32 and smaller floats, 2⁻⁵² otherwise). It panics if eps
// is negative or at least 0.5.
func NewLogLoss(eps float64) *LogLoss {
	if eps < 0 || eps >= 0.5 || math.IsNaN(eps) {
		panic(fmt.Sprintf("nn.LogLoss: eps must be in [0, 0.5), got %v", eps))
	}
	return &LogLoss{eps: eps}
}

// Update adds a batch.
func (m *LogLoss) Update(pred, target *tensor.Tensor) {
	const op = "nn.LogLoss"
	eps := m.eps
	if eps == 0 {
		eps = 0x1p-52
		switch pred.DType() {
		case tensor.Float32, tensor.Float16, tensor.BFloat16:
			eps = 0x1p-23
		}
	}
	clip := func(v float64) float64 { return math.Min(math.Max(v, eps), 1-eps) }
	ps, ts := pred.Shape(), target.Shape()
	if slices.Equal(ps, ts) {
		t := intLabels(op, target, 2)
		p := pred.Float64s()
		for i, l := range t {
			p1 := clip(p[i]) // clipped first, then paired with 1-p, as scikit-learn
			p0 := 1 - p1
			q := p1
			if l == 0 {
				q = p0
			}
			m.sum -= math.Log(q / (p0 + p1))
		}
		m.n += int64(len(t))
		return
	}
	rows, c, lbl := classRows(op, pred, target)
	for i, l := range lbl {
		var s float64
		for _, v := range rows[i*c : (i+1)*c] {
			s += clip(v)
		}
		m.sum -= math.Log(clip(rows[i*c+int(l)]) / s)
	}
	m.n += int64(len(lbl))
}

// Compute returns the mean log loss (NaN before any update).
func (m *LogLoss) Compute() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return m.sum / float64(m.n)
}

// Reset forgets all data.
func (m *LogLoss) Reset() { m.sum, m.n = 0, 0 }

// classRows moves the class axis (1) of pred to the end and returns the
// scores flattened to rows of length c, one per element of target, with the
// target labels in the same order.
func classRows(op string, pred, target *tensor.Tensor) (rows []float64, c int, labels []int64) {
	ps, ts := pred.Shape(), target.Shape()
	if len(ps) != len(ts)+1 || len(ts) < 1 || !slices.Equal(slices.Delete(slices.Clone(ps), 1, 2), ts) {
		panic(fmt.Sprintf("%s: pred %v does not fit target %v (want scores with a class axis inserted at 1)", op, ps, ts))
	}
	c = ps[1]
	labels = intLabels(op, target, c)
	perm := make([]int, len(ps))
	perm[0] = 0
	for i := 1; i < len(ps)-1; i++ {
		perm[i] = i + 1
	}
	perm[len(ps)-1] = 1
	return pred.Permute(perm...).Float64s(), c, labels
}

// Perplexity is exp of the mean cross-entropy of logits: pred [N,C,...]
// holds unnormalized log-probabilities with the class axis at 1 (as for
// CrossEntropyLoss) and target [N,...] the labels.
type Perplexity struct {
	sum float64
	n   int64
}

// NewPerplexity returns an empty streaming perplexity.
func NewPerplexity() *Perplexity { return &Perplexity{} }

// Update adds a batch of logits and targets.
func (m *Perplexity) Update(pred, target *tensor.Tensor) {
	rows, c, lbl := classRows("nn.Perplexity", pred, target)
	for i, l := range lbl {
		row := rows[i*c : (i+1)*c]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		var s float64
		for _, v := range row {
			s += math.Exp(v - mx)
		}
		m.sum += mx + math.Log(s) - row[l]
	}
	m.n += int64(len(lbl))
}

// Compute returns exp(mean negative log-likelihood) (NaN before any
// update).
func (m *Perplexity) Compute() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return math.Exp(m.sum / float64(m.n))
}

// Reset forgets all data.
func (m *Perplexity) Reset() { m.sum, m.n = 0, 0 }

// RankingMetric is an exact binary ranking metric. It keeps every score and
// label it is given, and Compute sorts them by decreasing score, grouping
// tied scores into one threshold as scikit-learn does. Build one with
// NewROCAUC, NewAveragePrecision or NewPRAUC.
//
// Update takes scores pred and labels target of the same shape; target
// holds 0/1 (any numeric or bool dtype) and 1 is the positive class.
type RankingMetric struct {
	op     string
	scores []float64
	labels []bool
	score  func(tps, fps []float64) float64
}

// Update adds a batch of scores and binary labels.
func (m *RankingMetric) Update(pred, target *tensor.Tensor) {
	if !slices.Equal(pred.Shape(), target.Shape()) {
		panic(fmt.Sprintf("%s: scores %v and labels %v must have the same shape", m.op, pred.Shape(), target.Shape()))
	}
	for _, v := range target.Float64s() {
		if v != 0 && v != 1 {
			panic(fmt.Sprintf("%s: binary labels must be 0 or 1, got %v", m.op, v))
		}
		m.labels = append(m.labels, v == 1)
	}
	m.scores = append(m.scores, pred.Float64s()...)
}

// Reset forgets all data.
func (m *RankingMetric) Reset() { m.scores, m.labels = m.scores[:0], m.labels[:0] }

// Compute returns the metric. It is NaN before any update and when the
// labels hold a single class (scikit-learn raises or warns there).
func (m *RankingMetric) Compute() float64 {
	idx := make([]int, len(m.scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return m.scores[idx[a]] > m.scores[idx[b]] })
	// Cumulative true and false positives at each distinct threshold.
	var tps, fps []float64
	var tp, fp float64
	for k, i := range idx {
		if m.labels[i] {
			tp++
		} else {
			fp++
		}
		if k == len(idx)-1 || m.scores[idx[k+1]] != m.scores[i] {
			tps = append(tps, tp)
			fps = append(fps, fp)
		}
	}
	if tp == 0 || fp == 0 {
		return math.NaN()
	}
	return m.score(tps, fps)
}

// NewROCAUC returns the exact area under the ROC curve (trapezoidal rule
// over the (FPR, TPR) points of every distinct threshold, from (0,0)), as
// scikit-learn's roc_auc_score.
func NewROCAUC() *RankingMetric {
	return &RankingMetric{op: "nn.ROCAUC", score: func(tps, fps []float64) float64 {
		P, N := tps[len(tps)-1], fps[len(fps)-1]
		var area, x0, y0 float64
		for i := range tps {
			x, y := fps[i]/N, tps[i]/P
			area += (x - x0) * (y + y0) / 2
			x0, y0 = x, y
		}
		return area
	}}
}

// NewAveragePrecision returns the average precision Σₙ (Rₙ - Rₙ₋₁) Pₙ over
// distinct thresholds (no interpolation), as scikit-learn's
// average_precision_score.
func NewAveragePrecision() *RankingMetric {
	return &RankingMetric{op: "nn.AveragePrecision", score: func(tps, fps []float64) float64 {
		P := tps[len(tps)-1]
		var ap, r0 float64
		for i := range tps {
			r := tps[i] / P
			ap += (r - r0) * tps[i] / (tps[i] + fps[i])
			r0 = r
		}
		return ap
	}}
}

// NewPRAUC returns the area under the precision-recall curve by the
// trapezoidal rule, as scikit-learn's auc(recall, precision) over
// precision_recall_curve, whose curve starts at (recall 0, precision 1).
func NewPRAUC() *RankingMetric {
	return &RankingMetric{op: "nn.PRAUC", score: func(tps, fps []float64) float64 {
		P := tps[len(tps)-1]
		var area float64
		r0, p0 := 0.0, 1.0
		for i := range tps {
			r, p := tps[i]/P, tps[i]/(tps[i]+fps[i])
			area += (r - r0) * (p + p0) / 2
			r0, p0 = r, p
		}
		return area
	}}
}
