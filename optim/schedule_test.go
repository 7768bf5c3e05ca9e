package optim_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// twoGroupSGD mirrors the generator's optimizer: SGD with two groups of
// learning rates 0.1 and 0.02.
func twoGroupSGD() *optim.SGD {
	o := optim.NewSGD([]*autograd.Var{autograd.Param(tensor.Zeros([]int{2}))}, optim.SGDOptions{LR: 0.1, Momentum: 0.9})
	o.AddParamGroup([]*autograd.Var{autograd.Param(tensor.Zeros([]int{3}))}, optim.SGDOptions{LR: 0.02, Momentum: 0.9})
	return o
}

func floats(c golden.Case, name string) []float64 {
	var out []float64
	for _, v := range c.Attrs[name].([]any) {
		out = append(out, v.(float64))
	}
	return out
}

func TestSchedulesGolden(t *testing.T) {
	cases := golden.Load(t, "testdata/golden_schedules.json")
	n := 0
	for _, c := range cases {
		if c.Op != "schedule" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			opt := twoGroupSGD()
			var step func(i int)
			var last func() []float64
			use := func(s optim.Scheduler) { step = func(int) { s.Step() }; last = s.LastLR }
			kind := c.String("kind")
			switch kind {
			case "step":
				use(optim.NewStepLR(opt, c.Int("step_size"), c.Float("gamma")))
			case "multistep":
				use(optim.NewMultiStepLR(opt, c.Ints("milestones"), c.Float("gamma")))
			case "exponential":
				use(optim.NewExponentialLR(opt, c.Float("gamma")))
			case "cosine":
				use(optim.NewCosineAnnealingLR(opt, c.Int("T_max"), c.Float("eta_min")))
			case "warm_restarts":
				use(optim.NewCosineAnnealingWarmRestarts(opt, c.Int("T_0"), c.Int("T_mult"), c.Float("eta_min")))
			case "linear":
				use(optim.NewLinearLR(opt, c.Float("start_factor"), c.Float("end_factor"), c.Int("total_iters")))
			case "constant":
				use(optim.NewConstantLR(opt, c.Float("factor"), c.Int("total_iters")))
			case "polynomial":
				use(optim.NewPolynomialLR(opt, c.Int("total_iters"), c.Float("power")))
			case "onecycle":
				use(optim.NewOneCycleLR(opt, optim.OneCycleOptions{
					MaxLR: floats(c, "max_lr"), TotalSteps: c.Int("total_steps"), PctStart: c.Float("pct_start"),
					Linear: c.String("anneal_strategy") == "linear", DivFactor: c.Float("div_factor"),
					FinalDivFactor: c.Float("final_div_factor"), ThreePhase: c.Bool("three_phase"),
				}))
			case "cyclic":
				mode := map[string]optim.CyclicMode{"triangular": optim.Triangular, "triangular2": optim.Triangular2, "exp_range": optim.ExpRange}[c.String("mode")]
				use(optim.NewCyclicLR(opt, optim.CyclicOptions{
					BaseLR: floats(c, "base_lr"), MaxLR: floats(c, "max_lr"), StepSizeUp: c.Int("step_size_up"),
					StepSizeDown: c.Int("step_size_down"), Mode: mode, Gamma: c.Float("gamma"),
				}))
			case "plateau":
				o := optim.DefaultReduceLROnPlateauOptions()
				o.Max = c.String("mode") == "max"
				o.AbsThreshold = c.String("threshold_mode") == "abs"
				o.Factor, o.Patience, o.Threshold = c.Float("factor"), c.Int("patience"), c.Float("threshold")
				o.Cooldown, o.MinLR = c.Int("cooldown"), floats(c, "min_lr")
				s := optim.NewReduceLROnPlateau(opt, o)
				metrics := c.Inputs[0].Float64s()
				step = func(i int) { s.StepMetric(metrics[i]) }
				last = s.LastLR
			case "lambda":
				use(optim.NewLambdaLR(opt, func(e int) float64 { return 1.0 / (1.0 + 0.1*float64(e)) }))
			case "sequential":
				use(optim.NewSequentialLR([]optim.Scheduler{
					optim.NewLinearWarmup(opt, 10, 0.1),
					optim.NewCosineAnnealingLR(opt, 30, 0.002),
					optim.NewStepLR(opt, 10, 0.5),
				}, []int{10, 50}))
			case "chained":
				use(optim.NewChainedScheduler(
					optim.NewConstantLR(opt, 0.5, 8),
					optim.NewExponentialLR(opt, 0.98),
					optim.NewMultiStepLR(opt, []int{30, 60}, 0.5),
				))
			default:
				t.Fatalf("unknown schedule kind %q", kind)
			}
			want := c.Outputs[0]
			steps := want.Shape[0] - 1
			got := []float64{opt.LR(0), opt.LR(1)}
			for i := range steps {
				step(i)
				lrs := []float64{opt.LR(0), opt.LR(1)}
				require.Equal(t, lrs, last(), "step %d: LastLR", i+1)
				got = append(got, lrs...)
			}
			golden.AllClose(t, c.Name, want, want.Shape, got, 1e-12, 1e-15)
		})
	}
	require.Equal(t, 24, n)
}

func TestSchedulerMisuse(t *testing.T) {
	opt := twoGroupSGD()
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"step size", func() { optim.NewStepLR(opt, 0, 0.1) }, "step size 0"},
		{"linear factor", func() { optim.NewLinearLR(opt, 0, 1, 5) }, "start factor"},
		{"onecycle groups", func() {
			optim.NewOneCycleLR(opt, optim.OneCycleOptions{MaxLR: []float64{1, 2, 3}, TotalSteps: 10, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4})
		}, "3 values for 2 parameter groups"},
		{"sequential milestones", func() {
			optim.NewSequentialLR([]optim.Scheduler{optim.NewExponentialLR(opt, 0.9)}, []int{3})
		}, "one more scheduler than milestones"},
		{"plateau factor", func() {
			o := optim.DefaultReduceLROnPlateauOptions()
			o.Factor = 1
			optim.NewReduceLROnPlateau(opt, o)
		}, "factor (1) < 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				require.True(t, strings.Contains(r.(string), tc.msg), "panic %q lacks %q", r, tc.msg)
			}()
			tc.f()
		})
	}
}

func TestOneCycleStepPastEndPanics(t *testing.T) {
	s := optim.NewOneCycleLR(twoGroupSGD(), optim.DefaultOneCycleOptions(1, 10))
	require.InDelta(t, 1.0/25, s.LastLR()[0], 1e-15)
	for range 9 {
		s.Step()
	}
	require.InDelta(t, 1.0/25/1e4, s.LastLR()[0], 1e-15)
	// Like PyTorch, step total_steps is still allowed; the next one is not.
	s.Step()
	require.Panics(t, s.Step)
}

// resumable is a scheduler with a state dict.
type resumable interface {
	optim.Scheduler
	StateDict() map[string]*tensor.Tensor
	LoadStateDict(map[string]*tensor.Tensor) error
}

func TestSchedulerStateDictResume(t *testing.T) {
	tests := []struct {
		name string
		make func(o optim.Optimizer) resumable
	}{
		{"warm restarts", func(o optim.Optimizer) resumable {
			return optim.NewCosineAnnealingWarmRestarts(o, 5, 2, 0.001)
		}},
		{"cosine", func(o optim.Optimizer) resumable {
			return optim.NewCosineAnnealingLR(o, 7, 0.001)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := twoGroupSGD()
			sa := tc.make(a)
			for range 13 {
				sa.Step()
			}
			b := twoGroupSGD()
			b.SetGroupLR(0, 0.3) // a different base, overwritten by the load
			sb := tc.make(b)
			require.NoError(t, sb.LoadStateDict(sa.StateDict()))
			require.Equal(t, sa.LastLR(), sb.LastLR())
			for i, lr := range sa.LastLR() {
				b.SetGroupLR(i, lr)
			}
			for i := range 20 {
				sa.Step()
				sb.Step()
				require.Equal(t, sa.LastLR(), sb.LastLR(), "step %d after resuming", i)
			}
			sd := sa.StateDict()
			sd["base_lrs"] = tensor.FromSlice([]float64{1, 2, 3}, 3)
			require.ErrorContains(t, sb.LoadStateDict(sd), `"base_lrs" must hold 2 floats`)
			delete(sd, "last_epoch")
			require.ErrorContains(t, sb.LoadStateDict(sd), `missing key "last_epoch"`)
		})
	}
}
