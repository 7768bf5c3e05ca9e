package autograd_test

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Gradients of a scalar with respect to the leaves that require them.
func ExampleVar_Backward() {
	w := autograd.Param(tensor.FromSlice([]float64{1, 2, 3}))
	x := autograd.New(tensor.FromSlice([]float64{4, 5, 6}))
	loss := w.Mul(x).Sum(nil, false).Square() // (w·x)²
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	fmt.Println(loss.Item())
	fmt.Println(w.Grad().Float64s()) // 2(w·x)·x
	// Output:
	// 1024
	// [256 320 384]
}

// Higher-order gradients: differentiate a gradient again with CreateGraph.
func ExampleGrad() {
	x := autograd.Param(tensor.FromSlice([]float64{2}))
	y := x.PowScalar(3).Sum(nil, false) // x³
	dy, err := autograd.Grad([]*autograd.Var{y}, []*autograd.Var{x}, nil, autograd.Options{CreateGraph: true})
	if err != nil {
		panic(err)
	}
	d2y, err := autograd.Grad([]*autograd.Var{dy[0].Sum(nil, false)}, []*autograd.Var{x}, nil, autograd.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(dy[0].Value().Item(), d2y[0].Value().Item()) // 3x², 6x
	// Output:
	// 12 12
}

// GradCheck compares autograd with finite differences in float64.
func ExampleGradCheck() {
	g := tensor.NewGenerator(1)
	a, b := g.Randn([]int{3, 4}), g.Randn([]int{4, 2})
	err := autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
		return in[0].MatMul(in[1]).Tanh()
	}, a, b)
	fmt.Println(err)
	// Output:
	// <nil>
}

// Modifying a tensor that backward needs is caught instead of giving a
// wrong gradient.
func ExampleVar_Backward_inPlace() {
	x := autograd.Param(tensor.FromSlice([]float64{1, 2}))
	y := x.Exp().Sum(nil, false)
	x2 := autograd.Param(tensor.FromSlice([]float64{3, 4}))
	z := x2.Square().Sum(nil, false)
	x2.Value().AddScalarInPlace(1) // Square saved x2's value
	fmt.Println(y.Backward() == nil)
	fmt.Println(z.Backward() != nil)
	// Output:
	// true
	// true
}
