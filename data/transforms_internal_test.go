package data

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestColorJitterFactors(t *testing.T) {
	// Pixel (r, g, b) values chosen so nothing clamps for factors in [0.8, 1.2].
	x := tensor.FromSlice([]float32{0.2, 0.4, 0.5, 0.3, 0.6, 0.1}, 3, 1, 2)
	pix := x.Float32s()
	const seed = 9
	draw := tensor.NewGenerator(seed) // the same draws ColorJitter makes
	fb := float32(uniform(draw, 0.8, 1.2))
	fc := float32(uniform(draw, 0.8, 1.2))
	fs := float32(uniform(draw, 0.8, 1.2))

	want := make([]float32, 6)
	for i, v := range pix {
		want[i] = v * fb
	}
	greyOf := func(p []float32) []float32 {
		return []float32{0.2989*p[0] + 0.587*p[2] + 0.114*p[4], 0.2989*p[1] + 0.587*p[3] + 0.114*p[5]}
	}
	g := greyOf(want)
	mean := (g[0] + g[1]) / 2
	for i, v := range want {
		want[i] = fc*v + (1-fc)*mean
	}
	g = greyOf(want)
	for i, v := range want {
		want[i] = fs*v + (1-fs)*g[i%2]
	}

	y, err := ColorJitter{Brightness: 0.2, Contrast: 0.2, Saturation: 0.2}.Apply(x, tensor.NewGenerator(seed))
	require.NoError(t, err)
	assert.InDeltaSlice(t, want, y.Float32s(), 1e-6)

	// Brightness alone on a grey image scales every value by one factor.
	grey := tensor.FromSlice([]float32{0.1, 0.5, 0.25}, 1, 1, 3)
	draw = tensor.NewGenerator(4)
	f := float32(uniform(draw, 0.5, 1.5))
	y, err = ColorJitter{Brightness: 0.5}.Apply(grey, tensor.NewGenerator(4))
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{min(0.1*f, 1), min(0.5*f, 1), min(0.25*f, 1)}, y.Float32s(), 1e-7)

	_, err = ColorJitter{Brightness: -1}.Apply(grey, tensor.NewGenerator(4))
	assert.Error(t, err)
}

func TestResizedCropWindowBounds(t *testing.T) {
	for seed := range uint64(200) {
		gen := tensor.NewGenerator(seed)
		top, left, h, w := resizedCropWindow(20, 30, [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3}, gen)
		require.True(t, h >= 1 && w >= 1 && top >= 0 && left >= 0 && top+h <= 20 && left+w <= 30,
			"seed %d: window %d,%d %dx%d outside a 20x30 image", seed, top, left, h, w)
		area := float64(h*w) / 600
		assert.True(t, area > 0.06 && area < 1.04, "area fraction %v", area)
	}
	// A ratio no window can have falls back to the centred crop of the
	// nearest ratio: for a 20x30 image and ratio 1/4 (w/h), the full
	// height and a width of 20/4 = 5, centred: left (30-5)/2 = 12.
	top, left, h, w := resizedCropWindow(20, 30, [2]float64{1, 1}, [2]float64{0.25, 0.25}, tensor.NewGenerator(1))
	assert.Equal(t, [4]int{0, 12, 20, 5}, [4]int{top, left, h, w})
}
