package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// regressionStats are the running sums every regression metric is read off.
// The target's mean and sum of squared deviations are merged with Chan's
// parallel update so R2 stays accurate under streaming.
type regressionStats struct {
	n        float64
	sqErr    float64
	absErr   float64
	absPct   float64
	meanY    float64
	m2Y      float64
	mapeEps  float64
	haveData bool
}

func (s *regressionStats) update(op string, pred, target *tensor.Tensor) {
	if !slices.Equal(pred.Shape(), target.Shape()) {
		panic(fmt.Sprintf("%s: pred %v and target %v must have the same shape", op, pred.Shape(), target.Shape()))
	}
	if !pred.DType().IsFloat() && !pred.DType().IsInt() || !target.DType().IsFloat() && !target.DType().IsInt() {
		panic(fmt.Sprintf("%s: pred and target must be numeric, got %s and %s", op, pred.DType(), target.DType()))
	}
	p, y := pred.Float64s(), target.Float64s()
	if len(y) == 0 {
		return
	}
	var bMean float64
	for i := range y {
		d := y[i] - p[i]
		s.sqErr += d * d
		s.absErr += math.Abs(d)
		s.absPct += math.Abs(d) / math.Max(math.Abs(y[i]), s.mapeEps)
		bMean += y[i]
	}
	bn := float64(len(y))
	bMean /= bn
	var bM2 float64
	for _, v := range y {
		bM2 += (v - bMean) * (v - bMean)
	}
	n := s.n + bn
	delta := bMean - s.meanY
	s.meanY += delta * bn / n
	s.m2Y += bM2 + delta*delta*s.n*bn/n
	s.n = n
}

// RegressionMetric is a streaming regression metric over all elements of
// pred and target, which must have the same shape (any shape; multi-output
// targets are pooled into one set of values). Build one with NewMSE,
// NewRMSE, NewMAE, NewR2 or NewMAPE.
type RegressionMetric struct {
	op    string
	s     regressionStats
	score func(*regressionStats) float64
}

func newRegression(op string, f func(*regressionStats) float64) *RegressionMetric {
	m := &RegressionMetric{op: op, score: f}
	m.Reset()
	return m
}

// Update adds a batch of predictions and targets of the same shape.
func (m *RegressionMetric) Update(pred, target *tensor.Tensor) { m.s.update(m.op, pred, target) }

// Compute returns the metric over everything seen (NaN before any update).
func (m *RegressionMetric) Compute() float64 {
	if m.s.n == 0 {
		return math.NaN()
	}
	return m.score(&m.s)
}

// Reset forgets all data.
func (m *RegressionMetric) Reset() {
	m.s = regressionStats{mapeEps: 0x1p-52}
}

// NewMSE returns the streaming mean squared error mean((y-p)²).
func NewMSE() *RegressionMetric {
	return newRegression("nn.MSE", func(s *regressionStats) float64 { return s.sqErr / s.n })
}

// NewRMSE returns the streaming root mean squared error sqrt(MSE).
func NewRMSE() *RegressionMetric {
	return newRegression("nn.RMSE", func(s *regressionStats) float64 { return math.Sqrt(s.sqErr / s.n) })
}

// NewMAE returns the streaming mean absolute error mean(|y-p|).
func NewMAE() *RegressionMetric {
	return newRegression("nn.MAE", func(s *regressionStats) float64 { return s.absErr / s.n })
}

// NewMAPE returns the streaming mean absolute percentage error
// mean(|y-p| / max(|y|, eps)) with eps the float64 machine epsilon, as
// scikit-learn computes it (a fraction, not multiplied by 100).
func NewMAPE() *RegressionMetric {
	return newRegression("nn.MAPE", func(s *regressionStats) float64 { return s.absPct / s.n })
}

// NewR2 returns the streaming coefficient of determination
// 1 - Σ(y-p)²/Σ(y-ȳ)². As in scikit-learn, a constant target gives 1 for a
// perfect prediction and 0 otherwise.
func NewR2() *RegressionMetric {
	return newRegression("nn.R2", func(s *regressionStats) float64 {
		if s.m2Y == 0 {
			if s.sqErr == 0 {
				return 1
			}
			return 0
		}
		return 1 - s.sqErr/s.m2Y
	})
}

// CosineSimilarity is the mean over rows of the cosine similarity between
// pred and target rows: pred and target have the same shape [..., D] and
// each vector along the last axis is one row. A row with a zero vector
// scores 0 (scikit-learn's cosine_similarity convention).
type CosineSimilarity struct {
	sum float64
	n   int64
}

// NewCosineSimilarity returns an empty streaming cosine similarity.
func NewCosineSimilarity() *CosineSimilarity { return &CosineSimilarity{} }

// Update adds a batch of rows.
func (m *CosineSimilarity) Update(pred, target *tensor.Tensor) {
	ps := pred.Shape()
	if !slices.Equal(ps, target.Shape()) || len(ps) == 0 || ps[len(ps)-1] == 0 {
		panic(fmt.Sprintf("nn.CosineSimilarity: pred %v and target %v must have the same shape [..., D] with D > 0", ps, target.Shape()))
	}
	d := ps[len(ps)-1]
	p, y := pred.Float64s(), target.Float64s()
	for r := 0; r+d <= len(p); r += d {
		var dot, np, ny float64
		for i := r; i < r+d; i++ {
			dot += p[i] * y[i]
			np += p[i] * p[i]
			ny += y[i] * y[i]
		}
		if np > 0 && ny > 0 {
			m.sum += dot / (math.Sqrt(np) * math.Sqrt(ny))
		}
		m.n++
	}
}

// Compute returns the mean cosine similarity (NaN before any update).
func (m *CosineSimilarity) Compute() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return m.sum / float64(m.n)
}

// Reset forgets all rows.
func (m *CosineSimilarity) Reset() { *m = CosineSimilarity{} }
