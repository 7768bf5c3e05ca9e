package data

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Transform changes one field of a sample, typically an image tensor of
// shape [C, H, W] (channels, height, width) as ImageToTensor makes it.
// Random transforms draw only from gen, so the same generator state gives
// the same result; a Loader hands every sample a generator derived from its
// seed, the epoch and the sample's index, so that augmentation does not
// depend on the number of workers or on the order samples are loaded in.
//
// Transforms return an error, not a panic, for inputs they cannot handle
// (a wrong rank or channel count, an image smaller than a crop), because
// such inputs usually come from files. The transforms of this package work
// in float32 and return new tensors; they never modify x.
type Transform interface {
	Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error)
}

// TransformFunc adapts a function to the Transform interface.
type TransformFunc func(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error)

// Apply calls f(x, gen).
func (f TransformFunc) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	return f(x, gen)
}

// Compose is a Transform that applies its transforms in order, all drawing
// from the same generator.
type Compose []Transform

// Apply runs each transform on the output of the previous one.
func (c Compose) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	for _, t := range c {
		var err error
		if x, err = t.Apply(x, gen); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// image3 is an image tensor's float32 values with their geometry.
type image3 struct {
	c, h, w int
	pix     []float32 // c*h*w values, channel-major
}

// imageOf checks that x is a [C, H, W] tensor and copies out its values.
func imageOf(op string, x *tensor.Tensor) (image3, error) {
	if x == nil {
		return image3{}, fmt.Errorf("data.%s: nil tensor", op)
	}
	s := x.Shape()
	if len(s) != 3 {
		return image3{}, fmt.Errorf("data.%s: got a tensor of shape %v, want an image of shape [C, H, W]", op, s)
	}
	if s[0] == 0 || s[1] == 0 || s[2] == 0 {
		return image3{}, fmt.Errorf("data.%s: empty image of shape %v", op, s)
	}
	return image3{c: s[0], h: s[1], w: s[2], pix: x.Float32s()}, nil
}

func (m image3) tensor() *tensor.Tensor { return tensor.FromSlice(m.pix, m.c, m.h, m.w) }

// crop returns the h×w window of m whose top-left corner is (top, left);
// pixels outside m read as zero.
func (m image3) crop(top, left, h, w int) image3 {
	out := image3{c: m.c, h: h, w: w, pix: make([]float32, m.c*h*w)}
	for ch := range m.c {
		for y := range h {
			sy := top + y
			if sy < 0 || sy >= m.h {
				continue
			}
			dst := out.pix[(ch*h+y)*w : (ch*h+y+1)*w]
			src := m.pix[(ch*m.h+sy)*m.w : (ch*m.h+sy+1)*m.w]
			for x := range w {
				if sx := left + x; sx >= 0 && sx < m.w {
					dst[x] = src[sx]
				}
			}
		}
	}
	return out
}

// resize scales m to h×w by bilinear interpolation with half-pixel centres
// and no antialiasing: PyTorch's interpolate(mode="bilinear",
// align_corners=False), torchvision's Resize with antialias=False.
func (m image3) resize(h, w int) image3 {
	out := image3{c: m.c, h: h, w: w, pix: make([]float32, m.c*h*w)}
	ys := bilinearTaps(m.h, h)
	xs := bilinearTaps(m.w, w)
	for ch := range m.c {
		plane := m.pix[ch*m.h*m.w : (ch+1)*m.h*m.w]
		for y, ty := range ys {
			r0 := plane[ty.i0*m.w : (ty.i0+1)*m.w]
			r1 := plane[ty.i1*m.w : (ty.i1+1)*m.w]
			dst := out.pix[(ch*h+y)*w : (ch*h+y+1)*w]
			for x, tx := range xs {
				top := tx.w0*r0[tx.i0] + tx.w1*r0[tx.i1]
				bottom := tx.w0*r1[tx.i0] + tx.w1*r1[tx.i1]
				dst[x] = ty.w0*top + ty.w1*bottom
			}
		}
	}
	return out
}

// tap is one output coordinate's two source coordinates and weights.
type tap struct {
	i0, i1 int
	w0, w1 float32
}

// bilinearTaps returns, for each of out coordinates, the neighbours and
// weights along an axis of in samples (the source index is
// (dst+0.5)*in/out-0.5, clamped at 0, as PyTorch computes it in float32).
func bilinearTaps(in, out int) []tap {
	scale := float32(in) / float32(out)
	taps := make([]tap, out)
	for d := range taps {
		src := max(scale*(float32(d)+0.5)-0.5, 0)
		i0 := int(src)
		i1 := min(i0+1, in-1)
		frac := src - float32(i0)
		taps[d] = tap{i0: i0, i1: i1, w0: 1 - frac, w1: frac}
	}
	return taps
}

// errNoGenerator is returned by random transforms applied without a
// generator.
var errNoGenerator = errors.New("needs a generator (a Loader supplies one per sample; else pass tensor.NewGenerator(seed))")

// uniform returns a value uniform in [lo, hi) drawn from gen.
func uniform(gen *tensor.Generator, lo, hi float64) float64 {
	return lo + (hi-lo)*float64(gen.Uint64()>>11)/(1<<53)
}

// intn returns an integer uniform in [0, n) drawn from gen; n > 0.
func intn(gen *tensor.Generator, n int) int {
	return min(int(float64(gen.Uint64()>>11)/(1<<53)*float64(n)), n-1)
}

// Normalize subtracts a mean and divides by a standard deviation per
// channel: out[c] = (x[c] - Mean[c]) / Std[c]. Mean and Std hold one value
// per channel, or one value for every channel.
type Normalize struct {
	Mean, Std []float32
}

// Apply normalizes x, a [C, H, W] image.
func (n Normalize) Apply(x *tensor.Tensor, _ *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("Normalize", x)
	if err != nil {
		return nil, err
	}
	perChannel := func(name string, v []float32) error {
		if len(v) != 1 && len(v) != m.c {
			return fmt.Errorf("data.Normalize: %d %s values for an image of %d channels; give 1 or %d", len(v), name, m.c, m.c)
		}
		return nil
	}
	if err := perChannel("mean", n.Mean); err != nil {
		return nil, err
	}
	if err := perChannel("std", n.Std); err != nil {
		return nil, err
	}
	plane := m.h * m.w
	for ch := range m.c {
		mean, std := n.Mean[min(ch, len(n.Mean)-1)], n.Std[min(ch, len(n.Std)-1)]
		if !(std > 0) || math.IsInf(float64(std), 0) {
			return nil, fmt.Errorf("data.Normalize: std %v for channel %d; each std must be positive and finite", std, ch)
		}
		for i, v := range m.pix[ch*plane : (ch+1)*plane] {
			m.pix[ch*plane+i] = (v - mean) / std
		}
	}
	return m.tensor(), nil
}

// RandomCrop pads an image with Padding zeros on every side and then cuts
// a Height×Width window at a random position, as torchvision's
// RandomCrop(size, padding) does. Zero Height or Width keep the input's.
type RandomCrop struct {
	Height, Width int
	Padding       int
}

// Apply crops x, a [C, H, W] image.
func (r RandomCrop) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("RandomCrop", x)
	if err != nil {
		return nil, err
	}
	if gen == nil {
		return nil, fmt.Errorf("data.RandomCrop: %w", errNoGenerator)
	}
	if r.Padding < 0 || r.Height < 0 || r.Width < 0 {
		return nil, fmt.Errorf("data.RandomCrop: negative size %dx%d or padding %d", r.Height, r.Width, r.Padding)
	}
	h, w := cmpOr(r.Height, m.h), cmpOr(r.Width, m.w)
	ph, pw := m.h+2*r.Padding, m.w+2*r.Padding
	if h > ph || w > pw {
		return nil, fmt.Errorf("data.RandomCrop: crop %dx%d is larger than the padded image %dx%d", h, w, ph, pw)
	}
	top := intn(gen, ph-h+1) - r.Padding
	left := intn(gen, pw-w+1) - r.Padding
	return m.crop(top, left, h, w).tensor(), nil
}

// cmpOr returns v, or def when v is zero.
func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// RandomHorizontalFlip mirrors an image left to right with probability P.
type RandomHorizontalFlip struct {
	P float64
}

// Apply flips x, a [C, H, W] image, or returns an unchanged copy. It draws
// one value from gen whatever P is.
func (f RandomHorizontalFlip) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("RandomHorizontalFlip", x)
	if err != nil {
		return nil, err
	}
	if gen == nil {
		return nil, fmt.Errorf("data.RandomHorizontalFlip: %w", errNoGenerator)
	}
	if !(f.P >= 0 && f.P <= 1) {
		return nil, fmt.Errorf("data.RandomHorizontalFlip: probability %v is outside [0, 1]", f.P)
	}
	if uniform(gen, 0, 1) < f.P {
		for row := 0; row < m.c*m.h; row++ {
			r := m.pix[row*m.w : (row+1)*m.w]
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
		}
	}
	return m.tensor(), nil
}

// RandomResizedCrop cuts a window of random area and aspect ratio and
// resizes it to Height×Width, as torchvision's RandomResizedCrop does: the
// window's area is a fraction of the image's drawn uniformly from Scale,
// its aspect ratio (width/height) log-uniformly from Ratio; after ten
// draws that do not fit, it falls back to a centred crop of the nearest
// allowed ratio. The resize is bilinear without antialiasing (torchvision's
// antialias=False; PyTorch's interpolate with align_corners=False).
//
// The zero Scale means [0.08, 1] and the zero Ratio [3/4, 4/3], the
// torchvision defaults.
type RandomResizedCrop struct {
	Height, Width int
	Scale         [2]float64
	Ratio         [2]float64
}

// Apply crops and resizes x, a [C, H, W] image.
func (r RandomResizedCrop) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("RandomResizedCrop", x)
	if err != nil {
		return nil, err
	}
	if gen == nil {
		return nil, fmt.Errorf("data.RandomResizedCrop: %w", errNoGenerator)
	}
	if r.Height <= 0 || r.Width <= 0 {
		return nil, fmt.Errorf("data.RandomResizedCrop: output size %dx%d; both must be positive", r.Height, r.Width)
	}
	scale, ratio := r.Scale, r.Ratio
	if scale == [2]float64{} {
		scale = [2]float64{0.08, 1}
	}
	if ratio == [2]float64{} {
		ratio = [2]float64{3.0 / 4, 4.0 / 3}
	}
	if !(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1) {
		return nil, fmt.Errorf("data.RandomResizedCrop: scale %v; need 0 < min <= max <= 1", scale)
	}
	if !(ratio[0] > 0 && ratio[0] <= ratio[1] && !math.IsInf(ratio[1], 0)) {
		return nil, fmt.Errorf("data.RandomResizedCrop: ratio %v; need 0 < min <= max, finite", ratio)
	}
	top, left, h, w := resizedCropWindow(m.h, m.w, scale, ratio, gen)
	return m.crop(top, left, h, w).resize(r.Height, r.Width).tensor(), nil
}

// resizedCropWindow draws RandomResizedCrop's window in an h×w image:
// torchvision's get_params (rounding half to even, as Python's round).
func resizedCropWindow(h, w int, scale, ratio [2]float64, gen *tensor.Generator) (top, left, ch, cw int) {
	area := float64(h * w)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * uniform(gen, scale[0], scale[1])
		aspect := math.Exp(uniform(gen, logLo, logHi))
		cw = int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch = int(math.RoundToEven(math.Sqrt(target / aspect)))
		if cw > 0 && cw <= w && ch > 0 && ch <= h {
			top = intn(gen, h-ch+1)
			left = intn(gen, w-cw+1)
			return top, left, ch, cw
		}
	}
	// Fallback: the whole image, trimmed to the nearest allowed ratio.
	inRatio := float64(w) / float64(h)
	switch {
	case inRatio < ratio[0]:
		cw = w
		ch = int(math.RoundToEven(float64(cw) / ratio[0]))
	case inRatio > ratio[1]:
		ch = h
		cw = int(math.RoundToEven(float64(ch) * ratio[1]))
	default:
		cw, ch = w, h
	}
	ch, cw = max(min(ch, h), 1), max(min(cw, w), 1)
	return (h - ch) / 2, (w - cw) / 2, ch, cw
}

// Resize scales an image to Height×Width by bilinear interpolation without
// antialiasing (PyTorch's interpolate(mode="bilinear",
// align_corners=False)).
type Resize struct {
	Height, Width int
}

// Apply resizes x, a [C, H, W] image.
func (r Resize) Apply(x *tensor.Tensor, _ *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("Resize", x)
	if err != nil {
		return nil, err
	}
	if r.Height <= 0 || r.Width <= 0 {
		return nil, fmt.Errorf("data.Resize: output size %dx%d; both must be positive", r.Height, r.Width)
	}
	return m.resize(r.Height, r.Width).tensor(), nil
}

// CenterCrop cuts the centred Height×Width window of an image (padding
// with zeros where the image is smaller), as torchvision's CenterCrop: the
// top-left corner is half the difference in size, rounded half to even.
type CenterCrop struct {
	Height, Width int
}

// Apply crops x, a [C, H, W] image.
func (c CenterCrop) Apply(x *tensor.Tensor, _ *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("CenterCrop", x)
	if err != nil {
		return nil, err
	}
	if c.Height <= 0 || c.Width <= 0 {
		return nil, fmt.Errorf("data.CenterCrop: size %dx%d; both must be positive", c.Height, c.Width)
	}
	return m.crop(centerOffset(m.h, c.Height), centerOffset(m.w, c.Width), c.Height, c.Width).tensor(), nil
}

// centerOffset is where a centred crop of crop pixels starts along an axis
// of size pixels, as torchvision computes it: padding (crop-size)/2 pixels
// (rounded down) before the image when the crop is larger, else half the
// difference rounded half to even.
func centerOffset(size, crop int) int {
	if crop > size {
		return -((crop - size) / 2)
	}
	return int(math.RoundToEven(float64(size-crop) / 2))
}

// ColorJitter changes an image's brightness, contrast and saturation by
// random factors, in that order, for images with values in [0, 1]: each
// factor is drawn uniformly from [max(0, 1-v), 1+v] for its setting v, and
// a zero setting leaves that property alone (and draws nothing).
// Brightness scales the values; contrast blends them with the mean of the
// image's grey levels; saturation blends each pixel with its grey level
// (0.2989 R + 0.587 G + 0.114 B, as torchvision) and applies only to
// 3-channel images. Results are clamped to [0, 1] after each step.
// Unlike torchvision's ColorJitter the order is fixed, and hue is not
// offered.
type ColorJitter struct {
	Brightness, Contrast, Saturation float64
}

// Apply jitters x, a [C, H, W] image of 1 or 3 channels.
func (j ColorJitter) Apply(x *tensor.Tensor, gen *tensor.Generator) (*tensor.Tensor, error) {
	m, err := imageOf("ColorJitter", x)
	if err != nil {
		return nil, err
	}
	if m.c != 1 && m.c != 3 {
		return nil, fmt.Errorf("data.ColorJitter: image has %d channels; want 1 (grey) or 3 (RGB)", m.c)
	}
	for _, v := range []float64{j.Brightness, j.Contrast, j.Saturation} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("data.ColorJitter: settings %+v; each must be finite and non-negative", j)
		}
	}
	if gen == nil && (j.Brightness > 0 || j.Contrast > 0 || j.Saturation > 0) {
		return nil, fmt.Errorf("data.ColorJitter: %w", errNoGenerator)
	}
	factor := func(v float64) float32 { return float32(uniform(gen, max(0, 1-v), 1+v)) }
	if j.Brightness > 0 {
		f := factor(j.Brightness)
		for i, v := range m.pix {
			m.pix[i] = clamp01(v * f)
		}
	}
	if j.Contrast > 0 {
		f := factor(j.Contrast)
		grey := m.grey()
		var sum float64
		for _, v := range grey {
			sum += float64(v)
		}
		mean := float32(sum / float64(len(grey)))
		for i, v := range m.pix {
			m.pix[i] = clamp01(f*v + (1-f)*mean)
		}
	}
	if j.Saturation > 0 && m.c == 3 {
		f := factor(j.Saturation)
		grey := m.grey()
		plane := m.h * m.w
		for i, v := range m.pix {
			m.pix[i] = clamp01(f*v + (1-f)*grey[i%plane])
		}
	}
	return m.tensor(), nil
}

// grey returns the grey level of each pixel: the image itself for one
// channel, else torchvision's rgb_to_grayscale weights.
func (m image3) grey() []float32 {
	plane := m.h * m.w
	if m.c == 1 {
		return m.pix[:plane]
	}
	g := make([]float32, plane)
	for i := range g {
		g[i] = 0.2989*m.pix[i] + 0.587*m.pix[plane+i] + 0.114*m.pix[2*plane+i]
	}
	return g
}

func clamp01(v float32) float32 { return min(max(v, 0), 1) }

// Transformed is a dataset whose samples are another dataset's with a
// transform applied to one field, such as augmentation of the images of
// (image, label) samples. It is a SampleSource: a Loader hands each sample
// its own generator, so the augmentation of sample i in epoch e depends on
// the loader's seed, e and i only.
type Transformed struct {
	parent    Dataset
	field     int
	transform Transform
}

// NewTransformed returns ds with t applied to field field of every sample.
// It panics if field is negative or t is nil.
func NewTransformed(ds Dataset, field int, t Transform) *Transformed {
	if field < 0 || t == nil {
		panic(fmt.Sprintf("data.NewTransformed: field %d, transform %v: need a field >= 0 and a transform", field, t))
	}
	return &Transformed{parent: ds, field: field, transform: t}
}

// Len returns the parent's number of samples.
func (d *Transformed) Len() int { return d.parent.Len() }

// Parent returns the dataset being transformed.
func (d *Transformed) Parent() Dataset { return d.parent }

// Sample returns the parent's sample i (through its own Sample, with the
// same generator, when the parent is a SampleSource) with the transform
// applied to the field.
func (d *Transformed) Sample(i int, gen *tensor.Generator) ([]*tensor.Tensor, error) {
	var s []*tensor.Tensor
	if src, ok := d.parent.(SampleSource); ok {
		var err error
		if s, err = src.Sample(i, gen); err != nil {
			return nil, err
		}
	} else {
		s = d.parent.Get(i)
	}
	if d.field >= len(s) {
		return nil, fmt.Errorf("data.Transformed: sample %d has %d fields, no field %d to transform", i, len(s), d.field)
	}
	x, err := d.transform.Apply(s[d.field], gen)
	if err != nil {
		return nil, fmt.Errorf("data.Transformed: sample %d: %w", i, err)
	}
	out := slices.Clone(s)
	out[d.field] = x
	return out, nil
}

// Get returns sample i transformed with a generator seeded by i alone
// (a Loader uses Sample instead). It panics if the sample cannot be
// loaded or transformed.
func (d *Transformed) Get(i int) []*tensor.Tensor {
	s, err := d.Sample(i, tensor.NewGenerator(uint64(i)))
	if err != nil {
		panic(err.Error())
	}
	return s
}
