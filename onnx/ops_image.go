package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // ImageDecoder decodes GIF
	_ "image/jpeg" // ImageDecoder decodes JPEG
	_ "image/png"  // ImageDecoder decodes PNG

	"github.com/emberml/ember/tensor"
)

// imageOps registers ImageDecoder.
func imageOps() opTable {
	return opTable{
		"ImageDecoder": {{since: 20, impl: opImageDecoder}},
	}
}

// opImageDecoder is ImageDecoder 20: the encoded image bytes (a 1-d
// uint8 tensor) decoded with Go's standard library decoders — PNG, JPEG
// and GIF; other formats (BMP, TIFF, WebP, JPEG 2000, PNM) are refused
// with an error naming the ones it has — into uint8 [H, W, 3] in
// pixel_format "RGB" (the default) or "BGR", or [H, W, 1] for
// "Grayscale" (ITU-R 601 luma 0.299R + 0.587G + 0.114B in PIL's 16-bit
// fixed point, rounded to nearest).
func opImageDecoder(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if x.DType() != tensor.Uint8 || x.Dim() != 1 {
		return nil, fmt.Errorf("onnx: %v: encoded_stream is %s %v, want a 1-d uint8 tensor", n, x.DType(), x.Shape())
	}
	format := n.attrString("pixel_format", "RGB")
	if format != "RGB" && format != "BGR" && format != "Grayscale" {
		return nil, fmt.Errorf("onnx: %v: pixel_format %q, want RGB, BGR or Grayscale", n, format)
	}
	data := x.Uint8s()
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		if errors.Is(err, image.ErrFormat) {
			return nil, fmt.Errorf("onnx: %v: the image is in a format this build cannot decode (it decodes PNG, JPEG and GIF)", n)
		}
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	channels := 3
	if format == "Grayscale" {
		channels = 1
	}
	if err := n.checkShape([]int{cfg.Height, cfg.Width, channels}, tensor.Uint8); err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: decoding %s: %w", n, kind, err)
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	out := make([]uint8, h*w*channels)
	for y := range h {
		for x := range w {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			p := out[(y*w+x)*channels:]
			switch format {
			case "RGB":
				p[0], p[1], p[2] = c.R, c.G, c.B
			case "BGR":
				p[0], p[1], p[2] = c.B, c.G, c.R
			default:
				if g, ok := img.At(b.Min.X+x, b.Min.Y+y).(color.Gray); ok {
					p[0] = g.Y
				} else {
					p[0] = uint8((19595*uint32(c.R) + 38470*uint32(c.G) + 7471*uint32(c.B) + 1<<15) >> 16)
				}
			}
		}
	}
	return one(tensor.FromSlice(out, h, w, channels))
}
