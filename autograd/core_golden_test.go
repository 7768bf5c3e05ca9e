package autograd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// Golden gradients from internal/golden/gen/gen_core.py (grad_cases): each
// case is the output of torch for fixed float64 inputs and the gradients
// after out.backward(gout).

type coreVarFn = func(in []*autograd.Var) *autograd.Var

func coreGoldenFns() map[string]coreVarFn {
	un := func(f func(*autograd.Var) *autograd.Var) coreVarFn {
		return func(in []*autograd.Var) *autograd.Var { return f(in[0]) }
	}
	bin := func(f func(a, b *autograd.Var) *autograd.Var) coreVarFn {
		return func(in []*autograd.Var) *autograd.Var { return f(in[0], in[1]) }
	}
	norm := func(p float64) coreVarFn {
		return func(in []*autograd.Var) *autograd.Var { return in[0].Norm(p, []int{1}, false) }
	}
	return map[string]coreVarFn{
		"add/bcast":     bin((*autograd.Var).Add),
		"sub/bcast":     bin((*autograd.Var).Sub),
		"mul/bcast":     bin((*autograd.Var).Mul),
		"div/bcast":     bin((*autograd.Var).Div),
		"pow/bcast":     bin((*autograd.Var).Pow),
		"pow/zero_base": bin((*autograd.Var).Pow),
		"maximum/ties":  bin((*autograd.Var).Maximum),
		"minimum/bcast": bin((*autograd.Var).Minimum),
		"where/bcast": func(in []*autograd.Var) *autograd.Var {
			return autograd.Where(tensor.FromSlice([]bool{true, false, true}, 1, 3), in[0], in[1])
		},
		"neg/plain":        un((*autograd.Var).Neg),
		"abs/plain":        un((*autograd.Var).Abs),
		"exp/plain":        un((*autograd.Var).Exp),
		"log/plain":        un((*autograd.Var).Log),
		"log1p/plain":      un((*autograd.Var).Log1p),
		"expm1/plain":      un((*autograd.Var).Expm1),
		"sqrt/plain":       un((*autograd.Var).Sqrt),
		"rsqrt/plain":      un((*autograd.Var).Rsqrt),
		"sin/plain":        un((*autograd.Var).Sin),
		"cos/plain":        un((*autograd.Var).Cos),
		"tanh/plain":       un((*autograd.Var).Tanh),
		"sigmoid/plain":    un((*autograd.Var).Sigmoid),
		"relu/plain":       un((*autograd.Var).Relu),
		"square/plain":     un((*autograd.Var).Square),
		"reciprocal/plain": un((*autograd.Var).Reciprocal),
		"erf/plain":        un((*autograd.Var).Erf),
		"sign/plain":       un((*autograd.Var).Sign),
		"floor/plain":      un((*autograd.Var).Floor),
		"clamp/plain":      un(func(v *autograd.Var) *autograd.Var { return v.Clamp(-0.5, 0.7) }),
		"pow_scalar/plain": un(func(v *autograd.Var) *autograd.Var { return v.PowScalar(3) }),
		"pow_scalar/frac":  un(func(v *autograd.Var) *autograd.Var { return v.PowScalar(1.5) }),
		"sum/dims":         un(func(v *autograd.Var) *autograd.Var { return v.Sum([]int{0, 2}, false) }),
		"mean/keep":        un(func(v *autograd.Var) *autograd.Var { return v.Mean([]int{1}, true) }),
		"prod/dim":         un(func(v *autograd.Var) *autograd.Var { return v.Prod([]int{1}, false) }),
		"prod/zeros":       un(func(v *autograd.Var) *autograd.Var { return v.Prod([]int{1}, false) }),
		"amax/ties":        un(func(v *autograd.Var) *autograd.Var { return v.Max([]int{1}, false) }),
		"amin/all":         un(func(v *autograd.Var) *autograd.Var { return v.Min(nil, false) }),
		"var/dims":         un(func(v *autograd.Var) *autograd.Var { return v.Var([]int{0, 2}, 1, false) }),
		"std/pop":          un(func(v *autograd.Var) *autograd.Var { return v.Std([]int{1}, 0, true) }),
		"logsumexp/dim":    un(func(v *autograd.Var) *autograd.Var { return v.LogSumExp([]int{-1}, false) }),
		"norm/p1.0":        norm(1),
		"norm/p2.0":        norm(2),
		"norm/p3.0":        norm(3),
		"norm/pinf":        norm(math.Inf(1)),
		"cumsum/dim":       un(func(v *autograd.Var) *autograd.Var { return v.CumSum(1) }),
		"cumprod/dim":      un(func(v *autograd.Var) *autograd.Var { return v.CumProd(1) }),
		"cumprod/zeros":    un(func(v *autograd.Var) *autograd.Var { return v.CumProd(1) }),
		"matmul/2d":        bin((*autograd.Var).MatMul),
		"matmul/bcast":     bin((*autograd.Var).MatMul),
		"matmul/1d_2d":     bin((*autograd.Var).MatMul),
		"matmul/2d_1d":     bin((*autograd.Var).MatMul),
		"matmul/1d_1d":     bin((*autograd.Var).MatMul),
		"matmul/1d_3d":     bin((*autograd.Var).MatMul),
		"views/chain": un(func(v *autograd.Var) *autograd.Var {
			return v.Transpose(0, 2).Reshape(4, 6).Slice(1, 1, 5, 2).Narrow(0, 1, 2)
		}),
		"views/select_expand": un(func(v *autograd.Var) *autograd.Var { return v.Select(1, 1).Unsqueeze(1).Expand(2, 3, 4) }),
		"views/flip":          un(func(v *autograd.Var) *autograd.Var { return v.Permute(2, 0, 1).Flip(0, 2) }),
		"cat/dim1": func(in []*autograd.Var) *autograd.Var {
			return autograd.Concat([]*autograd.Var{in[0], in[1].T()}, 1)
		},
		"stack/dim1": func(in []*autograd.Var) *autograd.Var { return autograd.Stack([]*autograd.Var{in[0], in[1]}, 1) },
		"composite/mlp": func(in []*autograd.Var) *autograd.Var {
			return in[0].MatMul(in[1]).Add(in[2]).Tanh().Sum([]int{1}, false)
		},
	}
}

func TestCoreGoldenGrads(t *testing.T) {
	cases := golden.Load(t, "testdata/golden_core.json")
	fns := coreGoldenFns()
	require.Len(t, cases, len(fns), "every golden case has a Go function and vice versa")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f, ok := fns[c.Name]
			require.True(t, ok, "no Go function for %s", c.Name)
			in := make([]*autograd.Var, len(c.Inputs))
			for i, g := range c.Inputs {
				require.Equal(t, golden.Float64, g.DType)
				in[i] = autograd.Param(tensor.FromSlice(g.Float64s(), g.Shape...))
			}
			out := f(in)
			golden.AllClose(t, c.Name+" output", c.Outputs[0], out.Shape(), out.Value().Float64s(), 1e-12, 1e-12)
			gout := c.GradOutputs[0]
			require.NoError(t, out.BackwardWith(tensor.FromSlice(gout.Float64s(), gout.Shape...), autograd.Options{}))
			for i, want := range c.Grads {
				require.NotNil(t, want)
				got := in[i].Grad()
				require.NotNil(t, got, "input %d got no gradient", i)
				goldtensor.Check(t, c.Name+" grad", *want, got, 1e-10, 1e-12)
			}
		})
	}
}
