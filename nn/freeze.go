package nn

import "github.com/emberml/ember/autograd"

// Freeze stops training of every parameter of m: each stops requiring a
// gradient (so backward computes none for it) and loses the gradient it
// had, so optimizers, which skip parameters without a gradient, leave it
// unchanged. The parameters are still listed by Parameters and saved in
// state dicts.
func Freeze(m Module) {
	for _, p := range m.Parameters() {
		p.SetRequiresGrad(false)
		p.ZeroGrad()
	}
}

// Unfreeze makes every parameter of m require a gradient again.
func Unfreeze(m Module) {
	for _, p := range m.Parameters() {
		p.SetRequiresGrad(true)
	}
}

// TrainableParameters returns the parameters of m that require a gradient
// (those not frozen), in Parameters order: what to give an optimizer built
// after freezing part of a model.
func TrainableParameters(m Module) []*autograd.Var {
	var out []*autograd.Var
	for _, p := range m.Parameters() {
		if p.RequiresGrad() {
			out = append(out, p)
		}
	}
	return out
}
