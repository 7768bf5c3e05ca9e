package autograd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// coreGradCase is one GradCheck of the core ops: f builds the graph from
// inputs (views that make operands non-contiguous or broadcast are built
// inside f), gradgrad also checks second derivatives.
type coreGradCase struct {
	name     string
	f        func(in []*autograd.Var) *autograd.Var
	inputs   []*tensor.Tensor
	gradgrad bool
}

type vf = func(in []*autograd.Var) *autograd.Var

// coreUnaryOps lists every differentiable unary op with the input domain it
// needs ("pos" for positive inputs) and whether it is smooth enough for a
// second-derivative check.
var coreUnaryOps = []struct {
	name     string
	f        func(v *autograd.Var) *autograd.Var
	pos      bool
	gradgrad bool
}{
	{"Neg", (*autograd.Var).Neg, false, true},
	{"Abs", (*autograd.Var).Abs, false, true},
	{"Exp", (*autograd.Var).Exp, false, true},
	{"Log", (*autograd.Var).Log, true, true},
	{"Log1p", (*autograd.Var).Log1p, true, true},
	{"Expm1", (*autograd.Var).Expm1, false, true},
	{"Sqrt", (*autograd.Var).Sqrt, true, true},
	{"Rsqrt", (*autograd.Var).Rsqrt, true, true},
	{"Sin", (*autograd.Var).Sin, false, true},
	{"Cos", (*autograd.Var).Cos, false, true},
	{"Tanh", (*autograd.Var).Tanh, false, true},
	{"Sigmoid", (*autograd.Var).Sigmoid, false, true},
	{"Relu", (*autograd.Var).Relu, false, true},
	{"Square", (*autograd.Var).Square, false, true},
	{"Reciprocal", (*autograd.Var).Reciprocal, true, true},
	{"Erf", (*autograd.Var).Erf, false, true},
	{"Sign", (*autograd.Var).Sign, false, true},
	{"Floor", (*autograd.Var).Floor, false, true},
	{"Ceil", (*autograd.Var).Ceil, false, true},
	{"Round", (*autograd.Var).Round, false, true},
	{"Clamp", func(v *autograd.Var) *autograd.Var { return v.Clamp(-0.4, 0.6) }, false, true},
	{"ClampOpenLow", func(v *autograd.Var) *autograd.Var { return v.Clamp(math.Inf(-1), 0.3) }, false, true},
	{"PowScalar3", func(v *autograd.Var) *autograd.Var { return v.PowScalar(3) }, false, true},
	{"PowScalarHalf", func(v *autograd.Var) *autograd.Var { return v.PowScalar(0.5) }, true, true},
	{"PowScalarNeg", func(v *autograd.Var) *autograd.Var { return v.PowScalar(-1.5) }, true, true},
	{"PowScalar0", func(v *autograd.Var) *autograd.Var { return v.PowScalar(0) }, false, true},
	{"AddScalar", func(v *autograd.Var) *autograd.Var { return v.AddScalar(2.5) }, false, true},
	{"SubScalar", func(v *autograd.Var) *autograd.Var { return v.SubScalar(2.5) }, false, true},
	{"MulScalar", func(v *autograd.Var) *autograd.Var { return v.MulScalar(-3) }, false, true},
	{"DivScalar", func(v *autograd.Var) *autograd.Var { return v.DivScalar(3) }, false, true},
}

// coreBinaryOps lists the differentiable binary ops; pos asks for a positive
// first (Pow base) or second (Div divisor) operand.
var coreBinaryOps = []struct {
	name       string
	f          func(a, b *autograd.Var) *autograd.Var
	posA, posB bool
}{
	{"Add", (*autograd.Var).Add, false, false},
	{"Sub", (*autograd.Var).Sub, false, false},
	{"Mul", (*autograd.Var).Mul, false, false},
	{"Div", (*autograd.Var).Div, false, true},
	{"Pow", (*autograd.Var).Pow, true, false},
	{"Maximum", (*autograd.Var).Maximum, false, false},
	{"Minimum", (*autograd.Var).Minimum, false, false},
	{"Where", func(a, b *autograd.Var) *autograd.Var {
		return autograd.Where(a.Value().Gt(b.Value()), a.MulScalar(2), b)
	}, false, false},
}

func coreGradCases() []coreGradCase {
	g := tensor.NewGenerator(5)
	rn := func(s ...int) *tensor.Tensor { return g.Randn(s, tensor.Float64) }
	pos := func(s ...int) *tensor.Tensor { return g.Rand(s, tensor.Float64).AddScalar(0.5) }
	pick := func(p bool, s ...int) *tensor.Tensor {
		if p {
			return pos(s...)
		}
		return rn(s...)
	}
	var cases []coreGradCase
	for _, op := range coreUnaryOps {
		f := op.f
		cases = append(cases,
			coreGradCase{"unary/" + op.name, func(in []*autograd.Var) *autograd.Var { return f(in[0]) },
				[]*tensor.Tensor{pick(op.pos, 3, 4)}, op.gradgrad},
			coreGradCase{"unary/" + op.name + "/transposed", func(in []*autograd.Var) *autograd.Var { return f(in[0].T()) },
				[]*tensor.Tensor{pick(op.pos, 4, 3)}, false},
			coreGradCase{"unary/" + op.name + "/sliced", func(in []*autograd.Var) *autograd.Var {
				return f(in[0].Slice(1, 1, 6, 2))
			}, []*tensor.Tensor{pick(op.pos, 2, 6)}, false},
			coreGradCase{"unary/" + op.name + "/scalar", func(in []*autograd.Var) *autograd.Var { return f(in[0]) },
				[]*tensor.Tensor{pick(op.pos).Reshape()}, false},
		)
	}
	for _, op := range coreBinaryOps {
		f := op.f
		cases = append(cases,
			coreGradCase{"binary/" + op.name, func(in []*autograd.Var) *autograd.Var { return f(in[0], in[1]) },
				[]*tensor.Tensor{pick(op.posA, 3, 4), pick(op.posB, 3, 4)}, true},
			coreGradCase{"binary/" + op.name + "/bcast_row", func(in []*autograd.Var) *autograd.Var { return f(in[0], in[1]) },
				[]*tensor.Tensor{pick(op.posA, 2, 3, 4), pick(op.posB, 4)}, true},
			coreGradCase{"binary/" + op.name + "/bcast_both", func(in []*autograd.Var) *autograd.Var { return f(in[0], in[1]) },
				[]*tensor.Tensor{pick(op.posA, 3, 1), pick(op.posB, 1, 4)}, false},
			coreGradCase{"binary/" + op.name + "/scalar_rhs", func(in []*autograd.Var) *autograd.Var { return f(in[0], in[1]) },
				[]*tensor.Tensor{pick(op.posA, 2, 3), pick(op.posB).Reshape()}, false},
			coreGradCase{"binary/" + op.name + "/transposed_sliced", func(in []*autograd.Var) *autograd.Var {
				return f(in[0].T(), in[1].Slice(1, 0, 8, 2))
			}, []*tensor.Tensor{pick(op.posA, 4, 3), pick(op.posB, 3, 8)}, false},
			coreGradCase{"binary/" + op.name + "/same_input", func(in []*autograd.Var) *autograd.Var { return f(in[0], in[0].Flip(1)) },
				[]*tensor.Tensor{pick(op.posA && op.posB || op.posA || op.posB, 2, 3)}, false},
		)
	}
	ties := tensor.FromSlice([]float64{1, 2, 3, -1}, 2, 2)
	ties2 := tensor.FromSlice([]float64{1, 5, 3, -1}, 2, 2)
	zbase := tensor.FromSlice([]float64{0, 0.5, 2, 0}, 2, 2)
	cases = append(cases,
		coreGradCase{"binary/Maximum/ties", func(in []*autograd.Var) *autograd.Var { return in[0].Maximum(in[1]) }, []*tensor.Tensor{ties, ties2}, false},
		coreGradCase{"binary/Minimum/ties", func(in []*autograd.Var) *autograd.Var { return in[0].Minimum(in[1]) }, []*tensor.Tensor{ties, ties2}, false},
		coreGradCase{"binary/Pow/zero_base", func(in []*autograd.Var) *autograd.Var { return in[0].Pow(in[1]) },
			[]*tensor.Tensor{zbase, tensor.FromSlice([]float64{2, 3, 1.5, 2}, 2, 2)}, false},
		coreGradCase{"binary/Pow/int_exponent", func(in []*autograd.Var) *autograd.Var { return in[0].Pow(in[1]) },
			[]*tensor.Tensor{rn(2, 3), tensor.FromSlice([]int64{2, 3, 1, 2, 0, 4}, 2, 3)}, true},
		coreGradCase{"Where/int_cond_tensor", func(in []*autograd.Var) *autograd.Var {
			return autograd.Where(tensor.FromSlice([]bool{true, false, true}), in[0], in[1])
		}, []*tensor.Tensor{rn(2, 3), rn(2, 1)}, true},
	)

	// Reductions over single, multiple, negative and all axes.
	axesList := []struct {
		name string
		axes []int
	}{{"all", nil}, {"0", []int{0}}, {"neg", []int{-1}}, {"multi", []int{0, 2}}}
	reductions := []struct {
		name     string
		f        func(v *autograd.Var, axes []int, keep bool) *autograd.Var
		gradgrad bool
	}{
		{"Sum", (*autograd.Var).Sum, true},
		{"Mean", (*autograd.Var).Mean, true},
		{"Prod", (*autograd.Var).Prod, true},
		{"Max", (*autograd.Var).Max, true},
		{"Min", (*autograd.Var).Min, true},
		{"Var1", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Var(a, 1, k) }, true},
		{"Var0", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Var(a, 0, k) }, true},
		{"Std1", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Std(a, 1, k) }, true},
		{"Std0", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Std(a, 0, k) }, false},
		{"LogSumExp", (*autograd.Var).LogSumExp, true},
		{"Norm1", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(1, a, k) }, true},
		{"Norm2", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(2, a, k) }, true},
		{"Norm3", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(3, a, k) }, true},
		{"NormHalf", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(0.5, a, k) }, false},
		{"NormInf", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(math.Inf(1), a, k) }, true},
		{"Norm0", func(v *autograd.Var, a []int, k bool) *autograd.Var { return v.Norm(0, a, k) }, false},
	}
	for _, r := range reductions {
		for _, ax := range axesList {
			for _, keep := range []bool{false, true} {
				f, axes := r.f, ax.axes
				name := "reduce/" + r.name + "/" + ax.name
				if keep {
					name += "/keep"
				}
				cases = append(cases, coreGradCase{name, func(in []*autograd.Var) *autograd.Var { return f(in[0], axes, keep) },
					[]*tensor.Tensor{rn(2, 3, 2)}, r.gradgrad && !keep && ax.name != "all"})
			}
		}
		f := r.f
		cases = append(cases, coreGradCase{"reduce/" + r.name + "/transposed", func(in []*autograd.Var) *autograd.Var {
			return f(in[0].Permute(2, 0, 1), []int{1}, false)
		}, []*tensor.Tensor{rn(3, 2, 4)}, false})
	}
	withZeros := tensor.FromSlice([]float64{1.5, 0, -2, 0.5, 0, 0, 3, 1, -1, 2, 0.7, 1.1}, 3, 4)
	lane2ties := tensor.FromSlice([]float64{1, 3, 3, 0, 2, -1, -1, 1}, 2, 4)
	cases = append(cases,
		coreGradCase{"reduce/Prod/zeros", func(in []*autograd.Var) *autograd.Var { return in[0].Prod([]int{1}, false) }, []*tensor.Tensor{withZeros}, true},
		coreGradCase{"reduce/Prod/zeros_multi_axes", func(in []*autograd.Var) *autograd.Var {
			return in[0].Reshape(3, 2, 2).Prod([]int{0, 2}, true)
		}, []*tensor.Tensor{withZeros}, true},
		coreGradCase{"reduce/Prod/zeros_all", func(in []*autograd.Var) *autograd.Var { return in[0].Prod(nil, false) },
			[]*tensor.Tensor{tensor.FromSlice([]float64{2, 0, 3, -1}, 2, 2)}, true},
		coreGradCase{"reduce/Max/two_way_ties", func(in []*autograd.Var) *autograd.Var { return in[0].Max([]int{1}, false) }, []*tensor.Tensor{lane2ties}, false},
		coreGradCase{"reduce/Min/two_way_ties", func(in []*autograd.Var) *autograd.Var { return in[0].Min([]int{1}, false) }, []*tensor.Tensor{lane2ties}, false},
		coreGradCase{"reduce/Norm2/zero_lane", func(in []*autograd.Var) *autograd.Var { return in[0].Norm(2, []int{1}, false) },
			[]*tensor.Tensor{tensor.FromSlice([]float64{0, 0, 0, 1, -2, 2}, 2, 3)}, false},
		coreGradCase{"reduce/Norm1/zero_elem", func(in []*autograd.Var) *autograd.Var { return in[0].Norm(1, []int{1}, false) },
			[]*tensor.Tensor{tensor.FromSlice([]float64{0, 0.5, -1, 1, -2, 2}, 2, 3)}, false},
		coreGradCase{"reduce/LogSumExp/large", func(in []*autograd.Var) *autograd.Var { return in[0].LogSumExp([]int{-1}, false) },
			[]*tensor.Tensor{rn(2, 3).AddScalar(500)}, false},
	)
	for _, ax := range []int{0, 1, -1} {
		a := ax
		cases = append(cases,
			coreGradCase{"scan/CumSum/" + string(rune('0'+a+1)), func(in []*autograd.Var) *autograd.Var { return in[0].CumSum(a) }, []*tensor.Tensor{rn(3, 4)}, true},
			coreGradCase{"scan/CumProd/" + string(rune('0'+a+1)), func(in []*autograd.Var) *autograd.Var { return in[0].CumProd(a) }, []*tensor.Tensor{rn(3, 4)}, true},
		)
	}
	cases = append(cases,
		coreGradCase{"scan/CumSum/transposed", func(in []*autograd.Var) *autograd.Var { return in[0].T().CumSum(1) }, []*tensor.Tensor{rn(4, 3)}, false},
		coreGradCase{"scan/CumProd/sliced", func(in []*autograd.Var) *autograd.Var { return in[0].Slice(1, 0, 8, 2).CumProd(1) }, []*tensor.Tensor{rn(3, 8)}, false},
		coreGradCase{"scan/CumProd/zeros", func(in []*autograd.Var) *autograd.Var { return in[0].CumProd(1) }, []*tensor.Tensor{withZeros}, false},
		coreGradCase{"scan/CumProd/zeros_axis0", func(in []*autograd.Var) *autograd.Var { return in[0].CumProd(0) }, []*tensor.Tensor{withZeros}, false},
	)

	// Matrix products in every layout PyTorch's matmul accepts.
	mm := func(in []*autograd.Var) *autograd.Var { return in[0].MatMul(in[1]) }
	cases = append(cases,
		coreGradCase{"matmul/2d", mm, []*tensor.Tensor{rn(3, 4), rn(4, 2)}, true},
		coreGradCase{"matmul/batched", mm, []*tensor.Tensor{rn(2, 3, 4), rn(2, 4, 2)}, true},
		coreGradCase{"matmul/bcast_batch", mm, []*tensor.Tensor{rn(2, 1, 2, 3), rn(3, 3, 2)}, true},
		coreGradCase{"matmul/bcast_2d_rhs", mm, []*tensor.Tensor{rn(2, 3, 4), rn(4, 2)}, true},
		coreGradCase{"matmul/1d_2d", mm, []*tensor.Tensor{rn(4), rn(4, 3)}, true},
		coreGradCase{"matmul/2d_1d", mm, []*tensor.Tensor{rn(3, 4), rn(4)}, true},
		coreGradCase{"matmul/1d_1d", mm, []*tensor.Tensor{rn(4), rn(4)}, true},
		coreGradCase{"matmul/1d_3d", mm, []*tensor.Tensor{rn(3), rn(2, 3, 2)}, true},
		coreGradCase{"matmul/3d_1d", mm, []*tensor.Tensor{rn(2, 2, 3), rn(3)}, true},
		coreGradCase{"matmul/transposed", func(in []*autograd.Var) *autograd.Var { return in[0].T().MatMul(in[1].T()) },
			[]*tensor.Tensor{rn(4, 3), rn(2, 4)}, true},
		coreGradCase{"matmul/sliced", func(in []*autograd.Var) *autograd.Var {
			return in[0].Slice(1, 0, 8, 2).MatMul(in[1].Slice(0, 1, 8, 2))
		}, []*tensor.Tensor{rn(3, 8), rn(8, 2)}, false},
		coreGradCase{"matmul/same_operand", func(in []*autograd.Var) *autograd.Var { return in[0].MatMul(in[0].T()) }, []*tensor.Tensor{rn(3, 2)}, true},
		coreGradCase{"Dot", func(in []*autograd.Var) *autograd.Var { return in[0].Dot(in[1]) }, []*tensor.Tensor{rn(5), rn(5)}, true},
		coreGradCase{"Outer", func(in []*autograd.Var) *autograd.Var { return in[0].Outer(in[1]) }, []*tensor.Tensor{rn(3), rn(4)}, true},
	)

	// Views and joins.
	x := rn(2, 3, 4)
	views := map[string]vf{
		"Reshape":          func(in []*autograd.Var) *autograd.Var { return in[0].Reshape(4, -1).Exp() },
		"Reshape/copying":  func(in []*autograd.Var) *autograd.Var { return in[0].Transpose(0, 2).Reshape(-1).Exp() },
		"View":             func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(2, 0, 2).View(6, 2).Exp() },
		"Flatten":          func(in []*autograd.Var) *autograd.Var { return in[0].Transpose(1, 2).Flatten(1, 2).Exp() },
		"Permute":          func(in []*autograd.Var) *autograd.Var { return in[0].Permute(2, 0, -2).Exp() },
		"Transpose":        func(in []*autograd.Var) *autograd.Var { return in[0].Transpose(-1, 0).Exp() },
		"T":                func(in []*autograd.Var) *autograd.Var { return in[0].Select(0, 1).T().Exp() },
		"Squeeze":          func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(1, 1, 1).Squeeze().Exp() },
		"Squeeze/axis":     func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(1, 1, 1).Squeeze(1).Exp() },
		"Unsqueeze":        func(in []*autograd.Var) *autograd.Var { return in[0].Unsqueeze(-2).Exp() },
		"Expand":           func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(1, 0, 1).Expand(3, 2, 3, 4).Exp() },
		"Contiguous":       func(in []*autograd.Var) *autograd.Var { return in[0].Transpose(0, 1).Contiguous().Exp() },
		"Narrow":           func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(2, 1, 2).Exp() },
		"Narrow/neg_start": func(in []*autograd.Var) *autograd.Var { return in[0].Narrow(-1, -3, 2).Exp() },
		"Slice":            func(in []*autograd.Var) *autograd.Var { return in[0].Slice(2, 1, 4, 2).Exp() },
		"Slice/of_T":       func(in []*autograd.Var) *autograd.Var { return in[0].Transpose(0, 2).Slice(0, -3, 100, 2).Exp() },
		"Select":           func(in []*autograd.Var) *autograd.Var { return in[0].Select(1, -1).Exp() },
		"Flip":             func(in []*autograd.Var) *autograd.Var { return in[0].Flip(0, 2).Exp() },
		"To/same":          func(in []*autograd.Var) *autograd.Var { return in[0].To(tensor.Float64).Exp() },
		"Concat": func(in []*autograd.Var) *autograd.Var {
			return autograd.Concat([]*autograd.Var{in[0].Exp(), in[0].Narrow(1, 0, 1), in[0].Transpose(0, 1).Narrow(0, 0, 2)}, 1).Exp()
		},
		"Concat/neg_axis": func(in []*autograd.Var) *autograd.Var {
			return autograd.Concat([]*autograd.Var{in[0], in[0].Square()}, -1).Exp()
		},
		"Stack": func(in []*autograd.Var) *autograd.Var {
			return autograd.Stack([]*autograd.Var{in[0], in[0].Flip(1).Tanh()}, -1).Exp()
		},
		"Stack/axis0": func(in []*autograd.Var) *autograd.Var {
			return autograd.Stack([]*autograd.Var{in[0].Select(0, 0), in[0].Select(0, 1)}, 0).Exp()
		},
		"SumTo": func(in []*autograd.Var) *autograd.Var { return in[0].Exp().SumTo([]int{3, 1}) },
		"Where0/MaskedZero": func(in []*autograd.Var) *autograd.Var {
			m := in[0].Value().Gt(tensor.ScalarOf(0, tensor.Float64))
			return in[0].Where0(m).Log().MaskedZero(m.LogicalNot()).Exp()
		},
	}
	for name, f := range views {
		cases = append(cases, coreGradCase{"view/" + name, f, []*tensor.Tensor{x}, true})
	}
	cases = append(cases, coreGradCase{"composite/mlp", func(in []*autograd.Var) *autograd.Var {
		h := in[0].MatMul(in[1]).Add(in[2]).Tanh()
		return h.MatMul(in[1].T()).Sigmoid().Mean([]int{1}, false)
	}, []*tensor.Tensor{rn(4, 3), rn(3, 3), rn(3)}, true})
	return cases
}

func TestCoreGradCheck(t *testing.T) {
	for _, c := range coreGradCases() {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(c.f, c.inputs...))
			if c.gradgrad {
				require.NoError(t, autograd.GradGradCheck(c.f, c.inputs...))
			}
		})
	}
}

// TestCoreGradCheckCatchesWrongGradient runs GradCheck on deliberately
// wrong gradient rules: each must be reported.
func TestCoreGradCheckCatchesWrongGradient(t *testing.T) {
	x := tensor.FromSlice([]float64{0.5, -1.2, 2}, 3)
	wrong := map[string]autograd.BackwardFunc{
		"scaled": func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Mul(in[0]).MulScalar(3)} // d(x²)/dx is 2x
		},
		"sign flipped": func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Mul(in[0]).MulScalar(-2)}
		},
		"one element off": func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			off := autograd.New(tensor.FromSlice([]float64{0, 1e-2, 0}, 3))
			return []*autograd.Var{g.Mul(in[0]).MulScalar(2).Add(off)}
		},
		"missing": func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{nil}
		},
	}
	for name, bwd := range wrong {
		t.Run(name, func(t *testing.T) {
			f := func(in []*autograd.Var) *autograd.Var {
				return autograd.Custom("BadSquare", in[0].Value().Square(), in, nil, bwd)
			}
			err := autograd.GradCheck(f, x)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "autograd.GradCheck")
		})
	}
	// The right rule passes, also at second order.
	good := func(in []*autograd.Var) *autograd.Var {
		return autograd.Custom("Square", in[0].Value().Square(), in, nil,
			func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g.Mul(in[0]).MulScalar(2)}
			})
	}
	require.NoError(t, autograd.GradCheck(good, x))
	require.NoError(t, autograd.GradGradCheck(good, x))
	// A wrong second derivative (a rule that is not itself differentiable
	// in x) is caught by GradGradCheck but not GradCheck.
	constant := func(in []*autograd.Var) *autograd.Var {
		return autograd.Custom("Square", in[0].Value().Square(), in, nil,
			func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
				return []*autograd.Var{g.Mul(autograd.New(in[0].Value())).MulScalar(2)}
			})
	}
	require.NoError(t, autograd.GradCheck(constant, x))
	require.Error(t, autograd.GradGradCheck(constant, x))

	// Non-float output and no float input are refused.
	require.Error(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var { return in[0].To(tensor.Float32) }, x))
	require.Error(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var { return in[0] }, tensor.FromSlice([]int64{1})))
}
