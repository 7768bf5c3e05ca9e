package optim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// TestMoreOptimizersInvalidOptions checks that bad hyperparameters panic
// with a message naming the constructor and the rule.
func TestMoreOptimizersInvalidOptions(t *testing.T) {
	ps := []*autograd.Var{autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))}
	cases := []struct {
		name, msg string
		f         func()
	}{
		{"adagrad lr_decay", "optim.NewAdagrad: invalid lr_decay -1", func() { optim.NewAdagrad(ps, optim.AdagradOptions{LRDecay: -1}) }},
		{"rmsprop momentum", "optim.NewRMSprop: invalid momentum -0.5", func() { optim.NewRMSprop(ps, optim.RMSpropOptions{Momentum: -0.5}) }},
		{"adamax beta2", "optim.NewAdamax: invalid beta2 1 (want [0, 1))", func() { optim.NewAdamax(ps, optim.AdamaxOptions{Betas: [2]float64{0.9, 1}}) }},
		{"nadam momentum decay", "optim.NewNAdam: invalid momentum decay -1", func() { optim.NewNAdam(ps, optim.NAdamOptions{MomentumDecay: -1}) }},
		{"radam beta1", "optim.NewRAdam: invalid beta1 -0.1 (want [0, 1))", func() { optim.NewRAdam(ps, optim.RAdamOptions{Betas: [2]float64{-0.1, 0.9}}) }},
		{"adadelta rho", "optim.NewAdadelta: invalid rho 2 (want [0, 1])", func() { optim.NewAdadelta(ps, optim.AdadeltaOptions{Rho: 2}) }},
		{"rprop etas", "optim.NewRprop: invalid etas (0.5, 0.9) (want 0 < etaminus < 1 < etaplus)", func() { optim.NewRprop(ps, optim.RpropOptions{Etas: [2]float64{0.5, 0.9}}) }},
		{"lion weight decay", "optim.NewLion: invalid weight decay -1", func() { optim.NewLion(ps, optim.LionOptions{WeightDecay: -1}) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.PanicsWithValue(t, c.msg, c.f) })
	}
}

// TestNAdamLoadStateDictScalarState checks that NAdam's scalar mu_product
// round-trips and that a mis-shaped one is rejected.
func TestNAdamLoadStateDictScalarState(t *testing.T) {
	p := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	o := optim.NewNAdam([]*autograd.Var{p}, optim.NAdamOptions{})
	require.NoError(t, p.Mul(p).Sum(nil, false).Backward())
	require.NoError(t, o.Step())
	sd := o.StateDict()
	mu := sd["state.0.mu_product"]
	require.NotNil(t, mu)
	assert.InDelta(t, 0.9*(1-0.5*0.99983674924), mu.Item(), 1e-7)

	o2 := optim.NewNAdam([]*autograd.Var{p}, optim.NAdamOptions{})
	require.NoError(t, o2.LoadStateDict(sd))
	assert.Equal(t, mu.Item(), o2.StateDict()["state.0.mu_product"].Item())

	sd["state.0.mu_product"] = tensor.FromSlice([]float64{1, 2}, 2)
	err := o2.LoadStateDict(sd)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"state.0.mu_product" must be a float scalar`)
}
