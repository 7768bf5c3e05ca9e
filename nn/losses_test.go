package nn_test

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// lossArgs holds a golden case's inputs: v[i] is a Param for the inputs the
// case differentiates (attr "diff") and a constant otherwise; t[i] is the
// raw tensor.
type lossArgs struct {
	v []*autograd.Var
	t []*tensor.Tensor
	// asTarget records the inputs handed to the loss as targets (data,
	// never differentiated), whose golden gradients are not checked.
	asTarget map[int]bool
}

// target returns input i as a target tensor.
func (a lossArgs) target(i int) *tensor.Tensor {
	a.asTarget[i] = true
	return a.t[i]
}

// lossRunners builds and runs the loss each golden op names.
var lossRunners = map[string]func(c golden.Case, a lossArgs) *autograd.Var{
	"l1": func(c golden.Case, a lossArgs) *autograd.Var {
		return nn.NewL1Loss(reductionOf(c.String("reduction"))).Forward(a.v[0], a.target(1))
	},
	"smooth_l1": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewSmoothL1Loss()
		l.Reduction, l.Beta = reductionOf(c.String("reduction")), c.Float("beta")
		return l.Forward(a.v[0], a.target(1))
	},
	"huber": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewHuberLoss()
		l.Reduction, l.Delta = reductionOf(c.String("reduction")), c.Float("delta")
		return l.Forward(a.v[0], a.target(1))
	},
	"kl_div": func(c golden.Case, a lossArgs) *autograd.Var {
		r := c.String("reduction")
		l := nn.NewKLDivLoss(reductionOf(r), c.Bool("log_target"))
		l.BatchMean = r == "batchmean"
		return l.Forward(a.v[0], a.target(1))
	},
	"poisson_nll": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewPoissonNLLLoss()
		l.Reduction, l.LogInput, l.Full, l.Eps = reductionOf(c.String("reduction")), c.Bool("log_input"), c.Bool("full"), c.Float("eps")
		return l.Forward(a.v[0], a.target(1))
	},
	"gaussian_nll": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewGaussianNLLLoss()
		l.Reduction, l.Full, l.Eps = reductionOf(c.String("reduction")), c.Bool("full"), c.Float("eps")
		return l.Forward(a.v[0], a.target(1), a.v[2])
	},
	"nll": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewNLLLoss()
		l.Reduction, l.IgnoreIndex = reductionOf(c.String("reduction")), int64(c.Int("ignore_index"))
		if c.Has("weighted") {
			l.Weight = a.t[2]
		}
		return l.Forward(a.v[0], a.t[1])
	},
	"bce": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewBCELoss(reductionOf(c.String("reduction")))
		if c.Has("weighted") {
			l.Weight = a.t[2]
		}
		return l.Forward(a.v[0], a.t[1])
	},
	"bce_logits": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewBCEWithLogitsLoss(reductionOf(c.String("reduction")))
		if c.Has("weighted") {
			l.Weight = a.t[2]
		}
		if c.Has("pos_weighted") {
			l.PosWeight = a.t[3]
		}
		return l.Forward(a.v[0], a.t[1])
	},
	"focal": func(c golden.Case, a lossArgs) *autograd.Var {
		l := &nn.FocalLoss{Alpha: c.Float("alpha"), Gamma: c.Float("gamma"), Reduction: reductionOf(c.String("reduction"))}
		return l.Forward(a.v[0], a.t[1])
	},
	"dice": func(c golden.Case, a lossArgs) *autograd.Var {
		l := &nn.DiceLoss{Smooth: c.Float("smooth"), Reduction: reductionOf(c.String("reduction"))}
		return l.Forward(a.v[0], a.t[1])
	},
	"margin_ranking": func(c golden.Case, a lossArgs) *autograd.Var {
		return nn.NewMarginRankingLoss(c.Float("margin"), reductionOf(c.String("reduction"))).Forward(a.v[0], a.v[1], a.t[2])
	},
	"hinge_embedding": func(c golden.Case, a lossArgs) *autograd.Var {
		return (&nn.HingeEmbeddingLoss{Margin: c.Float("margin"), Reduction: reductionOf(c.String("reduction"))}).Forward(a.v[0], a.t[1])
	},
	"soft_margin": func(c golden.Case, a lossArgs) *autograd.Var {
		return nn.NewSoftMarginLoss(reductionOf(c.String("reduction"))).Forward(a.v[0], a.t[1])
	},
	"multilabel_margin": func(c golden.Case, a lossArgs) *autograd.Var {
		return nn.NewMultiLabelMarginLoss(reductionOf(c.String("reduction"))).Forward(a.v[0], a.t[1])
	},
	"multilabel_soft_margin": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewMultiLabelSoftMarginLoss(reductionOf(c.String("reduction")))
		if c.Has("weighted") {
			l.Weight = a.t[2]
		}
		return l.Forward(a.v[0], a.t[1])
	},
	"multi_margin": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewMultiMarginLoss()
		l.P, l.Margin, l.Reduction = c.Int("p"), c.Float("margin"), reductionOf(c.String("reduction"))
		if c.Has("weighted") {
			l.Weight = a.t[2]
		}
		return l.Forward(a.v[0], a.t[1])
	},
	"cosine_embedding": func(c golden.Case, a lossArgs) *autograd.Var {
		return nn.NewCosineEmbeddingLoss(c.Float("margin"), reductionOf(c.String("reduction"))).Forward(a.v[0], a.v[1], a.t[2])
	},
	"triplet_margin": func(c golden.Case, a lossArgs) *autograd.Var {
		l := &nn.TripletMarginLoss{Margin: c.Float("margin"), P: c.Float("p"), Eps: c.Float("eps"), Swap: c.Bool("swap"), Reduction: reductionOf(c.String("reduction"))}
		return l.Forward(a.v[0], a.v[1], a.v[2])
	},
	"triplet_distance": func(c golden.Case, a lossArgs) *autograd.Var {
		l := nn.NewTripletMarginWithDistanceLoss()
		l.Margin, l.Swap, l.Reduction = c.Float("margin"), c.Bool("swap"), reductionOf(c.String("reduction"))
		if c.String("distance") == "cosine" {
			l.Distance = cosineDistance
		}
		return l.Forward(a.v[0], a.v[1], a.v[2])
	},
	"ctc": func(c golden.Case, a lossArgs) *autograd.Var {
		l := &nn.CTCLoss{Blank: c.Int("blank"), ZeroInfinity: c.Bool("zero_infinity"), Reduction: reductionOf(c.String("reduction"))}
		return l.Forward(autograd.LogSoftmax(a.v[0], 2), a.t[1], a.t[2], a.t[3])
	},
}

// cosineDistance is 1 - cosine_similarity(x1, x2) along the last axis, with
// PyTorch's cosine_similarity eps 1e-8 on each norm.
func cosineDistance(x1, x2 *autograd.Var) *autograd.Var {
	n1 := x1.Norm(2, []int{-1}, false).Clamp(1e-8, math.Inf(1))
	n2 := x2.Norm(2, []int{-1}, false).Clamp(1e-8, math.Inf(1))
	return x1.Mul(x2).Sum([]int{-1}, false).Div(n1.Mul(n2)).Neg().AddScalar(1)
}

// TestLossesGolden checks every loss against PyTorch 1.13 (fixture written
// by internal/golden/gen/gen_losses.py): the value and the gradients of the
// differentiable inputs.
func TestLossesGolden(t *testing.T) {
	cases := golden.Load(t, "testdata/golden_losses.json")
	require.NotEmpty(t, cases)
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Op] = true
		run, ok := lossRunners[c.Op]
		require.True(t, ok, "no runner for op %q", c.Op)
		t.Run(c.Name, func(t *testing.T) {
			diff := c.Ints("diff")
			a := lossArgs{v: make([]*autograd.Var, len(c.Inputs)), t: make([]*tensor.Tensor, len(c.Inputs)), asTarget: map[int]bool{}}
			for i, g := range c.Inputs {
				a.t[i] = goldtensor.ToTensor(g)
				if slices.Contains(diff, i) {
					a.v[i] = autograd.Param(a.t[i])
				} else {
					a.v[i] = autograd.New(a.t[i])
				}
			}
			y := run(c, a)
			rtol, atol := tolerances(c.Outputs[0].DType)
			golden.AllClose(t, c.Name+" value", c.Outputs[0], y.Shape(), y.Value().Float64s(), rtol, atol)
			if len(diff) == 0 {
				return
			}
			require.NoError(t, y.BackwardWith(goldtensor.ToTensor(c.GradOutputs[0]), autograd.Options{}))
			for _, i := range diff {
				if a.asTarget[i] {
					// PyTorch differentiates these targets too; Ember's
					// targets are data (see the nn package doc).
					assert.Nil(t, a.v[i].Grad(), "target %d", i)
					continue
				}
				g := a.v[i].Grad()
				require.NotNil(t, g, "input %d has no gradient", i)
				goldtensor.Check(t, c.Name+" grad", *c.Grads[i], g, rtol, atol)
			}
		})
	}
	ops := make([]string, 0, len(lossRunners))
	for op := range lossRunners {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		require.True(t, seen[op], "no golden case for %q", op)
	}
}

// gradData returns a deterministic float64 tensor of the given shape with
// values spread over roughly [-2, 2], away from zero and from each other.
func gradData(seed int, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]float64, n)
	for i := range out {
		k := (i*7 + seed*13) % 29
		out[i] = -1.9 + 0.131*float64(k) + 0.0017*float64(seed)
	}
	return tensor.FromSlice(out, shape...)
}

// positive returns gradData shifted into (0.1, 4).
func positive(seed int, shape ...int) *tensor.Tensor {
	return gradData(seed, shape...).AddScalar(2.05)
}

// TestRegressionLossesGradCheck checks the input gradients of the
// elementwise regression losses (and the variance's, for the Gaussian one)
// with finite differences, including a transposed (non-contiguous) input
// and a broadcast variance. Targets are data: no gradient flows to them.
func TestRegressionLossesGradCheck(t *testing.T) {
	x := gradData(1, 3, 4)
	xt := gradData(2, 4, 3).T() // non-contiguous
	y := gradData(3, 3, 4)
	tests := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
		in   []*tensor.Tensor
	}{
		{"l1", func(in []*autograd.Var) *autograd.Var { return nn.NewL1Loss(nn.ReduceMean).Forward(in[0], y) }, []*tensor.Tensor{xt}},
		{"smooth_l1", func(in []*autograd.Var) *autograd.Var {
			return (&nn.SmoothL1Loss{Beta: 0.7, Reduction: nn.ReduceNone}).Forward(in[0], y)
		}, []*tensor.Tensor{xt}},
		{"huber", func(in []*autograd.Var) *autograd.Var {
			return (&nn.HuberLoss{Delta: 0.9, Reduction: nn.ReduceSum}).Forward(in[0], y)
		}, []*tensor.Tensor{x}},
		{"mse", func(in []*autograd.Var) *autograd.Var {
			return nn.NewMSELoss(nn.ReduceSum).Forward(in[0], y)
		}, []*tensor.Tensor{xt}},
		{"kl_div", func(in []*autograd.Var) *autograd.Var {
			return nn.NewKLDivLoss(nn.ReduceNone, false).Forward(in[0], positive(4, 3, 4))
		}, []*tensor.Tensor{xt}},
		{"kl_div/log_target", func(in []*autograd.Var) *autograd.Var {
			return (&nn.KLDivLoss{BatchMean: true, LogTarget: true}).Forward(in[0], y)
		}, []*tensor.Tensor{x}},
		{"poisson/log", func(in []*autograd.Var) *autograd.Var {
			return (&nn.PoissonNLLLoss{LogInput: true, Full: true, Reduction: nn.ReduceNone}).Forward(in[0], positive(5, 3, 4))
		}, []*tensor.Tensor{xt}},
		{"poisson/rate", func(in []*autograd.Var) *autograd.Var {
			return (&nn.PoissonNLLLoss{Eps: 1e-8, Full: true}).Forward(in[0], positive(7, 3, 4))
		}, []*tensor.Tensor{positive(6, 3, 4)}},
		{"gaussian/broadcast", func(in []*autograd.Var) *autograd.Var {
			return (&nn.GaussianNLLLoss{Eps: 1e-6, Full: true, Reduction: nn.ReduceNone}).Forward(in[0], y, in[1])
		}, []*tensor.Tensor{xt, positive(8, 3)}},
		{"gaussian/same", func(in []*autograd.Var) *autograd.Var {
			return nn.NewGaussianNLLLoss().Forward(in[0], y, in[1])
		}, []*tensor.Tensor{x, positive(9, 4, 3).T()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(tt.f, tt.in...))
		})
	}
}

func TestRegressionLossesPanics(t *testing.T) {
	x := autograd.New(tensor.Zeros([]int{2, 3}, tensor.Float64))
	y := x.Value()
	require.PanicsWithValue(t, "nn.L1Loss: input shape [2 3] and target shape [3 2] differ", func() {
		nn.NewL1Loss(nn.ReduceMean).Forward(x, tensor.Zeros([]int{3, 2}, tensor.Float64))
	})
	require.PanicsWithValue(t, "nn.MSELoss: input shape [2 3] and target shape [6] differ", func() {
		nn.NewMSELoss(nn.ReduceMean).Forward(x, tensor.Zeros([]int{6}, tensor.Float64))
	})
	require.Panics(t, func() { (&nn.HuberLoss{}).Forward(x, y) })
	require.Panics(t, func() { (&nn.SmoothL1Loss{Beta: -1}).Forward(x, y) })
	require.Panics(t, func() { nn.NewGaussianNLLLoss().Forward(x, y, autograd.New(tensor.Ones([]int{3}, tensor.Float64))) })
	require.Panics(t, func() {
		nn.NewGaussianNLLLoss().Forward(x, y, autograd.New(tensor.Full([]int{2, 3}, -1.0, tensor.Float64)))
	})
	require.Panics(t, func() { (&nn.L1Loss{Reduction: 7}).Forward(x, y) })
}

// TestClassificationLossesGradCheck checks the classification losses'
// input gradients with finite differences, including non-contiguous inputs
// and broadcast weights.
func TestClassificationLossesGradCheck(t *testing.T) {
	probs := gradData(1, 4, 3).Sigmoid().T() // [3, 4], non-contiguous
	tgt := positive(2, 3, 4).DivScalar(4.2)
	labels := tensor.FromSlice([]int64{0, 3, 2}, 3)
	spatial := tensor.FromSlice([]int64{0, 2, 1, 1, 2, 0}, 2, 3)
	w4 := positive(3, 4)
	tests := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
		in   []*tensor.Tensor
	}{
		{"nll", func(in []*autograd.Var) *autograd.Var {
			return (&nn.NLLLoss{Weight: w4, IgnoreIndex: 2}).Forward(in[0], labels)
		}, []*tensor.Tensor{gradData(4, 4, 3).T()}},
		{"nll/spatial", func(in []*autograd.Var) *autograd.Var {
			return (&nn.NLLLoss{IgnoreIndex: -100, Reduction: nn.ReduceNone}).Forward(in[0], spatial)
		}, []*tensor.Tensor{gradData(5, 2, 3, 3)}},
		{"bce", func(in []*autograd.Var) *autograd.Var {
			return (&nn.BCELoss{Weight: w4}).Forward(in[0], tgt)
		}, []*tensor.Tensor{probs}},
		{"bce_logits", func(in []*autograd.Var) *autograd.Var {
			return (&nn.BCEWithLogitsLoss{Weight: w4, PosWeight: positive(6, 4), Reduction: nn.ReduceNone}).Forward(in[0], tgt)
		}, []*tensor.Tensor{gradData(7, 4, 3).T()}},
		{"focal", func(in []*autograd.Var) *autograd.Var {
			return nn.NewFocalLoss().Forward(in[0], tgt)
		}, []*tensor.Tensor{gradData(8, 4, 3).T()}},
		{"dice", func(in []*autograd.Var) *autograd.Var {
			return (&nn.DiceLoss{Smooth: 0.5, Reduction: nn.ReduceNone}).Forward(in[0], tgt)
		}, []*tensor.Tensor{probs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(tt.f, tt.in...))
		})
	}
}

func TestClassificationLossesUnbatchedAndPanics(t *testing.T) {
	lp := tensor.FromSlice([]float64{-1.5, -0.3, -2}, 3)
	got := nn.NewNLLLoss().Forward(autograd.New(lp), tensor.ScalarOf(1, tensor.Int64))
	require.InDelta(t, 0.3, got.Item(), 1e-15)
	none := (&nn.NLLLoss{IgnoreIndex: -100, Reduction: nn.ReduceNone}).Forward(autograd.New(lp), tensor.ScalarOf(2, tensor.Int64))
	require.Empty(t, none.Shape())
	require.InDelta(t, 2, none.Item(), 1e-15)
	x := autograd.New(tensor.FromSlice([]float64{0.5, 1.5}, 2))
	require.PanicsWithValue(t, "nn.BCELoss: input values must be in [0, 1]", func() {
		nn.NewBCELoss(nn.ReduceMean).Forward(x, tensor.Zeros([]int{2}, tensor.Float64))
	})
	require.Panics(t, func() {
		(&nn.BCEWithLogitsLoss{Weight: tensor.Ones([]int{3}, tensor.Float64)}).Forward(x, tensor.Zeros([]int{2}, tensor.Float64))
	})
	require.Panics(t, func() { nn.NewDiceLoss().Forward(x, tensor.Zeros([]int{2}, tensor.Float64)) })
	require.Panics(t, func() { nn.NewNLLLoss().Forward(x, tensor.Zeros([]int{2}, tensor.Float64)) })
}

// TestMarginLossesGradCheck checks the margin losses' gradients with finite
// differences (data away from the hinges), including non-contiguous inputs.
func TestMarginLossesGradCheck(t *testing.T) {
	pm := tensor.FromSlice([]float64{1, -1, 1, -1, 1, 1}, 6)
	x1 := gradData(1, 6)
	x2 := gradData(2, 6).Flip(0)
	xt := gradData(3, 4, 3).T() // [3, 4] non-contiguous
	signs := tensor.FromSlice([]float64{1, -1, -1, 1, -1, 1, 1, -1, 1, 1, -1, -1}, 3, 4)
	ml := tensor.FromSlice([]int64{3, 0, -1, 1, 2, 1, -1, 0, 0, -1, 0, 0}, 3, 4)
	mm := tensor.FromSlice([]int64{1, 3, 0}, 3)
	y3 := tensor.FromSlice([]float64{1, -1, -1}, 3)
	a, p, n := gradData(4, 3, 5), gradData(5, 5, 3).T(), gradData(6, 3, 5)
	tests := []struct {
		name string
		f    func(in []*autograd.Var) *autograd.Var
		in   []*tensor.Tensor
	}{
		{"margin_ranking", func(in []*autograd.Var) *autograd.Var {
			return nn.NewMarginRankingLoss(0.3, nn.ReduceNone).Forward(in[0], in[1], pm)
		}, []*tensor.Tensor{x1, x2}},
		{"hinge_embedding", func(in []*autograd.Var) *autograd.Var {
			return (&nn.HingeEmbeddingLoss{Margin: 1.05}).Forward(in[0], signs)
		}, []*tensor.Tensor{xt}},
		{"soft_margin", func(in []*autograd.Var) *autograd.Var {
			return nn.NewSoftMarginLoss(nn.ReduceSum).Forward(in[0], signs)
		}, []*tensor.Tensor{xt}},
		{"multilabel_margin", func(in []*autograd.Var) *autograd.Var {
			return nn.NewMultiLabelMarginLoss(nn.ReduceNone).Forward(in[0], ml)
		}, []*tensor.Tensor{xt}},
		{"multilabel_soft_margin", func(in []*autograd.Var) *autograd.Var {
			return (&nn.MultiLabelSoftMarginLoss{Weight: positive(7, 4)}).Forward(in[0], signs.Relu())
		}, []*tensor.Tensor{xt}},
		{"multi_margin/p2", func(in []*autograd.Var) *autograd.Var {
			return (&nn.MultiMarginLoss{P: 2, Margin: 0.95, Weight: positive(8, 4), Reduction: nn.ReduceNone}).Forward(in[0], mm)
		}, []*tensor.Tensor{xt}},
		{"multi_margin/p1", func(in []*autograd.Var) *autograd.Var {
			return (&nn.MultiMarginLoss{P: 1, Margin: 0.95}).Forward(in[0], mm)
		}, []*tensor.Tensor{xt}},
		{"cosine_embedding", func(in []*autograd.Var) *autograd.Var {
			return nn.NewCosineEmbeddingLoss(-0.2, nn.ReduceNone).Forward(in[0], in[1], y3)
		}, []*tensor.Tensor{a, p}},
		{"triplet/p3/swap", func(in []*autograd.Var) *autograd.Var {
			return (&nn.TripletMarginLoss{Margin: 2, P: 3, Eps: 1e-6, Swap: true, Reduction: nn.ReduceNone}).Forward(in[0], in[1], in[2])
		}, []*tensor.Tensor{a, p, n}},
		{"triplet/default", func(in []*autograd.Var) *autograd.Var {
			return nn.NewTripletMarginLoss().Forward(in[0], in[1], in[2])
		}, []*tensor.Tensor{a, p, n}},
		{"triplet_distance/cosine", func(in []*autograd.Var) *autograd.Var {
			l := nn.NewTripletMarginWithDistanceLoss()
			l.Distance, l.Swap, l.Reduction = cosineDistance, true, nn.ReduceSum
			return l.Forward(in[0], in[1], in[2])
		}, []*tensor.Tensor{a, p, n}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(tt.f, tt.in...))
		})
	}
}

func TestMarginLossesUnbatchedAndPanics(t *testing.T) {
	x := autograd.New(tensor.FromSlice([]float64{0.1, 0.2, 0.4, 0.8}, 4))
	// Unbatched samples reduce to a scalar with every reduction.
	got := nn.NewMultiLabelMarginLoss(nn.ReduceNone).Forward(x, tensor.FromSlice([]int64{3, 0, -1, 1}, 4))
	require.Empty(t, got.Shape())
	// pairs (3,1),(3,2),(0,1),(0,2): (0.4+0.6+1.1+1.3)/4
	require.InDelta(t, 3.4/4, got.Item(), 1e-12)
	mm := (&nn.MultiMarginLoss{P: 1, Margin: 1, Reduction: nn.ReduceNone}).Forward(x, tensor.ScalarOf(3, tensor.Int64))
	require.Empty(t, mm.Shape())
	require.InDelta(t, (0.3+0.4+0.6)/4, mm.Item(), 1e-12)
	require.Panics(t, func() { nn.NewMultiMarginLoss().Forward(x, tensor.ScalarOf(4, tensor.Int64)) })
	require.Panics(t, func() { (&nn.MultiMarginLoss{P: 3}).Forward(x, tensor.ScalarOf(1, tensor.Int64)) })
	require.Panics(t, func() {
		nn.NewMultiLabelMarginLoss(nn.ReduceMean).Forward(x, tensor.FromSlice([]int64{7, -1, 0, 0}, 4))
	})
	require.Panics(t, func() { nn.NewTripletMarginWithDistanceLoss().Forward(x, x, x.Unsqueeze(0)) })
	require.Panics(t, func() { nn.NewCosineEmbeddingLoss(0, nn.ReduceMean).Forward(x, x, tensor.Ones([]int{4})) })
}

// TestCTCLossGradCheck checks CTC's analytic alpha-beta gradient with
// finite differences, directly on (unnormalized) log-probabilities, through
// LogSoftmax, with repeated labels, a non-default blank, unequal lengths
// and a transposed input.
func TestCTCLossGradCheck(t *testing.T) {
	padded := tensor.FromSlice([]int64{1, 1, 2, 3, 0, 0}, 2, 3)
	il := tensor.FromSlice([]int64{5, 3}, 2)
	tl := tensor.FromSlice([]int64{3, 1}, 2)
	tests := []struct {
		name string
		l    *nn.CTCLoss
		soft bool
		in   *tensor.Tensor
		tg   *tensor.Tensor
	}{
		{"raw/none", &nn.CTCLoss{Reduction: nn.ReduceNone}, false, gradData(1, 5, 2, 4).MulScalar(0.5), padded},
		{"softmax/mean", nn.NewCTCLoss(), true, gradData(2, 4, 2, 5).Permute(2, 1, 0), padded},
		{"blank3/sum", &nn.CTCLoss{Blank: 3, Reduction: nn.ReduceSum}, true, gradData(3, 5, 2, 4),
			tensor.FromSlice([]int64{0, 0, 1, 2}, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.tg
			f := func(in []*autograd.Var) *autograd.Var {
				x := in[0]
				if tt.soft {
					x = autograd.LogSoftmax(x, 2)
				}
				return tt.l.Forward(x, tg, il, tl)
			}
			require.NoError(t, autograd.GradCheck(f, tt.in))
		})
	}
}

func TestCTCLossEdgeCases(t *testing.T) {
	// One frame, one label: the only alignment emits the label.
	lp := tensor.FromSlice([]float64{-2, -0.5, -1.5}, 1, 3)
	one := tensor.ScalarOf(1, tensor.Int64)
	got := (&nn.CTCLoss{Reduction: nn.ReduceNone}).Forward(autograd.New(lp), tensor.FromSlice([]int64{1}, 1), one, one)
	require.Empty(t, got.Shape())
	require.InDelta(t, 0.5, got.Item(), 1e-15)
	// Empty target: the all-blank path.
	lp2 := tensor.FromSlice([]float64{-0.25, -2, -0.75, -1}, 2, 1, 2)
	got = nn.NewCTCLoss().Forward(autograd.New(lp2), tensor.Zeros([]int{1, 0}, tensor.Int64),
		tensor.FromSlice([]int64{2}, 1), tensor.FromSlice([]int64{0}, 1))
	require.InDelta(t, 1.0, got.Item(), 1e-15)
	// Infeasible with zero_infinity: zero loss and zero gradient.
	x := autograd.Param(gradData(1, 2, 1, 3))
	y := (&nn.CTCLoss{ZeroInfinity: true, Reduction: nn.ReduceSum}).Forward(x, tensor.FromSlice([]int64{1, 1}, 1, 2),
		tensor.FromSlice([]int64{2}, 1), tensor.FromSlice([]int64{2}, 1))
	require.Equal(t, 0.0, y.Item())
	require.NoError(t, y.Backward())
	require.Equal(t, []float64{0, 0, 0, 0, 0, 0}, x.Grad().Float64s())
	require.Panics(t, func() {
		nn.NewCTCLoss().Forward(x, tensor.FromSlice([]int64{0}, 1, 1), tensor.FromSlice([]int64{2}, 1), tensor.FromSlice([]int64{1}, 1))
	})
	require.Panics(t, func() {
		nn.NewCTCLoss().Forward(x, tensor.FromSlice([]int64{1}, 1, 1), tensor.FromSlice([]int64{3}, 1), tensor.FromSlice([]int64{1}, 1))
	})
}
