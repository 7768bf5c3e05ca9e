package optim_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

func params(vals ...[]float64) []*autograd.Var {
	out := make([]*autograd.Var, len(vals))
	for i, v := range vals {
		out[i] = autograd.Param(tensor.FromSlice(v))
	}
	return out
}

func TestSGDHandComputed(t *testing.T) {
	p := params([]float64{1, -2})
	o := optim.NewSGD(p, optim.SGDOptions{LR: 0.1, Momentum: 0.5, WeightDecay: 0.1})
	grads := [][]float64{{1, 1}, {2, 0}}
	// step 1: d = g + 0.1 w = [1.1, 0.8]; buf = d; w -= 0.1 d -> [0.89, -2.08]
	// step 2: d = [2.089, -0.208]; buf = 0.5 [1.1, 0.8] + d = [2.639, 0.192];
	//         w -= 0.1 buf -> [0.6261, -2.0992]
	want := [][]float64{{0.89, -2.08}, {0.6261, -2.0992}}
	for i, g := range grads {
		p[0].SetGrad(tensor.FromSlice(g))
		require.NoError(t, o.Step())
		assert.InDeltaSlice(t, want[i], p[0].Value().Float64s(), 1e-12)
	}
}

func TestAdamFirstStepIsSignTimesLR(t *testing.T) {
	// At step 1 Adam moves each coordinate by about lr·sign(grad).
	p := params([]float64{0, 0, 0})
	o := optim.NewAdam(p, optim.AdamOptions{LR: 0.01})
	p[0].SetGrad(tensor.FromSlice([]float64{3, -0.5, 1e-3}))
	require.NoError(t, o.Step())
	assert.InDeltaSlice(t, []float64{-0.01, 0.01, -0.01}, p[0].Value().Float64s(), 1e-7)
	sd := o.StateDict()
	assert.Equal(t, 1.0, sd["state.0.step"].Item())
	assert.Equal(t, []float64{0.9, 0.999}, sd["param_groups.0.betas"].Float64s())
	assert.Equal(t, 1e-8, sd["param_groups.0.eps"].Item())
	assert.Equal(t, []int64{0}, sd["param_groups.0.params"].Int64s())
	assert.False(t, sd["param_groups.0.amsgrad"].Bools()[0])
}

func TestStepSkipsMissingGradsAndZeroGrad(t *testing.T) {
	p := params([]float64{1}, []float64{2})
	o := optim.NewAdamW(p, optim.AdamOptions{LR: 0.1, WeightDecay: 0.5})
	p[0].SetGrad(tensor.FromSlice([]float64{1}))
	require.NoError(t, o.Step())
	assert.Equal(t, []float64{2}, p[1].Value().Float64s(), "no grad, no update (not even decay)")
	assert.NotEqual(t, []float64{1}, p[0].Value().Float64s())
	sd := o.StateDict()
	_, has := sd["state.1.step"]
	assert.False(t, has)
	o.ZeroGrad()
	assert.Nil(t, p[0].Grad())
}

func TestGroupsAndLR(t *testing.T) {
	p := params([]float64{1}, []float64{2}, []float64{3})
	o := optim.NewSGD(p[:2], optim.SGDOptions{LR: 0.1})
	o.AddParamGroup(p[2:], optim.SGDOptions{LR: 0.5, Momentum: 0.9})
	assert.Equal(t, 2, o.NumGroups())
	assert.Equal(t, 0.5, o.LR(1))
	o.SetLR(0.01)
	assert.Equal(t, []float64{0.01, 0.01}, []float64{o.LR(0), o.LR(1)})
	o.SetGroupLR(1, 0.2)
	assert.Equal(t, 0.2, o.LR(1))
	o.Groups()[0].Options.WeightDecay = 0.1
	assert.Equal(t, 0.1, o.Groups()[0].Options.WeightDecay)
	assert.Equal(t, []int64{2}, o.StateDict()["param_groups.1.params"].Int64s())
	assert.Panics(t, func() { o.LR(2) })
	assert.Panics(t, func() { o.SetLR(-1) })
}

func TestConstructorMisuse(t *testing.T) {
	p := params([]float64{1})
	cases := map[string]struct {
		f    func()
		want string
	}{
		"empty":       {func() { optim.NewSGD(nil, optim.SGDOptions{LR: 1}) }, "empty parameter list"},
		"nesterov":    {func() { optim.NewSGD(p, optim.SGDOptions{LR: 1, Nesterov: true}) }, "Nesterov momentum requires"},
		"negative lr": {func() { optim.NewSGD(p, optim.SGDOptions{LR: -1}) }, "invalid learning rate"},
		"beta":        {func() { optim.NewAdam(p, optim.AdamOptions{Betas: [2]float64{1, 0.9}}) }, "invalid beta1"},
		"not a param": {func() { optim.NewAdam([]*autograd.Var{autograd.New(tensor.Zeros([]int{1}))}, optim.AdamOptions{}) }, "leaf that requires a gradient"},
		"duplicate":   {func() { optim.NewSGD([]*autograd.Var{p[0], p[0]}, optim.SGDOptions{LR: 1}) }, "appears twice"},
		"other group": {func() { optim.NewSGD(p, optim.SGDOptions{LR: 1}).AddParamGroup(p, optim.SGDOptions{LR: 1}) }, "already in another group"},
		"int param": {func() {
			optim.NewSGD([]*autograd.Var{autograd.Param(tensor.FromSlice([]int64{1}))}, optim.SGDOptions{LR: 1})
		}, "floating point"},
		"weight decay": {func() { optim.NewAdamW(p, optim.AdamOptions{WeightDecay: -1}) }, "invalid weight decay"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.Contains(t, fmt.Sprint(r), tc.want)
			}()
			tc.f()
		})
	}
}

func TestLoadStateDictErrors(t *testing.T) {
	trained := func() map[string]*tensor.Tensor {
		p := params([]float64{1, 2}, []float64{3})
		o := optim.NewAdam(p, optim.AdamOptions{LR: 0.1, AMSGrad: true})
		for _, v := range p {
			v.SetGrad(tensor.OnesLike(v.Value()))
		}
		require.NoError(t, o.Step())
		return o.StateDict()
	}
	cases := map[string]struct {
		edit func(sd map[string]*tensor.Tensor)
		want string
	}{
		"shape":       {func(sd map[string]*tensor.Tensor) { sd["state.0.exp_avg"] = tensor.Zeros([]int{3}) }, `"state.0.exp_avg" has shape [3], parameter 0 has shape [2]`},
		"unexpected":  {func(sd map[string]*tensor.Tensor) { sd["state.0.velocity"] = tensor.Zeros([]int{2}) }, `unexpected keys "state.0.velocity"`},
		"missing lr":  {func(sd map[string]*tensor.Tensor) { delete(sd, "param_groups.0.lr") }, `missing key "param_groups.0.lr"`},
		"incomplete":  {func(sd map[string]*tensor.Tensor) { delete(sd, "state.1.exp_avg_sq") }, `parameter 1 has state but lacks "state.1.exp_avg_sq"`},
		"extra group": {func(sd map[string]*tensor.Tensor) { sd["param_groups.1.params"] = tensor.FromSlice([]int64{2}) }, "more than the optimizer's 1 parameter groups"},
		"group size":  {func(sd map[string]*tensor.Tensor) { sd["param_groups.0.params"] = tensor.FromSlice([]int64{0}) }, "group 0 has 2 parameters here"},
		"bad beta":    {func(sd map[string]*tensor.Tensor) { sd["param_groups.0.betas"] = tensor.FromSlice([]float64{0.9, 2}) }, "invalid beta2"},
		"bool dtype":  {func(sd map[string]*tensor.Tensor) { sd["param_groups.0.amsgrad"] = tensor.Scalar(1) }, "must be a bool scalar"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sd := trained()
			tc.edit(sd)
			p := params([]float64{0, 0}, []float64{0})
			o := optim.NewAdam(p, optim.AdamOptions{LR: 0.5})
			err := o.LoadStateDict(sd)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, 0.5, o.LR(0), "unchanged after a failed load")
			assert.Empty(t, o.StateDict()["state.0.step"])
		})
	}
	// The untouched dict loads, restoring hyperparameters.
	p := params([]float64{0, 0}, []float64{0})
	o := optim.NewAdam(p, optim.AdamOptions{LR: 0.5})
	require.NoError(t, o.LoadStateDict(trained()))
	assert.Equal(t, 0.1, o.LR(0))
	assert.True(t, o.Groups()[0].Options.AMSGrad)
	assert.Equal(t, 1.0, o.StateDict()["state.0.step"].Item())
}
