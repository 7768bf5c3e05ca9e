package data_test

import (
	"encoding/json"
	"image"
	"image/color"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

// img returns a [c, h, w] tensor holding vals.
func img(c, h, w int, vals ...float32) *tensor.Tensor { return tensor.FromSlice(vals, c, h, w) }

func TestNormalize(t *testing.T) {
	x := img(2, 1, 2, 0, 1, 2, 4)
	y, err := data.Normalize{Mean: []float32{0.5, 1}, Std: []float32{0.5, 2}}.Apply(x, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 1, 2}, y.Shape())
	assert.Equal(t, []float32{-1, 1, 0.5, 1.5}, y.Float32s())
	assert.Equal(t, []float32{0, 1, 2, 4}, x.Float32s(), "input unchanged")

	one, err := data.Normalize{Mean: []float32{1}, Std: []float32{4}}.Apply(x, nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{-0.25, 0, 0.25, 0.75}, one.Float32s(), "one value serves every channel")

	for name, n := range map[string]data.Normalize{
		"three means for two channels": {Mean: []float32{0, 0, 0}, Std: []float32{1}},
		"zero std":                     {Mean: []float32{0}, Std: []float32{0}},
		"no std":                       {Mean: []float32{0}},
	} {
		_, err := n.Apply(x, nil)
		assert.Error(t, err, name)
	}
	_, err = data.Normalize{Mean: []float32{0}, Std: []float32{1}}.Apply(tensor.Zeros([]int{4}), nil)
	assert.ErrorContains(t, err, "[C, H, W]")
}

func TestRandomHorizontalFlip(t *testing.T) {
	x := img(2, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	g := tensor.NewGenerator(1)
	y, err := data.RandomHorizontalFlip{P: 1}.Apply(x, g)
	require.NoError(t, err)
	assert.Equal(t, []float32{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10}, y.Float32s())
	y, err = data.RandomHorizontalFlip{P: 0}.Apply(x, g)
	require.NoError(t, err)
	assert.Equal(t, x.Float32s(), y.Float32s())

	flipped := 0
	for seed := range uint64(400) {
		y, err := data.RandomHorizontalFlip{P: 0.5}.Apply(x, tensor.NewGenerator(seed))
		require.NoError(t, err)
		if y.Float32s()[0] == 3 {
			flipped++
		}
	}
	assert.InDelta(t, 200, flipped, 40, "about half of 400 draws flip")

	_, err = data.RandomHorizontalFlip{P: 0.5}.Apply(x, nil)
	assert.ErrorContains(t, err, "generator")
	_, err = data.RandomHorizontalFlip{P: 2}.Apply(x, g)
	assert.Error(t, err)
}

// shifted returns the 3×3 window of the 3×3 image 1..9 moved by (dy, dx),
// zeros where it leaves the image.
func shifted(dy, dx int) []float32 {
	out := make([]float32, 9)
	for y := range 3 {
		for x := range 3 {
			sy, sx := y+dy, x+dx
			if sy >= 0 && sy < 3 && sx >= 0 && sx < 3 {
				out[y*3+x] = float32(sy*3 + sx + 1)
			}
		}
	}
	return out
}

func TestRandomCropWithPadding(t *testing.T) {
	x := img(1, 3, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	seen := map[[2]int]int{}
	for seed := range uint64(300) {
		y, err := data.RandomCrop{Height: 3, Width: 3, Padding: 1}.Apply(x, tensor.NewGenerator(seed))
		require.NoError(t, err)
		require.Equal(t, []int{1, 3, 3}, y.Shape())
		got := y.Float32s()
		found := false
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				if assert.ObjectsAreEqual(shifted(dy, dx), got) {
					seen[[2]int{dy, dx}]++
					found = true
				}
			}
		}
		require.True(t, found, "seed %d: %v is no shift of the padded image", seed, got)
	}
	assert.Len(t, seen, 9, "every one of the 9 positions is drawn")

	a, _ := data.RandomCrop{Height: 2, Width: 2, Padding: 1}.Apply(x, tensor.NewGenerator(7))
	b, _ := data.RandomCrop{Height: 2, Width: 2, Padding: 1}.Apply(x, tensor.NewGenerator(7))
	assert.Equal(t, a.Float32s(), b.Float32s(), "same seed, same crop")

	_, err := data.RandomCrop{Height: 6, Width: 3, Padding: 1}.Apply(x, tensor.NewGenerator(1))
	assert.ErrorContains(t, err, "larger than the padded image")
}

func TestCenterCrop(t *testing.T) {
	x := img(1, 4, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
	y, err := data.CenterCrop{Height: 2, Width: 2}.Apply(x, nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6, 9, 10}, y.Float32s())
	y, err = data.CenterCrop{Height: 2, Width: 6}.Apply(x, nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 4, 5, 6, 7, 0, 0, 8, 9, 10, 11, 0}, y.Float32s(), "zero padding where the crop is wider")
}

type resizeCase struct {
	Shape []int     `json:"shape"`
	Out   []int     `json:"out"`
	X     []float32 `json:"x"`
	Want  []float32 `json:"want"`
}

// resizeGolden reads the cases computed by PyTorch (testdata/transforms_golden.py).
func resizeGolden(t *testing.T) []resizeCase {
	raw, err := os.ReadFile("testdata/transforms_golden.json")
	require.NoError(t, err)
	var g struct {
		Resize []resizeCase `json:"resize"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	require.NotEmpty(t, g.Resize)
	return g.Resize
}

func TestResizeMatchesPyTorch(t *testing.T) {
	for _, c := range resizeGolden(t) {
		x := tensor.FromSlice(c.X, c.Shape...)
		y, err := data.Resize{Height: c.Out[0], Width: c.Out[1]}.Apply(x, nil)
		require.NoError(t, err)
		require.Equal(t, []int{c.Shape[0], c.Out[0], c.Out[1]}, y.Shape())
		assert.InDeltaSlice(t, c.Want, y.Float32s(), 1e-6, "%v -> %v", c.Shape, c.Out)
	}
}

func TestRandomResizedCrop(t *testing.T) {
	for _, c := range resizeGolden(t) {
		// With the whole area and the image's own ratio the window is the
		// whole image: the result is the plain resize.
		x := tensor.FromSlice(c.X, c.Shape...)
		ratio := float64(c.Shape[2]) / float64(c.Shape[1])
		y, err := data.RandomResizedCrop{Height: c.Out[0], Width: c.Out[1], Scale: [2]float64{1, 1}, Ratio: [2]float64{ratio, ratio}}.Apply(x, tensor.NewGenerator(3))
		require.NoError(t, err)
		assert.InDeltaSlice(t, c.Want, y.Float32s(), 1e-6)
	}
	x := tensor.NewGenerator(1).Rand([]int{3, 16, 12})
	rrc := data.RandomResizedCrop{Height: 8, Width: 8}
	a, err := rrc.Apply(x, tensor.NewGenerator(5))
	require.NoError(t, err)
	b, err := rrc.Apply(x, tensor.NewGenerator(5))
	require.NoError(t, err)
	c, err := rrc.Apply(x, tensor.NewGenerator(6))
	require.NoError(t, err)
	assert.Equal(t, []int{3, 8, 8}, a.Shape())
	assert.Equal(t, a.Float32s(), b.Float32s(), "same seed, same crop")
	assert.NotEqual(t, a.Float32s(), c.Float32s(), "another seed, another crop")
	_, err = data.RandomResizedCrop{Height: 8, Width: 8, Scale: [2]float64{0.5, 0.2}}.Apply(x, tensor.NewGenerator(1))
	assert.ErrorContains(t, err, "scale")
}

func TestImageToTensor(t *testing.T) {
	m := image.NewNRGBA(image.Rect(10, 20, 12, 21)) // 2 wide, 1 high, off the origin
	m.SetNRGBA(10, 20, color.NRGBA{R: 255, G: 0, B: 51, A: 255})
	m.SetNRGBA(11, 20, color.NRGBA{R: 102, G: 204, B: 0, A: 128}) // half transparent: colour kept, alpha dropped
	x, err := data.ImageToTensor(m, 3)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 1, 2}, x.Shape())
	assert.InDeltaSlice(t, []float32{1, 0.4, 0, 0.8, 0.2, 0}, x.Float32s(), 1e-6)

	g := image.NewGray(image.Rect(0, 0, 2, 2))
	copy(g.Pix, []uint8{0, 51, 255, 102})
	x, err = data.ImageToTensor(g, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 2}, x.Shape())
	assert.InDeltaSlice(t, []float32{0, 0.2, 1, 0.4}, x.Float32s(), 1e-6)

	rgba := image.NewRGBA(image.Rect(0, 0, 1, 1)) // the general path
	rgba.SetRGBA(0, 0, color.RGBA{R: 51, G: 255, B: 0, A: 255})
	x, err = data.ImageToTensor(rgba, 3)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{0.2, 1, 0}, x.Float32s(), 1e-6)
	x, err = data.ImageToTensor(rgba, 1)
	require.NoError(t, err)
	assert.InDelta(t, 0.2990*0.2+0.587, x.Item(), 2e-3, "grey level of (51, 255, 0)")

	x, err = data.ImageToTensor(g, 3)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{0, 0.2, 1, 0.4, 0, 0.2, 1, 0.4, 0, 0.2, 1, 0.4}, x.Float32s(), 1e-6, "grey to RGB repeats the level")

	_, err = data.ImageToTensor(g, 2)
	assert.Error(t, err)
	_, err = data.ImageToTensor(image.NewGray(image.Rect(0, 0, 0, 3)), 1)
	assert.ErrorContains(t, err, "empty")
}

func TestComposeIsDeterministic(t *testing.T) {
	pipeline := data.Compose{
		data.RandomCrop{Height: 6, Width: 6, Padding: 2},
		data.RandomHorizontalFlip{P: 0.5},
		data.ColorJitter{Brightness: 0.3, Contrast: 0.3, Saturation: 0.3},
		data.Normalize{Mean: []float32{0.5}, Std: []float32{0.25}},
	}
	x := tensor.NewGenerator(2).Rand([]int{3, 6, 6})
	a, err := pipeline.Apply(x, tensor.NewGenerator(11))
	require.NoError(t, err)
	b, err := pipeline.Apply(x, tensor.NewGenerator(11))
	require.NoError(t, err)
	assert.Equal(t, a.Float32s(), b.Float32s())
	_, err = data.Compose{data.Normalize{Mean: []float32{0}, Std: []float32{1}}, data.RandomCrop{Height: 9}}.Apply(x, tensor.NewGenerator(1))
	assert.ErrorContains(t, err, "RandomCrop")
}

func TestCenterCropRoundsHalfToEven(t *testing.T) {
	// A 1×1 crop of a 1×6 row: (6-1)/2 = 2.5 rounds to 2, as Python's round
	// in torchvision's center_crop.
	y, err := data.CenterCrop{Height: 1, Width: 1}.Apply(img(1, 1, 6, 0, 1, 2, 3, 4, 5), nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{2}, y.Float32s())
	// A crop 3 wider than the image pads 1 before and 2 after it.
	y, err = data.CenterCrop{Height: 1, Width: 5}.Apply(img(1, 1, 2, 7, 8), nil)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 7, 8, 0, 0}, y.Float32s())
}
