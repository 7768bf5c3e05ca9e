package autograd_test

import (
	"fmt"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// softClip is a Function computing x / (1 + x²) with its own rule.
var softClip = autograd.NewFunction("SoftClip", func(in []*autograd.Var) *autograd.Var {
	x := in[0]
	return x.Div(x.Mul(x).AddScalar(1))
}, func(g *autograd.Var, in []*autograd.Var, _ *autograd.Var) []*autograd.Var {
	x2 := in[0].Mul(in[0])
	d := x2.AddScalar(1)
	return []*autograd.Var{g.Mul(x2.Neg().AddScalar(1)).Div(d.Mul(d))}
})

func TestFunctionValueAndGradient(t *testing.T) {
	x := tensor.FromSlice([]float64{-2, -0.5, 0, 0.75, 3}, 5)
	v := softClip.Apply(autograd.New(x))
	_, recorded := v.Node()
	require.False(t, recorded, "no input requires a gradient: nothing is recorded")
	for i, xi := range x.Float64s() {
		require.InDelta(t, xi/(1+xi*xi), v.Value().Float64s()[i], 1e-15)
	}
	require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
		return softClip.Apply(in[0].MulScalar(1.5)).Sum(nil, false)
	}, x))
}

func TestFunctionNodeInfo(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float64{1, 2}, 2))
	v := softClip.Apply(x)
	n, ok := v.Node()
	require.True(t, ok)
	require.Equal(t, "SoftClip", n.Op)
	require.Same(t, softClip.Key(), n.Key)
	require.NotNil(t, n.Forward)
	// The forward traced again on the recorded inputs records primitives
	// reading the same inputs, with the same value.
	again := n.Forward(n.Inputs)
	require.Equal(t, v.Value().Float64s(), again.Value().Float64s())
	an, ok := again.Node()
	require.True(t, ok)
	require.Nil(t, an.Key, "built-in ops have no key")
	require.Equal(t, "Div", an.Op)

	// Custom ops get a key of their name, distinct from every other.
	c1 := autograd.Custom("Tanh", x.Value().Tanh(), []*autograd.Var{x}, nil, func(g *autograd.Var, in []*autograd.Var, out *autograd.Var) []*autograd.Var {
		return []*autograd.Var{g}
	})
	c2 := autograd.Custom("Tanh", x.Value().Tanh(), []*autograd.Var{x}, nil, func(g *autograd.Var, in []*autograd.Var, out *autograd.Var) []*autograd.Var {
		return []*autograd.Var{g}
	})
	n1, _ := c1.Node()
	n2, _ := c2.Node()
	require.Equal(t, "Tanh", n1.Key.Name())
	require.NotSame(t, n1.Key, n2.Key)
	require.Nil(t, n1.Forward)
	builtin, _ := x.Tanh().Node()
	require.Nil(t, builtin.Key)

	// Annotate gives a fresh key; AnnotateOp the caller's.
	key := autograd.NewOpKey("Block")
	a := autograd.AnnotateOp(x.Mul(x), key, nil, x)
	ca, ok := a.Composite()
	require.True(t, ok)
	require.Same(t, key, ca.Key)
	b := autograd.Annotate(x.Mul(x), "Block", nil, x)
	cb, _ := b.Composite()
	require.Equal(t, "Block", cb.Key.Name())
	require.NotSame(t, key, cb.Key)
}

func TestNewFunctionNeedsBothRules(t *testing.T) {
	require.PanicsWithValue(t, `autograd.NewFunction("F"): forward and backward must both be given`, func() {
		autograd.NewFunction("F", nil, func(g *autograd.Var, in []*autograd.Var, out *autograd.Var) []*autograd.Var { return nil })
	})
}

// A Function whose gradient is the identity (a straight-through
// estimator): rounding forward, gradient passed through unchanged.
func ExampleNewFunction() {
	roundSTE := autograd.NewFunction("RoundSTE", func(in []*autograd.Var) *autograd.Var {
		return in[0].Round()
	}, func(g *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
		return []*autograd.Var{g}
	})
	x := autograd.Param(tensor.FromSlice([]float64{0.4, 1.6, -2.2}, 3))
	y := roundSTE.Apply(x).MulScalar(3).Sum(nil, false)
	if err := y.Backward(); err != nil {
		panic(err)
	}
	fmt.Println(roundSTE.Apply(x).Value().Float64s())
	fmt.Println(x.Grad().Float64s())
	// Output:
	// [0 2 -2]
	// [3 3 3]
}
