package tensor_test

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Views share storage: writing through a slice changes the base tensor.
func ExampleTensor_Slice() {
	t := tensor.Zeros([]int{2, 4})
	t.Slice(1, 1, 4, 2).Fill(7) // columns 1 and 3
	fmt.Println(t)
	// Output:
	// tensor([[0., 7., 0., 7.],
	//         [0., 7., 0., 7.]])
}

// Binary ops broadcast like NumPy; reductions take axes and keepDim.
func ExampleTensor_Add() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	bias := tensor.FromSlice([]float32{10, 20, 30})
	y := x.Add(bias)
	fmt.Println(y)
	fmt.Println(y.Sum([]int{1}, false))
	// Output:
	// tensor([[11., 22., 33.],
	//         [14., 25., 36.]])
	// tensor([66., 75.])
}

// MatMul follows torch.matmul: batch axes broadcast and a transposed view
// needs no copy.
func ExampleTensor_MatMul() {
	a := tensor.Arange(0, 6, 1).To(tensor.Float32).Reshape(2, 3)
	fmt.Println(a.MatMul(a.T()))
	// Output:
	// tensor([[ 5., 14.],
	//         [14., 50.]])
}

// Random tensors come from an explicit, seeded generator.
func ExampleGenerator() {
	g1, g2 := tensor.NewGenerator(7), tensor.NewGenerator(7)
	a, b := g1.Randn([]int{3}), g2.Randn([]int{3})
	fmt.Println(a.Eq(b).Bools())
	p := g1.Permutation(5)
	fmt.Println(p.Numel(), p.Sum(nil, false).Item())
	// Output:
	// [true true true]
	// 5 10
}
