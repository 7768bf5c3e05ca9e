package optim_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// Contiguous parameters take the fused update (tensor.SGDUpdate,
// tensor.AdamUpdate); a transposed view cannot and takes the op-by-op
// formula. Both must give the same bits, and both bump the version.
func TestFusedStepMatchesUnfused(t *testing.T) {
	cases := map[string]func([]*autograd.Var) optim.Optimizer{
		"SGD": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewSGD(p, optim.SGDOptions{LR: 0.1, WeightDecay: 0.01})
		},
		"SGD/momentum": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewSGD(p, optim.SGDOptions{LR: 0.1, Momentum: 0.9, Dampening: 0.1})
		},
		"SGD/nesterov": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewSGD(p, optim.SGDOptions{LR: 0.1, Momentum: 0.9, Nesterov: true, Maximize: true})
		},
		"Adam": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewAdam(p, optim.AdamOptions{LR: 0.01, WeightDecay: 0.1})
		},
		"Adam/amsgrad": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewAdam(p, optim.AdamOptions{LR: 0.01, AMSGrad: true, Maximize: true})
		},
		"AdamW": func(p []*autograd.Var) optim.Optimizer {
			return optim.NewAdamW(p, optim.AdamOptions{LR: 0.01, WeightDecay: 0.05})
		},
	}
	for name, newOpt := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%s/%s", name, dt), func(t *testing.T) {
				gen := tensor.NewGenerator(3)
				x := gen.Randn([]int{5, 3}, dt)
				fused := autograd.Param(x.T().Contiguous())
				strided := autograd.Param(x.Clone().T())
				require.True(t, tensor.FusedSupported(fused.Value()))
				require.False(t, tensor.FusedSupported(strided.Value()))
				of, os := newOpt([]*autograd.Var{fused}), newOpt([]*autograd.Var{strided})
				for range 3 {
					g := gen.Randn([]int{3, 5}, dt)
					fused.SetGrad(g)
					strided.SetGrad(g)
					vf, vs := fused.Value().Version(), strided.Value().Version()
					require.NoError(t, of.Step())
					require.NoError(t, os.Step())
					require.Greater(t, fused.Value().Version(), vf)
					require.Greater(t, strided.Value().Version(), vs)
				}
				want := strided.Value().To(tensor.Float64).Float64s()
				got := fused.Value().To(tensor.Float64).Float64s()
				for i := range want {
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "element %d: %v vs %v", i, want[i], got[i])
				}
			})
		}
	}
}
