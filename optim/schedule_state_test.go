package optim_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// schedulerKinds makes one of every scheduler of the package over o.
var schedulerKinds = []struct {
	name string
	make func(o optim.Optimizer) optim.Scheduler
}{
	{"StepLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewStepLR(o, 3, 0.5) }},
	{"MultiStepLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewMultiStepLR(o, []int{2, 5, 5, 9}, 0.7) }},
	{"ExponentialLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewExponentialLR(o, 0.9) }},
	{"CosineAnnealingLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewCosineAnnealingLR(o, 6, 0.001) }},
	{"LinearLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewLinearLR(o, 0.2, 0.9, 7) }},
	{"ConstantLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewConstantLR(o, 0.5, 8) }},
	{"PolynomialLR", func(o optim.Optimizer) optim.Scheduler { return optim.NewPolynomialLR(o, 12, 2) }},
	{"LambdaLR", func(o optim.Optimizer) optim.Scheduler {
		return optim.NewLambdaLR(o, func(e int) float64 { return 1 / float64(e+1) })
	}},
	{"CosineAnnealingWarmRestarts", func(o optim.Optimizer) optim.Scheduler {
		return optim.NewCosineAnnealingWarmRestarts(o, 3, 2, 0.001)
	}},
	{"OneCycleLR", func(o optim.Optimizer) optim.Scheduler {
		return optim.NewOneCycleLR(o, optim.DefaultOneCycleOptions(0.5, 40))
	}},
	{"CyclicLR", func(o optim.Optimizer) optim.Scheduler {
		return optim.NewCyclicLR(o, optim.CyclicOptions{BaseLR: []float64{0.01}, MaxLR: []float64{0.1}, StepSizeUp: 4, Mode: optim.Triangular2})
	}},
	{"SequentialLR warm-up and cosine", func(o optim.Optimizer) optim.Scheduler {
		warm := optim.NewLinearWarmup(o, 5, 0.1)
		cos := optim.NewCosineAnnealingLR(o, 15, 0.0001)
		return optim.NewSequentialLR([]optim.Scheduler{warm, cos}, []int{5})
	}},
	{"ChainedScheduler", func(o optim.Optimizer) optim.Scheduler {
		return optim.NewChainedScheduler(optim.NewExponentialLR(o, 0.95), optim.NewStepLR(o, 4, 0.5))
	}},
}

// Every scheduler, restored with the optimizer from their state dicts after
// some steps, continues with bit-identical learning rates.
func TestEverySchedulerResumesExactly(t *testing.T) {
	for _, kind := range schedulerKinds {
		t.Run(kind.name, func(t *testing.T) {
			const stopAt, total = 7, 30
			full := twoGroupSGD()
			fullSched := kind.make(full)
			var want [][]float64
			for range total {
				fullSched.Step()
				want = append(want, fullSched.LastLR())
			}

			first := twoGroupSGD()
			firstSched := kind.make(first)
			for range stopAt {
				firstSched.Step()
			}
			schedState, optState := firstSched.StateDict(), first.StateDict()

			resumed := twoGroupSGD() // a fresh process: same code, new objects
			resumedSched := kind.make(resumed)
			require.NoError(t, resumed.LoadStateDict(optState))
			require.NoError(t, resumedSched.LoadStateDict(schedState))
			assert.Equal(t, want[stopAt-1], resumedSched.LastLR())
			for i := stopAt; i < total; i++ {
				resumedSched.Step()
				require.Equal(t, want[i], resumedSched.LastLR(), "step %d", i+1)
				require.Equal(t, want[i], []float64{resumed.LR(0), resumed.LR(1)}, "optimizer rates at step %d", i+1)
			}
		})
	}
}

// A state dict with a key missing, an extra key or a wrong shape is refused
// with an error naming the problem, and the scheduler stays as it was.
func TestSchedulerStateDictErrors(t *testing.T) {
	for _, kind := range schedulerKinds {
		t.Run(kind.name, func(t *testing.T) {
			s := kind.make(twoGroupSGD())
			s.Step()
			good := s.StateDict()
			before := s.StateDict()
			for key := range good {
				missing := clone(good)
				delete(missing, key)
				err := s.LoadStateDict(missing)
				require.Error(t, err, "without %q", key)
				assert.Contains(t, err.Error(), "missing key", "without %q", key)

				wrong := clone(good)
				wrong[key] = tensor.Zeros([]int{7}, tensor.Float64)
				require.Error(t, s.LoadStateDict(wrong), "%q with 7 values", key)
				assert.Equal(t, before, s.StateDict(), "a failed load changes nothing")
			}
			extra := clone(good)
			extra["bogus"] = tensor.ScalarOf(1.0, tensor.Float64)
			err := s.LoadStateDict(extra)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "bogus")
			assert.Equal(t, before, s.StateDict())
		})
	}
}

func clone(sd map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	out := map[string]*tensor.Tensor{}
	for k, v := range sd {
		out[k] = v
	}
	return out
}

func TestReduceLROnPlateauResumesExactly(t *testing.T) {
	metrics := []float64{1, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1.2, 1.3}
	opts := optim.DefaultReduceLROnPlateauOptions()
	opts.Patience, opts.Cooldown, opts.Factor = 1, 1, 0.5
	full := twoGroupSGD()
	fullSched := optim.NewReduceLROnPlateau(full, opts)
	var want [][]float64
	for _, m := range metrics {
		fullSched.StepMetric(m)
		want = append(want, fullSched.LastLR())
	}

	const stopAt = 4
	first := twoGroupSGD()
	firstSched := optim.NewReduceLROnPlateau(first, opts)
	fresh := firstSched.StateDict()
	assert.Equal(t, []int{0}, fresh["last_lr"].Shape(), "no rates before the first step")
	assert.True(t, math.IsInf(fresh["best"].Item(), 1))
	for _, m := range metrics[:stopAt] {
		firstSched.StepMetric(m)
	}
	resumed := twoGroupSGD()
	resumedSched := optim.NewReduceLROnPlateau(resumed, opts)
	require.NoError(t, resumed.LoadStateDict(first.StateDict()))
	require.NoError(t, resumedSched.LoadStateDict(firstSched.StateDict()))
	assert.Equal(t, 0.9, resumedSched.StateDict()["best"].Item())
	for i := stopAt; i < len(metrics); i++ {
		resumedSched.StepMetric(metrics[i])
		require.Equal(t, want[i], resumedSched.LastLR(), "step %d", i+1)
	}

	bad := firstSched.StateDict()
	bad["num_bad_epochs"] = tensor.ScalarOf(-1.0, tensor.Float64)
	err := resumedSched.LoadStateDict(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "num_bad_epochs")
	bad = firstSched.StateDict()
	bad["best"] = tensor.ScalarOf(math.NaN(), tensor.Float64)
	require.ErrorContains(t, resumedSched.LoadStateDict(bad), "NaN")
}

// SequentialLR's state holds its schedulers' under "schedulers.<i>.".
func TestSequentialLRStateKeys(t *testing.T) {
	o := twoGroupSGD()
	s := optim.NewSequentialLR([]optim.Scheduler{optim.NewLinearWarmup(o, 2, 0.5), optim.NewExponentialLR(o, 0.9)}, []int{2})
	sd := s.StateDict()
	for _, k := range []string{"last_epoch", "last_lr", "schedulers.0.last_epoch", "schedulers.1.base_lrs"} {
		assert.Contains(t, sd, k)
	}
	sd["schedulers.2.last_epoch"] = sd["last_epoch"]
	require.ErrorContains(t, s.LoadStateDict(sd), `"schedulers.2.last_epoch" names no scheduler`)
}
