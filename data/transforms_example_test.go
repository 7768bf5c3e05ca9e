package data_test

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

func ExampleTransformed() {
	// 8 grey 1×6×6 images with labels, augmented as for Fashion-MNIST.
	images := tensor.NewGenerator(1).Rand([]int{8, 1, 6, 6})
	labels := tensor.FromSlice([]int64{0, 1, 2, 3, 4, 5, 6, 7})
	augment := data.Compose{
		data.RandomCrop{Padding: 1}, // zero Height and Width keep 6×6
		data.RandomHorizontalFlip{P: 0.5},
		data.Normalize{Mean: []float32{0.5}, Std: []float32{0.25}},
	}
	train := data.NewTransformed(data.NewTensorDataset(images, labels), 0, augment)

	// Four workers load batches ahead; the batches are those of a loader
	// without workers, because each sample's augmentation depends only on
	// the seed, the epoch and the sample's index.
	loader := data.NewLoader(train, data.LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 7, Workers: 4})
	for batch := range loader.All() {
		fmt.Println(batch[0].Shape(), batch[1].Shape())
	}
	if err := loader.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [4 1 6 6] [4]
	// [4 1 6 6] [4]
}

func ExampleLoader_StateDict() {
	loader := data.NewLoader(toyDataset(10), data.LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 3})
	var checkpoint map[string]*tensor.Tensor
	for batch := range loader.All() {
		fmt.Println("first run:", batch[1].Int64s())
		checkpoint = loader.StateDict() // saved with the model after each step
		if checkpoint["position"].Int64s()[0] == 2 {
			break // interrupted
		}
	}
	resumed := data.NewLoader(toyDataset(10), data.LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 3})
	if err := resumed.LoadStateDict(checkpoint); err != nil {
		fmt.Println(err)
	}
	for batch := range resumed.All() {
		fmt.Println("resumed:  ", batch[1].Int64s())
	}
	// Output:
	// first run: [0 7]
	// first run: [1 5]
	// resumed:   [4 9]
	// resumed:   [6 3]
	// resumed:   [2 8]
}

func ExampleOpenImageFolder() {
	// A folder with one subfolder per class: root/circle/*.png, root/square/*.png.
	root, _ := os.MkdirTemp("", "shapes")
	defer os.RemoveAll(root)
	for _, name := range []string{"square/a.png", "circle/b.png", "circle/c.png"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755)
		f, _ := os.Create(filepath.Join(root, name))
		m := image.NewGray(image.Rect(0, 0, 40, 30))
		m.SetGray(1, 1, color.Gray{Y: 255})
		png.Encode(f, m)
		f.Close()
	}

	folder, err := data.OpenImageFolder(root, data.ImageFolderOptions{
		Channels:  1,
		Transform: data.Compose{data.RandomResizedCrop{Height: 16, Width: 16}, data.RandomHorizontalFlip{P: 0.5}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer folder.Close()
	fmt.Println(folder.Classes(), folder.Len())
	loader := data.NewLoader(folder, data.LoaderOptions{BatchSize: 3, Workers: 2})
	for batch := range loader.All() {
		fmt.Println(batch[0].Shape(), batch[1].Int64s())
	}
	if err := loader.Err(); err != nil { // an unreadable file, named
		fmt.Println(err)
	}
	// Output:
	// [circle square] 3
	// [3 1 16 16] [0 0 1]
}
