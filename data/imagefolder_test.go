package data_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// writePNG writes a w×h image of one colour.
func writePNG(t *testing.T, path string, w, h int, c color.Color) {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, m))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// writeJPEG writes a w×h grey JPEG of one level.
func writeJPEG(t *testing.T, path string, w, h int, level uint8) {
	t.Helper()
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = level
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, m, &jpeg.Options{Quality: 100}))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestImageFolder(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "dog", "b.png"), 3, 2, color.NRGBA{R: 255, G: 0, B: 51, A: 255})
	writePNG(t, filepath.Join(dir, "dog", "a.PNG"), 3, 2, color.NRGBA{R: 0, G: 255, B: 0, A: 255})
	writeJPEG(t, filepath.Join(dir, "cat", "deep", "x.jpg"), 3, 2, 128)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cat", "notes.txt"), []byte("not an image"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("a file at the top is no class"), 0o644))

	f, err := data.OpenImageFolder(dir, data.ImageFolderOptions{})
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, []string{"cat", "dog"}, f.Classes())
	require.Equal(t, 3, f.Len())
	assert.Equal(t, []string{"cat/deep/x.jpg", "dog/a.PNG", "dog/b.png"}, []string{f.Path(0), f.Path(1), f.Path(2)})
	assert.Equal(t, []int{0, 1, 1}, []int{f.Label(0), f.Label(1), f.Label(2)})

	s, err := f.Sample(2, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2, 3}, s[0].Shape())
	assert.Equal(t, []float32{1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, s[0].Float32s())
	assert.Equal(t, []int64{1}, s[1].Int64s())
	assert.Empty(t, s[1].Shape(), "labels are 0-d")

	grey, err := f.Sample(0, nil)
	require.NoError(t, err)
	for _, v := range grey[0].Float32s() {
		assert.InDelta(t, 128.0/255, v, 1.5/255, "grey JPEG decodes to its level in every channel")
	}

	// A loader stacks the samples; a transform runs on each.
	tf, err := data.OpenImageFolder(dir, data.ImageFolderOptions{Channels: 1, Transform: data.Resize{Height: 4, Width: 4}})
	require.NoError(t, err)
	defer tf.Close()
	l := data.NewLoader(tf, data.LoaderOptions{BatchSize: 3, Workers: 2})
	var shapes [][]int
	for b := range l.All() {
		shapes = append(shapes, b[0].Shape(), b[1].Shape())
		assert.Equal(t, []int64{0, 1, 1}, b[1].Int64s())
	}
	require.NoError(t, l.Err())
	assert.Equal(t, [][]int{{3, 1, 4, 4}, {3}}, shapes)
}

func TestImageFolderErrors(t *testing.T) {
	t.Run("missing folder", func(t *testing.T) {
		_, err := data.OpenImageFolder(filepath.Join(t.TempDir(), "nope"), data.ImageFolderOptions{})
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("no classes", func(t *testing.T) {
		_, err := data.OpenImageFolder(t.TempDir(), data.ImageFolderOptions{})
		assert.ErrorContains(t, err, "no class subfolders")
	})
	t.Run("empty class", func(t *testing.T) {
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "a", "1.png"), 1, 1, color.White)
		require.NoError(t, os.Mkdir(filepath.Join(dir, "b"), 0o755))
		_, err := data.OpenImageFolder(dir, data.ImageFolderOptions{})
		assert.ErrorContains(t, err, "class folder b holds no image")
	})
	t.Run("bad channels", func(t *testing.T) {
		_, err := data.OpenImageFolder(t.TempDir(), data.ImageFolderOptions{Channels: 2})
		assert.ErrorContains(t, err, "Channels 2")
	})
	t.Run("corrupt and truncated files", func(t *testing.T) {
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "a", "good.png"), 2, 2, color.White)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "junk.png"), []byte("definitely not a PNG"), 0o644))
		good, err := os.ReadFile(filepath.Join(dir, "a", "good.png"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "short.png"), good[:len(good)/2], 0o644))
		f, err := data.OpenImageFolder(dir, data.ImageFolderOptions{})
		require.NoError(t, err)
		defer f.Close()
		for i, name := range []string{"good.png", "junk.png", "short.png"} {
			require.Equal(t, "a/"+name, f.Path(i))
		}
		_, err = f.Sample(1, nil)
		assert.ErrorContains(t, err, "junk.png")
		_, err = f.Sample(2, nil)
		assert.ErrorContains(t, err, "short.png")
		assert.PanicsWithValue(t, func() string { _, err := f.Sample(1, nil); return err.Error() }(), func() { f.Get(1) })

		l := data.NewLoader(f, data.LoaderOptions{BatchSize: 1, Workers: 2})
		n := 0
		for range l.All() {
			n++
		}
		assert.Equal(t, 1, n)
		assert.ErrorContains(t, l.Err(), "junk.png")
	})
	t.Run("huge declared size", func(t *testing.T) {
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "a", "big.png"), 40, 30, color.White)
		f, err := data.OpenImageFolder(dir, data.ImageFolderOptions{MaxPixels: 1000})
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Sample(0, nil)
		assert.ErrorContains(t, err, "40x30 pixels; the limit is 1000")
	})
	t.Run("symlink out of the root", func(t *testing.T) {
		outside := t.TempDir()
		writePNG(t, filepath.Join(outside, "secret.png"), 1, 1, color.White)
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "a", "1.png"), 1, 1, color.White)
		require.NoError(t, os.Symlink(filepath.Join(outside, "secret.png"), filepath.Join(dir, "a", "2.png")))
		_, err := data.OpenImageFolder(dir, data.ImageFolderOptions{})
		assert.ErrorContains(t, err, "2.png")

		dir2 := t.TempDir()
		writePNG(t, filepath.Join(dir2, "a", "1.png"), 1, 1, color.White)
		require.NoError(t, os.Symlink(outside, filepath.Join(dir2, "b")))
		_, err = data.OpenImageFolder(dir2, data.ImageFolderOptions{})
		assert.ErrorContains(t, err, "class folder b")
	})
	t.Run("symlink inside the root", func(t *testing.T) {
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "a", "1.png"), 1, 1, color.White)
		require.NoError(t, os.Symlink("1.png", filepath.Join(dir, "a", "2.png")))
		f, err := data.OpenImageFolder(dir, data.ImageFolderOptions{})
		require.NoError(t, err)
		defer f.Close()
		assert.Equal(t, 2, f.Len())
		s, err := f.Sample(1, tensor.NewGenerator(1))
		require.NoError(t, err)
		assert.Equal(t, []float32{1, 1, 1}, s[0].Float32s())
	})
}
