package tensorboard

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"

	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb"
)

// AddImage logs img under tag at step, encoded as PNG.
func (w *Writer) AddImage(tag string, img image.Image, step int64) {
	w.addSummary(step, imageValue(tag, img))
}

// imageValue encodes img as a summary value.
func imageValue(tag string, img image.Image) *tbpb.Summary_Value {
	var buf bytes.Buffer
	// png.Encode fails only on a writer error or an empty image; a
	// bytes.Buffer never fails.
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Sprintf("tensorboard: encoding an image of bounds %v: %v", img.Bounds(), err))
	}
	channels := int32(4)
	switch img.ColorModel() {
	case color.GrayModel, color.Gray16Model:
		channels = 1
	}
	b := img.Bounds()
	return &tbpb.Summary_Value{Tag: tag, Value: &tbpb.Summary_Value_Image{Image: &tbpb.Summary_Image{
		Height: int32(b.Dy()), Width: int32(b.Dx()), Colorspace: channels, EncodedImageString: buf.Bytes(),
	}}}
}

// AddImageTensor logs an image held by a tensor of shape [C, H, W] (C is 1
// for grey, 3 for RGB or 4 for RGBA) or [H, W] under tag at step. Uint8
// tensors hold 0..255; other dtypes hold values in [0, 1], which are
// scaled to 0..255 (values outside are clamped, NaN is black).
func (w *Writer) AddImageTensor(tag string, img *tensor.Tensor, step int64) {
	w.AddImage(tag, TensorImage(img), step)
}

// AddImageGrid logs a batch of images of shape [N, C, H, W] as one grid
// image with nrow images a row (0 means 8), 2 pixels of black between
// them, as torchvision's make_grid lays them out.
func (w *Writer) AddImageGrid(tag string, batch *tensor.Tensor, nrow int, step int64) {
	w.AddImage(tag, ImageGrid(batch, nrow), step)
}

// TensorImage converts a tensor of shape [C, H, W] or [H, W] to an image,
// as AddImageTensor reads it.
func TensorImage(t *tensor.Tensor) image.Image {
	shape := t.Shape()
	switch len(shape) {
	case 2:
		return planesToImage(pixelBytes(t), 1, shape[0], shape[1], "tensorboard.TensorImage", shape)
	case 3:
		return planesToImage(pixelBytes(t), shape[0], shape[1], shape[2], "tensorboard.TensorImage", shape)
	}
	panic(fmt.Sprintf("tensorboard.TensorImage: tensor of shape %v; want [C, H, W] or [H, W]", shape))
}

// ImageGrid lays a batch of shape [N, C, H, W] out as one image with nrow
// images a row (0 means 8) and 2 black pixels between and around them.
func ImageGrid(batch *tensor.Tensor, nrow int) image.Image {
	if nrow <= 0 {
		nrow = 8
	}
	return gridImage(batch, nrow, 2, "tensorboard.ImageGrid")
}

// gridImage lays a batch out nrow images a row with pad pixels between
// and around them.
func gridImage(batch *tensor.Tensor, nrow, pad int, op string) image.Image {
	shape := batch.Shape()
	if len(shape) != 4 || shape[0] == 0 {
		panic(fmt.Sprintf("%s: batch of shape %v; want [N, C, H, W] with N > 0", op, shape))
	}
	n, c, h, wd := shape[0], shape[1], shape[2], shape[3]
	cols := min(nrow, n)
	rows := (n + cols - 1) / cols
	gh, gw := rows*(h+pad)+pad, cols*(wd+pad)+pad
	src := pixelBytes(batch)
	grid := make([]byte, c*gh*gw)
	for i := range n {
		y0, x0 := pad+(i/cols)*(h+pad), pad+(i%cols)*(wd+pad)
		for ch := range c {
			for y := range h {
				from := ((i*c+ch)*h + y) * wd
				to := (ch*gh+y0+y)*gw + x0
				copy(grid[to:to+wd], src[from:from+wd])
			}
		}
	}
	return planesToImage(grid, c, gh, gw, op, shape)
}

// pixelBytes returns t's elements as bytes 0..255.
func pixelBytes(t *tensor.Tensor) []byte {
	if t.DType() == tensor.Uint8 {
		return t.Uint8s()
	}
	vals := t.Float32s()
	out := make([]byte, len(vals))
	for i, v := range vals {
		if math.IsNaN(float64(v)) {
			continue
		}
		out[i] = uint8(math.Round(float64(max(0, min(1, v)) * 255)))
	}
	return out
}

// planesToImage builds an image from c planes of h×w bytes.
func planesToImage(p []byte, c, h, w int, op string, shape []int) image.Image {
	plane := h * w
	switch c {
	case 1:
		img := image.NewGray(image.Rect(0, 0, w, h))
		copy(img.Pix, p)
		return img
	case 3, 4:
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := range plane {
			img.Pix[4*i] = p[i]
			img.Pix[4*i+1] = p[plane+i]
			img.Pix[4*i+2] = p[2*plane+i]
			img.Pix[4*i+3] = 255
			if c == 4 {
				img.Pix[4*i+3] = p[3*plane+i]
			}
		}
		return img
	}
	panic(fmt.Sprintf("%s: shape %v has %d channels; want 1, 3 or 4", op, shape, c))
}
