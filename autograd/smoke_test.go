package autograd_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

func TestSmokeGrad(t *testing.T) {
	g := tensor.NewGenerator(1)
	a := g.Randn([]int{3, 4}, tensor.Float64)
	b := g.Randn([]int{4, 2}, tensor.Float64)
	c := g.Randn([]int{4}, tensor.Float64)
	cases := map[string]func(in []*autograd.Var) *autograd.Var{
		"matmul":  func(in []*autograd.Var) *autograd.Var { return in[0].MatMul(in[1]).Tanh() },
		"bcast":   func(in []*autograd.Var) *autograd.Var { return in[0].Mul(in[2]).Exp().Sum([]int{1}, false) },
		"vecmat":  func(in []*autograd.Var) *autograd.Var { return in[2].MatMul(in[1]) },
		"matvec":  func(in []*autograd.Var) *autograd.Var { return in[0].MatMul(in[2]) },
		"dot":     func(in []*autograd.Var) *autograd.Var { return in[2].MatMul(in[2]) },
		"trans":   func(in []*autograd.Var) *autograd.Var { return in[0].T().Sigmoid().Max([]int{0}, false) },
		"lse":     func(in []*autograd.Var) *autograd.Var { return in[0].LogSumExp([]int{1}, false) },
		"cumprod": func(in []*autograd.Var) *autograd.Var { return in[0].CumProd(1) },
		"prod":    func(in []*autograd.Var) *autograd.Var { return in[0].Prod([]int{0}, false) },
		"norm":    func(in []*autograd.Var) *autograd.Var { return in[0].Norm(3, []int{0}, false) },
		"slice":   func(in []*autograd.Var) *autograd.Var { return in[0].Slice(1, 0, 4, 2).Mul(in[0].Narrow(1, 1, 2)) },
		"concat": func(in []*autograd.Var) *autograd.Var {
			return autograd.Concat([]*autograd.Var{in[0], in[1].T()}, 0).Std([]int{0}, 1, false)
		},
	}
	for name, f := range cases {
		if err := autograd.GradCheck(f, a, b, c); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := autograd.GradGradCheck(f, a, b, c); err != nil {
			t.Errorf("gradgrad %s: %v", name, err)
		}
	}
}
