package optim

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// ClipGradNorm rescales the gradients of params so that their combined
// normType-norm (the norm of the vector of every gradient's norm; normType
// may be math.Inf(1) for the largest absolute value) is at most maxNorm,
// as torch.nn.utils.clip_grad_norm_ (1.13): every gradient is multiplied by
// min(1, maxNorm/(total+1e-6)), computed in the first gradient's dtype.
// Parameters without a gradient are skipped. It returns the total norm
// before clipping (0 when no parameter has a gradient). The gradients are
// replaced by new tensors rather than changed in place.
func ClipGradNorm(params []*autograd.Var, maxNorm, normType float64) (totalNorm float64) {
	const op = "optim.ClipGradNorm"
	if !(normType > 0) {
		panic(fmt.Sprintf("%s: norm type %v must be positive (or +Inf)", op, normType))
	}
	if maxNorm != maxNorm {
		panic(fmt.Sprintf("%s: max norm is NaN", op))
	}
	withGrad, grads := gradsOf(op, params)
	if len(grads) == 0 {
		return 0
	}
	dt := grads[0].DType()
	if !dt.IsFloat() {
		panic(fmt.Sprintf("%s: gradient dtype %s is not floating point", op, dt))
	}
	norms := make([]*tensor.Tensor, len(grads))
	for i, g := range grads {
		norms[i] = g.Norm(normType, nil, false).To(dt)
	}
	total := tensor.Stack(norms, 0).Norm(normType, nil, false)
	coef := tensor.ScalarOf(maxNorm, dt).Div(total.AddScalar(1e-6)).Clamp(math.Inf(-1), 1)
	for i, p := range withGrad {
		g := grads[i]
		p.SetGrad(g.Mul(coef).To(g.DType()))
	}
	return total.Item()
}

// ClipGradValue clamps every element of the gradients of params to
// [-clip, clip], as torch.nn.utils.clip_grad_value_. Parameters without a
// gradient are skipped; the gradients are replaced by new tensors.
func ClipGradValue(params []*autograd.Var, clip float64) {
	const op = "optim.ClipGradValue"
	if !(clip >= 0) {
		panic(fmt.Sprintf("%s: clip value %v must be non-negative", op, clip))
	}
	withGrad, grads := gradsOf(op, params)
	for i, p := range withGrad {
		p.SetGrad(grads[i].Clamp(-clip, clip))
	}
}

// gradsOf returns the parameters that have a gradient, and the gradients.
func gradsOf(op string, params []*autograd.Var) ([]*autograd.Var, []*tensor.Tensor) {
	var ps []*autograd.Var
	var gs []*tensor.Tensor
	for i, p := range params {
		if p == nil {
			panic(fmt.Sprintf("%s: parameter %d is nil", op, i))
		}
		if g := p.Grad(); g != nil {
			ps = append(ps, p)
			gs = append(gs, g)
		}
	}
	return ps, gs
}
