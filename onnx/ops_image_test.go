package onnx

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

func TestImageDecoderPNG(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.NRGBA{R: 10, G: 20, B: 30, A: 255})
	img.Set(1, 0, color.NRGBA{R: 200, G: 100, B: 0, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	stream := tensor.FromSlice(buf.Bytes(), buf.Len())
	decode := func(format string) (*tensor.Tensor, error) {
		n := testNode("ImageDecoder", 20, 1, nil, nil)
		n.maxElements = 1 << 20
		n.attrs["pixel_format"] = &attribute{name: "pixel_format", s: []byte(format)}
		out, err := opImageDecoder(n, []*tensor.Tensor{stream})
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	rgb, err := decode("RGB")
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, rgb.Shape())
	require.Equal(t, []uint8{10, 20, 30, 200, 100, 0}, rgb.Uint8s())
	bgr, err := decode("BGR")
	require.NoError(t, err)
	require.Equal(t, []uint8{30, 20, 10, 0, 100, 200}, bgr.Uint8s())
	gray, err := decode("Grayscale")
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 1}, gray.Shape())
	// 0.299·10 + 0.587·20 + 0.114·30 = 18.11; 0.299·200 + 0.587·100 = 118.5
	// (118.5 in 16-bit fixed point is 118.4996..., so 118).
	require.Equal(t, []uint8{18, 118}, gray.Uint8s())

	bmp := tensor.FromSlice([]uint8{'B', 'M', 0, 0, 0, 0}, 6)
	n := testNode("ImageDecoder", 20, 1, nil, nil)
	_, err = opImageDecoder(n, []*tensor.Tensor{bmp})
	require.ErrorContains(t, err, "decodes PNG, JPEG and GIF")
}
