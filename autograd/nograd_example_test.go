package autograd_test

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Evaluating a trainable computation without recording it: the input is
// marked, so the product with a parameter records nothing and cannot be
// differentiated, while the same product on an unmarked input records as
// usual.
func ExampleNoGrad() {
	w := autograd.Param(tensor.FromSlice([]float64{2, -1}, 2, 1))
	x := autograd.New(tensor.FromSlice([]float64{1, 3}, 1, 2))

	train := x.MatMul(w)
	_, recorded := train.Node()
	fmt.Println("training:", train.Value().Float64s(), "recorded:", recorded)

	eval := autograd.NoGrad(x).MatMul(w)
	_, recorded = eval.Node()
	fmt.Println("no-grad:", eval.Value().Float64s(), "recorded:", recorded, "marked:", eval.IsNoGrad())
	fmt.Println(errors.Is(eval.Backward(), autograd.ErrNoGrad))
	// Output:
	// training: [-1] recorded: true
	// no-grad: [-1] recorded: false marked: true
	// true
}

// A layer with a fast kernel that has no gradient rule uses it only when
// nothing is recorded, and wraps its result with Unrecorded so that a
// no-grad mark on its input carries on.
func ExampleNeedsGrad() {
	scale := autograd.Param(tensor.FromSlice([]float64{3}, 1))
	forward := func(x *autograd.Var) *autograd.Var {
		if !autograd.NeedsGrad(x, scale) {
			return autograd.Unrecorded(x.Value().Mul(scale.Value()), x, scale) // the fast path
		}
		return x.Mul(scale)
	}
	x := autograd.New(tensor.FromSlice([]float64{1, 2}, 2))
	for _, in := range []*autograd.Var{x, autograd.NoGrad(x)} {
		out := forward(in)
		fmt.Println(out.Value().Float64s(), out.RequiresGrad(), out.IsNoGrad())
	}
	// Output:
	// [3 6] true false
	// [3 6] false true
}
