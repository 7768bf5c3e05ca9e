package data_test

import (
	"fmt"
	"strings"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

func ExampleLoader() {
	// Ten samples: features x[i] = [i, -i] and labels y[i] = i % 2.
	x := tensor.Arange(0, 10, 1, tensor.Float32).Unsqueeze(1)
	x = tensor.Concat([]*tensor.Tensor{x, x.Neg()}, 1)
	y := tensor.FromSlice([]int64{0, 1, 0, 1, 0, 1, 0, 1, 0, 1})
	ds := data.NewTensorDataset(x, y)

	loader := data.NewLoader(ds, data.LoaderOptions{BatchSize: 4})
	for batch := range loader.All() {
		xb, yb := batch[0], batch[1]
		fmt.Println(xb.Shape(), yb.Int64s())
	}
	// Output:
	// [4 2] [0 1 0 1]
	// [4 2] [0 1 0 1]
	// [2 2] [0 1]
}

func ExampleLoader_shuffle() {
	ds := data.NewTensorDataset(tensor.Arange(0, 6, 1))
	loader := data.NewLoader(ds, data.LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 1, DropLast: true})
	for epoch := range 2 {
		for batch := range loader.Batches(epoch) {
			fmt.Println("epoch", epoch, "batch", batch[0].Int64s())
		}
	}
	// The same seed and epoch always give the same order.
	fmt.Println(loader.Order(1))
	// Output:
	// epoch 0 batch [3 1 5 0]
	// epoch 1 batch [4 0 1 3]
	// [4 0 1 3 2 5]
}

func ExampleRandomSplit() {
	ds := data.NewTensorDataset(tensor.Arange(0, 100, 1))
	parts := data.RandomSplit(ds, []float64{0.8, 0.2}, tensor.NewGenerator(0))
	train, val := parts[0], parts[1]
	fmt.Println(train.Len(), val.Len())
	// Output:
	// 80 20
}

func ExampleReadCSV() {
	in := `sepal_length,sepal_width,species
5.1,3.5,Iris-setosa
7.0,3.2,Iris-versicolor
6.3,3.3,Iris-virginica
`
	tab, err := data.ReadCSV(strings.NewReader(in), data.CSVOptions{Header: true, Categorical: []int{-1}})
	if err != nil {
		panic(err)
	}
	x := tab.Tensor(tensor.Float32, 0, 1)
	y := tab.Tensor(tensor.Int64, -1).Reshape(-1)
	fmt.Println(tab.Header)
	fmt.Println(x)
	fmt.Println(y, tab.Categories[2])
	// Output:
	// [sepal_length sepal_width species]
	// tensor([[5.1000, 3.5000],
	//         [7.0000, 3.2000],
	//         [6.3000, 3.3000]])
	// tensor([0, 1, 2]) [Iris-setosa Iris-versicolor Iris-virginica]
}

func ExampleLoadMNIST() {
	ds, err := data.LoadMNIST("testdata/no-such-dir", true)
	if err != nil {
		fmt.Println("no MNIST here")
		return
	}
	fmt.Println(ds.Len())
	// Output:
	// no MNIST here
}

// Three ranks split ten samples: without DropLast the list is padded by
// repeating its start (index 0 and 1 go twice), so every rank gets four;
// with shuffling, every epoch has its own order, the same on all ranks.
func ExampleDistributedSampler() {
	for rank := range 3 {
		s := data.NewDistributedSampler(10, data.DistributedSamplerOptions{Replicas: 3, Rank: rank})
		fmt.Println("rank", rank, s.Indices(0))
	}
	for rank := range 3 {
		s := data.NewDistributedSampler(10, data.DistributedSamplerOptions{Replicas: 3, Rank: rank, DropLast: true})
		fmt.Println("drop last, rank", rank, s.Indices(0))
	}
	s := data.NewDistributedSampler(10, data.DistributedSamplerOptions{Replicas: 3, Rank: 0, Shuffle: true, Seed: 1})
	fmt.Println("epochs differ:", fmt.Sprint(s.Indices(0)) != fmt.Sprint(s.Indices(1)))
	// Output:
	// rank 0 [0 3 6 9]
	// rank 1 [1 4 7 0]
	// rank 2 [2 5 8 1]
	// drop last, rank 0 [0 3 6]
	// drop last, rank 1 [1 4 7]
	// drop last, rank 2 [2 5 8]
	// epochs differ: true
}
