package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// Golden forward values from internal/golden/gen/gen_core.py.

const coreGoldenPath = "testdata/golden_core.json"

// coreAttrString returns a string attribute that may be JSON null ("").
func coreAttrString(c golden.Case, name string) string {
	v, ok := c.Attrs[name]
	if !ok || v == nil {
		return ""
	}
	return c.String(name)
}

// coreAttrAxes returns an axes attribute; null means every axis (nil).
func coreAttrAxes(c golden.Case, name string) []int {
	if v, ok := c.Attrs[name]; !ok || v == nil {
		return nil
	}
	return c.Ints(name)
}

// corePre applies the fixture's layout transform so the op sees a view.
func corePre(x *tensor.Tensor, how string) *tensor.Tensor {
	switch how {
	case "":
		return x
	case "T":
		return x.Transpose(-1, -2)
	case "step2":
		return x.Slice(-1, 0, x.Size(-1), 2)
	}
	panic("unknown layout transform " + how)
}

// coreTol returns the comparison tolerance for an output dtype.
func coreTol(dt string, op string) (rtol, atol float64) {
	switch dt {
	case golden.Float32:
		switch op {
		case "unary", "binary", "where", "cast", "view", "cat", "stack", "flip", "arange", "linspace", "eye":
			return 2e-6, 1e-7
		}
		return 1e-5, 1e-6
	case golden.Float64:
		return 1e-12, 1e-13
	}
	return 0, 0
}

// coreCompare checks got against want: dtype, shape and values.
func coreCompare(t *testing.T, name string, want golden.Tensor, got *tensor.Tensor, op string) {
	t.Helper()
	if got.DType().String() != want.DType {
		t.Errorf("%s: dtype %s, want %s", name, got.DType(), want.DType)
		return
	}
	rtol, atol := coreTol(want.DType, op)
	goldtensor.Check(t, name, want, got, rtol, atol)
}

var coreUnary = map[string]func(x *tensor.Tensor, c golden.Case) *tensor.Tensor{
	"neg":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Neg() },
	"abs":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Abs() },
	"sign":        func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Sign() },
	"exp":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Exp() },
	"log":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Log() },
	"log1p":       func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Log1p() },
	"expm1":       func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Expm1() },
	"sqrt":        func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Sqrt() },
	"rsqrt":       func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Rsqrt() },
	"sin":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Sin() },
	"cos":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Cos() },
	"tanh":        func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Tanh() },
	"sigmoid":     func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Sigmoid() },
	"relu":        func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Relu() },
	"floor":       func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Floor() },
	"ceil":        func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Ceil() },
	"round":       func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Round() },
	"square":      func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Square() },
	"reciprocal":  func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Reciprocal() },
	"erf":         func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.Erf() },
	"logical_not": func(x *tensor.Tensor, _ golden.Case) *tensor.Tensor { return x.LogicalNot() },
	"clamp": func(x *tensor.Tensor, c golden.Case) *tensor.Tensor {
		return x.Clamp(c.Float("lo"), c.Float("hi"))
	},
	"pow_scalar": func(x *tensor.Tensor, c golden.Case) *tensor.Tensor { return x.PowScalar(c.Float("exp")) },
}

var coreBinary = map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
	"add":         (*tensor.Tensor).Add,
	"sub":         (*tensor.Tensor).Sub,
	"mul":         (*tensor.Tensor).Mul,
	"div":         (*tensor.Tensor).Div,
	"pow":         (*tensor.Tensor).Pow,
	"maximum":     (*tensor.Tensor).Maximum,
	"minimum":     (*tensor.Tensor).Minimum,
	"eq":          (*tensor.Tensor).Eq,
	"ne":          (*tensor.Tensor).Ne,
	"lt":          (*tensor.Tensor).Lt,
	"le":          (*tensor.Tensor).Le,
	"gt":          (*tensor.Tensor).Gt,
	"ge":          (*tensor.Tensor).Ge,
	"logical_and": (*tensor.Tensor).LogicalAnd,
	"logical_or":  (*tensor.Tensor).LogicalOr,
	"logical_xor": (*tensor.Tensor).LogicalXor,
}

// coreReduce maps a fixture reduction to Ember.
func coreReduce(c golden.Case, x *tensor.Tensor) *tensor.Tensor {
	axes := coreAttrAxes(c, "dims")
	keep := c.Bool("keepdim")
	switch c.Op {
	case "sum":
		return x.Sum(axes, keep)
	case "mean":
		return x.Mean(axes, keep)
	case "prod":
		return x.Prod(axes, keep)
	case "amax":
		return x.Max(axes, keep)
	case "amin":
		return x.Min(axes, keep)
	case "logsumexp":
		return x.LogSumExp(axes, keep)
	case "var":
		return x.Var(axes, c.Int("correction"), keep)
	case "std":
		return x.Std(axes, c.Int("correction"), keep)
	case "norm":
		return x.Norm(c.Float("p"), axes, keep)
	}
	panic("unknown reduction " + c.Op)
}

// coreApplySteps replays a view chain from the fixture.
func coreApplySteps(x *tensor.Tensor, steps []any) *tensor.Tensor {
	for _, s := range steps {
		list := s.([]any)
		name := list[0].(string)
		args := make([]int, len(list)-1)
		for i, a := range list[1:] {
			args[i] = int(a.(float64))
		}
		switch name {
		case "reshape":
			x = x.Reshape(args...)
		case "view":
			x = x.View(args...)
		case "permute":
			x = x.Permute(args...)
		case "transpose":
			x = x.Transpose(args[0], args[1])
		case "narrow":
			x = x.Narrow(args[0], args[1], args[2])
		case "slice":
			x = x.Slice(args[0], args[1], args[2], args[3])
		case "select":
			x = x.Select(args[0], args[1])
		case "squeeze":
			x = x.Squeeze(args...)
		case "unsqueeze":
			x = x.Unsqueeze(args[0])
		case "expand":
			x = x.Expand(args...)
		case "flatten":
			x = x.Flatten(args[0], args[1])
		case "T":
			x = x.T()
		case "contiguous":
			x = x.Contiguous()
		default:
			panic("unknown view step " + name)
		}
	}
	return x
}

func coreInputs(c golden.Case) []*tensor.Tensor {
	in := make([]*tensor.Tensor, len(c.Inputs))
	for i, g := range c.Inputs {
		in[i] = goldtensor.ToTensor(g)
	}
	return in
}

func TestCoreGolden(t *testing.T) {
	cases := golden.Load(t, coreGoldenPath)
	require.NotEmpty(t, cases)
	seen := map[string]int{}
	for _, c := range cases {
		seen[c.Op]++
		t.Run(c.Name, func(t *testing.T) {
			coreRunCase(t, c)
		})
	}
	for _, op := range []string{"unary", "binary", "where", "sum", "mean", "prod", "amax", "amin", "var", "std",
		"logsumexp", "norm", "argmax", "argmin", "cumsum", "cumprod", "matmul", "view", "cat", "stack", "flip",
		"cast", "arange", "linspace", "eye"} {
		assert.NotZero(t, seen[op], "no golden cases for %s", op)
	}
}

func coreRunCase(t *testing.T, c golden.Case) {
	in := coreInputs(c)
	var got []*tensor.Tensor
	switch c.Op {
	case "unary":
		f, ok := coreUnary[c.String("fn")]
		require.True(t, ok, "unknown unary %s", c.String("fn"))
		got = []*tensor.Tensor{f(corePre(in[0], coreAttrString(c, "pre")), c)}
	case "binary":
		f, ok := coreBinary[c.String("fn")]
		require.True(t, ok, "unknown binary %s", c.String("fn"))
		a, b := corePre(in[0], coreAttrString(c, "pre_a")), corePre(in[1], coreAttrString(c, "pre_b"))
		got = []*tensor.Tensor{f(a, b)}
	case "where":
		got = []*tensor.Tensor{tensor.Where(in[0], in[1], in[2])}
	case "sum", "mean", "prod", "amax", "amin", "logsumexp", "var", "std", "norm":
		got = []*tensor.Tensor{coreReduce(c, in[0])}
	case "argmax":
		got = []*tensor.Tensor{in[0].ArgMax(c.Int("dim"), c.Bool("keepdim"))}
	case "argmin":
		got = []*tensor.Tensor{in[0].ArgMin(c.Int("dim"), c.Bool("keepdim"))}
	case "cumsum":
		got = []*tensor.Tensor{in[0].CumSum(c.Int("dim"))}
	case "cumprod":
		got = []*tensor.Tensor{in[0].CumProd(c.Int("dim"))}
	case "matmul":
		a, b := corePre(in[0], coreAttrString(c, "pre_a")), corePre(in[1], coreAttrString(c, "pre_b"))
		got = []*tensor.Tensor{a.MatMul(b)}
	case "view":
		steps := c.Attrs["steps"].([]any)
		if c.Bool("error") {
			assert.Panics(t, func() { coreApplySteps(in[0], steps) }, "torch refuses this view")
			return
		}
		y := coreApplySteps(in[0], steps)
		if y.Numel() > 0 {
			assert.Equal(t, c.Bool("is_view"), y.SharesStorage(in[0]), "view vs copy differs from torch")
		}
		got = []*tensor.Tensor{y}
	case "cat":
		if coreAttrString(c, "pre_b") != "" {
			in[1] = corePre(in[1], coreAttrString(c, "pre_b"))
		}
		got = []*tensor.Tensor{tensor.Concat(in, c.Int("dim"))}
	case "stack":
		got = []*tensor.Tensor{tensor.Stack(in, c.Int("dim"))}
	case "flip":
		got = []*tensor.Tensor{corePre(in[0], coreAttrString(c, "pre")).Flip(c.Ints("dims")...)}
	case "cast":
		coreCheckCast(t, c, corePre(in[0], coreAttrString(c, "pre")))
		return
	case "arange":
		var dts []tensor.DType
		if s := coreAttrString(c, "dtype"); s != "" {
			dt, err := tensor.ParseDType(s)
			require.NoError(t, err)
			dts = append(dts, dt)
		}
		got = []*tensor.Tensor{tensor.Arange(c.Float("start"), c.Float("end"), c.Float("step"), dts...)}
	case "linspace":
		dt, err := tensor.ParseDType(c.String("dtype"))
		require.NoError(t, err)
		got = []*tensor.Tensor{tensor.Linspace(c.Float("start"), c.Float("end"), c.Int("n"), dt)}
	case "eye":
		got = []*tensor.Tensor{tensor.Eye(c.Int("n"), c.Int("m"))}
	default:
		t.Fatalf("unknown op %q", c.Op)
	}
	require.Len(t, got, len(c.Outputs))
	for i, w := range c.Outputs {
		coreCompare(t, fmt.Sprintf("%s output %d", c.Name, i), w, got[i], c.Op)
	}
}

// coreCheckCast compares a dtype conversion. Half results come as the
// float32 value and the 16-bit pattern; NaN patterns differ between torch's
// code paths, so for NaN only NaN-ness is checked.
func coreCheckCast(t *testing.T, c golden.Case, x *tensor.Tensor) {
	to, err := tensor.ParseDType(c.String("to"))
	require.NoError(t, err)
	y := x.To(to)
	require.Equal(t, to, y.DType())
	if to != tensor.Float16 && to != tensor.BFloat16 {
		coreCompare(t, c.Name, c.Outputs[0], y, c.Op)
		return
	}
	want := c.Outputs[0]
	require.Equal(t, want.Shape, append([]int{}, y.Shape()...))
	vals := y.Float64s()
	bits := y.HalfBits()
	wantBits := c.Outputs[1].Int64s()
	for i, w := range want.Data {
		if math.IsNaN(w) {
			assert.True(t, math.IsNaN(vals[i]), "%s[%d]: got %v (bits %#04x), want NaN", c.Name, i, vals[i], bits[i])
			continue
		}
		assert.Equal(t, w, vals[i], "%s[%d] value", c.Name, i)
		assert.Equal(t, uint16(wantBits[i]), bits[i], "%s[%d] bits of %v", c.Name, i, w)
	}
}
