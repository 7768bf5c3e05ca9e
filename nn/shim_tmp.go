package nn

import (
	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// TEMPORARY stand-ins until autograd.LogSoftmax and autograd.Dropout land;
// then these become one-line calls.

func logSoftmax(x *autograd.Var, axis int) *autograd.Var {
	return x.Sub(x.LogSumExp([]int{axis}, true))
}

func dropout(x *autograd.Var, p float64, training bool, g *tensor.Generator) *autograd.Var {
	if !training || p == 0 {
		return x
	}
	if p == 1 {
		return x.MulScalar(0)
	}
	mask := g.Bernoulli(tensor.FullLike(x.Value(), 1-p)).MulScalar(1 / (1 - p))
	return x.Mul(autograd.New(mask))
}
