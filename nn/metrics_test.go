package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// goldenMetrics builds, for one fixture case, the metrics it checks and the
// values scikit-learn gives for them.
func goldenMetrics(t *testing.T, c golden.Case) (names []string, ms []nn.Metric, want []float64) {
	t.Helper()
	vals := c.Outputs[0].Float64s()
	switch c.Op {
	case "classification":
		n := c.Int("num_classes")
		ctor := map[string]func() nn.Metric{
			"accuracy":           func() nn.Metric { return nn.NewAccuracy(n) },
			"balanced_accuracy":  func() nn.Metric { return nn.NewBalancedAccuracy(n) },
			"mcc":                func() nn.Metric { return nn.NewMatthewsCorrCoef(n) },
			"kappa":              func() nn.Metric { return nn.NewCohenKappa(n) },
			"mean_iou":           func() nn.Metric { return nn.NewMeanIoU(n) },
			"mean_dice":          func() nn.Metric { return nn.NewMeanDice(n) },
			"precision_micro":    func() nn.Metric { return nn.NewPrecision(n, nn.AverageMicro) },
			"precision_macro":    func() nn.Metric { return nn.NewPrecision(n, nn.AverageMacro) },
			"precision_weighted": func() nn.Metric { return nn.NewPrecision(n, nn.AverageWeighted) },
			"recall_micro":       func() nn.Metric { return nn.NewRecall(n, nn.AverageMicro) },
			"recall_macro":       func() nn.Metric { return nn.NewRecall(n, nn.AverageMacro) },
			"recall_weighted":    func() nn.Metric { return nn.NewRecall(n, nn.AverageWeighted) },
			"f1_micro":           func() nn.Metric { return nn.NewF1(n, nn.AverageMicro) },
			"f1_macro":           func() nn.Metric { return nn.NewF1(n, nn.AverageMacro) },
			"f1_weighted":        func() nn.Metric { return nn.NewF1(n, nn.AverageWeighted) },
		}
		for _, name := range stringsAttr(t, c, "metrics") {
			f, ok := ctor[name]
			require.True(t, ok, "unknown metric %q", name)
			ms = append(ms, f())
		}
		names = stringsAttr(t, c, "metrics")
	case "topk":
		for _, k := range c.Ints("ks") {
			names = append(names, fmt.Sprintf("top%d", k))
			ms = append(ms, nn.NewTopKAccuracy(k))
		}
	case "regression":
		ctor := map[string]func() *nn.RegressionMetric{
			"mse": nn.NewMSE, "rmse": nn.NewRMSE, "mae": nn.NewMAE, "r2": nn.NewR2, "mape": nn.NewMAPE,
		}
		names = stringsAttr(t, c, "metrics")
		for _, name := range names {
			ms = append(ms, ctor[name]())
		}
	case "cosine":
		names, ms = []string{"cosine"}, []nn.Metric{nn.NewCosineSimilarity()}
	case "logloss":
		names, ms = []string{"logloss"}, []nn.Metric{nn.NewLogLoss(c.Float("eps"))}
	case "perplexity":
		names, ms = []string{"perplexity"}, []nn.Metric{nn.NewPerplexity()}
	case "ranking":
		ctor := map[string]func() *nn.RankingMetric{
			"average_precision": nn.NewAveragePrecision, "pr_auc": nn.NewPRAUC, "roc_auc": nn.NewROCAUC,
		}
		names = stringsAttr(t, c, "metrics")
		for _, name := range names {
			ms = append(ms, ctor[name]())
		}
	default:
		t.Fatalf("unknown op %q", c.Op)
	}
	require.Len(t, vals, len(ms))
	return names, ms, vals
}

func stringsAttr(t *testing.T, c golden.Case, name string) []string {
	t.Helper()
	raw, ok := c.Attrs[name].([]any)
	require.True(t, ok, "attr %q", name)
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = v.(string)
	}
	return out
}

// batches splits pred and target along axis 0 into pieces of sizes 1, 2, 3,
// ... (the last one shorter).
func batches(pred, target *tensor.Tensor) [][2]*tensor.Tensor {
	var out [][2]*tensor.Tensor
	n := target.Size(0)
	for start, size := 0, 1; start < n; start, size = start+size, size+1 {
		l := min(size, n-start)
		out = append(out, [2]*tensor.Tensor{pred.Narrow(0, start, l), target.Narrow(0, start, l)})
	}
	return out
}

// nonContiguous returns a transposed-back copy of x: same values, strided
// layout.
func nonContiguous(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() < 2 {
		return x
	}
	return x.Transpose(0, x.Dim()-1).Contiguous().Transpose(0, x.Dim()-1)
}

func TestMetricsGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_metrics.json") {
		t.Run(c.Name, func(t *testing.T) {
			pred, target := goldtensor.ToTensor(c.Inputs[0]), goldtensor.ToTensor(c.Inputs[1])
			names, ms, want := goldenMetrics(t, c)
			for i, m := range ms {
				m.Update(pred, target)
				assert.InDelta(t, want[i], m.Compute(), 1e-12*math.Max(1, math.Abs(want[i])), "%s: one update", names[i])

				// Streaming: batches of growing size, strided inputs, after a
				// Reset, give the same value.
				m.Reset()
				for _, b := range batches(nonContiguous(pred), nonContiguous(target)) {
					m.Update(b[0], b[1])
				}
				assert.InDelta(t, want[i], m.Compute(), 1e-12*math.Max(1, math.Abs(want[i])), "%s: streamed", names[i])
			}
			if c.Op == "classification" {
				checkConfusion(t, c, pred, target)
			}
		})
	}
}

// checkConfusion compares the confusion matrix and per-class scores.
func checkConfusion(t *testing.T, c golden.Case, pred, target *tensor.Tensor) {
	n := c.Int("num_classes")
	cm := nn.NewConfusionMatrix(n)
	for _, b := range batches(pred, target) {
		cm.Update(b[0], b[1])
	}
	wantCM := c.Outputs[1].Int64s()
	got := cm.Matrix()
	require.Len(t, got, n)
	for i := range n {
		assert.Equal(t, wantCM[i*n:(i+1)*n], got[i], "confusion row %d", i)
	}
	assert.Equal(t, int64(target.Numel()), cm.Total())
	per := map[string][]float64{
		"dice": cm.Dice(), "iou": cm.IoU(), "precision": cm.PerClassPrecision(), "recall": cm.PerClassRecall(),
	}
	for k, name := range stringsAttr(t, c, "per_class") {
		assert.InDeltaSlice(t, c.Outputs[2+k].Float64s(), per[name], 1e-12, name)
	}
	assert.InDelta(t, cm.Accuracy(), cm.Compute(), 0)
	assert.InDelta(t, cm.F1(nn.AverageMicro), cm.Accuracy(), 1e-15, "micro F1 is accuracy")
}

func TestMetricsEdgeCases(t *testing.T) {
	labels := func(v ...int64) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }

	// Nothing seen yet.
	assert.Equal(t, 0.0, nn.NewAccuracy(3).Compute())
	assert.True(t, math.IsNaN(nn.NewMSE().Compute()))
	assert.True(t, math.IsNaN(nn.NewROCAUC().Compute()))
	assert.True(t, math.IsNaN(nn.NewCohenKappa(2).Compute()))

	// A single class in the labels: ranking metrics are undefined.
	auc := nn.NewROCAUC()
	auc.Update(tensor.FromSlice([]float64{0.1, 0.7}, 2), labels(1, 1))
	assert.True(t, math.IsNaN(auc.Compute()))

	// Constant targets: R2 is 1 for a perfect fit and 0 otherwise.
	r2 := nn.NewR2()
	y := tensor.FromSlice([]float64{2, 2, 2}, 3)
	r2.Update(y, y)
	assert.Equal(t, 1.0, r2.Compute())
	r2.Update(tensor.FromSlice([]float64{1}, 1), tensor.FromSlice([]float64{2}, 1))
	assert.Equal(t, 0.0, r2.Compute())

	// Perfect predictions.
	mcc := nn.NewMatthewsCorrCoef(3)
	mcc.Update(labels(0, 1, 2, 2), labels(0, 1, 2, 2))
	assert.InDelta(t, 1.0, mcc.Compute(), 1e-15)

	// Top-k with ties: the higher class index ranks first.
	top1 := nn.NewTopKAccuracy(1)
	top1.Update(tensor.FromSlice([]float64{1, 1, 0}, 1, 3), labels(0))
	assert.Equal(t, 0.0, top1.Compute())
	top1.Reset()
	top1.Update(tensor.FromSlice([]float64{1, 1, 0}, 1, 3), labels(1))
	assert.Equal(t, 1.0, top1.Compute())

	assert.Equal(t, "macro", nn.AverageMacro.String())
}

func TestMetricsMisuse(t *testing.T) {
	scores := tensor.Zeros([]int{4, 3})
	for _, tc := range []struct {
		name, msg string
		f         func()
	}{
		{"label out of range", "label 3 is out of range for 3 classes", func() {
			nn.NewAccuracy(3).Update(tensor.FromSlice([]int64{0, 1, 2, 3}, 4), tensor.FromSlice([]int64{0, 1, 2, 3}, 4))
		}},
		{"float targets", "class labels must be Int64 or Int32", func() {
			nn.NewAccuracy(3).Update(scores, tensor.Zeros([]int{4}))
		}},
		{"class count", "has 3 classes on axis 1, metric has 5", func() {
			nn.NewF1(5, nn.AverageMacro).Update(scores, tensor.Zeros([]int{4}, tensor.Int64))
		}},
		{"shape", "does not fit target", func() {
			nn.NewAccuracy(3).Update(scores, tensor.Zeros([]int{5}, tensor.Int64))
		}},
		{"regression shape", "must have the same shape", func() {
			nn.NewMSE().Update(scores, tensor.Zeros([]int{4}))
		}},
		{"binary labels", "must be 0 or 1", func() {
			nn.NewAveragePrecision().Update(tensor.Zeros([]int{2}), tensor.FromSlice([]float64{0, 2}, 2))
		}},
		{"k", "k must be at least 1", func() { nn.NewTopKAccuracy(0) }},
		{"eps", "eps must be in [0, 0.5)", func() { nn.NewLogLoss(0.7) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Contains(t, panicMsg(t, tc.f), tc.msg)
		})
	}
}

func panicMsg(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return "did not panic"
}
