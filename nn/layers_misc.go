package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Embedding, feature dropout, Bilinear, reshaping, padding, pixel
// shuffling and upsampling layers.

// EmbeddingOptions configures NewEmbedding. The zero value is PyTorch's
// default: no padding index, no max norm.
type EmbeddingOptions struct {
	// HasPaddingIdx enables PaddingIdx: that row starts at zero and never
	// receives a gradient (a negative index counts from the end).
	HasPaddingIdx bool
	PaddingIdx    int
	// MaxNorm, when positive, renormalizes in place every looked-up row
	// whose NormType-norm exceeds it to norm MaxNorm before the lookup.
	MaxNorm float64
	// NormType is the p of the max-norm check; 0 means 2.
	NormType float64
}

// Embedding is a lookup table of NumEmbeddings vectors of EmbeddingDim
// values, as torch.nn.Embedding. Weight has shape [num, dim].
type Embedding struct {
	Base
	NumEmbeddings, EmbeddingDim int
	// PaddingIdx is the padding row, or -1 for none.
	PaddingIdx int
	MaxNorm    float64
	NormType   float64
	Weight     *autograd.Var
}

// NewEmbedding returns an embedding table with weights drawn from N(0, 1)
// using g (the padding row, if any, zeroed), as PyTorch initializes it.
func NewEmbedding(g *tensor.Generator, num, dim int, opt EmbeddingOptions, dt ...tensor.DType) *Embedding {
	if num <= 0 || dim <= 0 {
		panic(fmt.Sprintf("nn.NewEmbedding: num_embeddings=%d and embedding_dim=%d must be positive", num, dim))
	}
	checkGen("NewEmbedding", g)
	d := pickDType(dt)
	if !d.IsFloat() {
		panic(fmt.Sprintf("nn.NewEmbedding: parameters need a floating-point dtype, got %s", d))
	}
	e := &Embedding{NumEmbeddings: num, EmbeddingDim: dim, PaddingIdx: -1, MaxNorm: opt.MaxNorm, NormType: orDefault(opt.NormType, 2)}
	if opt.HasPaddingIdx {
		p := opt.PaddingIdx
		if p < 0 {
			p += num
		}
		if p < 0 || p >= num {
			panic(fmt.Sprintf("nn.NewEmbedding: padding_idx %d out of range for %d embeddings", opt.PaddingIdx, num))
		}
		e.PaddingIdx = p
	}
	w := Normal(g, tensor.Zeros([]int{num, dim}, d), 0, 1)
	if e.PaddingIdx >= 0 {
		w.Narrow(0, e.PaddingIdx, 1).Fill(0)
	}
	e.Weight = e.RegisterParameter("weight", autograd.Param(w))
	return e
}

// Forward looks up the integer ids (a Var wrapping an integer tensor of any
// shape) and returns ids.Shape() + [dim]. With MaxNorm the looked-up rows
// are first renormalized in place (without gradient), as PyTorch does.
// When ids is marked autograd.NoGrad nothing is recorded and the result is
// marked too; so is it when ids is observed (autograd.Observe, a
// profiler's Watch) or checked for anomalies (autograd.DetectAnomaly).
func (e *Embedding) Forward(ids *autograd.Var) *autograd.Var {
	if ids.IsNoGrad() {
		return e.lookup(ids, autograd.NoGrad(e.Weight))
	}
	return e.lookup(ids, e.Weight)
}

// Lookup is Forward on a plain integer tensor of ids.
func (e *Embedding) Lookup(ids *tensor.Tensor) *autograd.Var {
	return e.lookup(autograd.New(ids), e.Weight)
}

// lookup gathers the rows of w (Weight, or a no-grad view of it) named by
// idVar's ids; the lookup carries idVar's observation marks
// (autograd.EmbeddingOf).
func (e *Embedding) lookup(idVar, w *autograd.Var) *autograd.Var {
	ids := idVar.Value()
	if ids.DType().IsFloat() {
		panic(fmt.Sprintf("nn.Embedding.Forward: ids must be integers, got %s", ids.DType()))
	}
	if e.MaxNorm > 0 {
		e.renorm(ids)
	}
	if e.PaddingIdx >= 0 && autograd.NeedsGrad(w) {
		// The padding row takes part with its value but no gradient.
		mask := make([]float64, e.NumEmbeddings)
		for i := range mask {
			mask[i] = 1
		}
		mask[e.PaddingIdx] = 0
		m := tensor.FromSlice(mask, e.NumEmbeddings, 1).To(w.DType()).ToDeviceOf(w.Value())
		w = w.Mul(autograd.New(m)).Add(autograd.New(w.Value().Mul(m.Neg().AddScalar(1))))
	}
	return autograd.EmbeddingOf(idVar, w)
}

// renorm scales the rows named in ids whose norm exceeds MaxNorm to norm
// MaxNorm (PyTorch's embedding_renorm_: scale max_norm/(norm+1e-7)).
func (e *Embedding) renorm(ids *tensor.Tensor) {
	w := e.Weight.Value()
	seen := map[int64]bool{}
	for _, id := range ids.To(tensor.Int64).Int64s() {
		if seen[id] || id < 0 || id >= int64(e.NumEmbeddings) {
			continue
		}
		seen[id] = true
		row := w.Narrow(0, int(id), 1)
		norm := row.Norm(e.NormType, nil, false).Item()
		if norm > e.MaxNorm {
			row.CopyFrom(row.MulScalar(e.MaxNorm / (norm + 1e-7)))
		}
	}
}

// String describes the layer as PyTorch prints it.
func (e *Embedding) String() string {
	s := fmt.Sprintf("Embedding(%d, %d", e.NumEmbeddings, e.EmbeddingDim)
	if e.PaddingIdx >= 0 {
		s += fmt.Sprintf(", padding_idx=%d", e.PaddingIdx)
	}
	if e.MaxNorm > 0 {
		s += ", max_norm=" + pyFloat(e.MaxNorm)
	}
	if e.NormType != 2 {
		s += ", norm_type=" + pyFloat(e.NormType)
	}
	return s + ")"
}

// Dropout2d zeroes whole channels of [N, C, H, W] (or [C, H, W]) inputs with
// probability P during training and scales the rest by 1/(1-P), as
// torch.nn.Dropout2d; in evaluation mode it returns its input.
type Dropout2d struct {
	Base
	P   float64
	gen *tensor.Generator
}

func checkP(op string, p float64) {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("nn.%s: probability %v is not in [0, 1]", op, p))
	}
}

// NewDropout2d returns channel dropout with probability p drawing its masks
// from g.
func NewDropout2d(p float64, g *tensor.Generator) *Dropout2d {
	checkP("NewDropout2d", p)
	checkGen("NewDropout2d", g)
	return &Dropout2d{P: p, gen: g}
}

// Forward applies channel dropout in training mode.
func (d *Dropout2d) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Dropout2d(x, d.P, d.IsTraining(), d.gen)
}

// Generator returns the generator Dropout2d draws its channel masks from.
func (d *Dropout2d) Generator() *tensor.Generator { return d.gen }

// SetGenerator makes Dropout2d draw its channel masks from g from now
// on. (To resume a run, restoring the old generator's state with
// UnmarshalBinary works as well.) It panics if g is nil.
func (d *Dropout2d) SetGenerator(g *tensor.Generator) {
	checkGen("Dropout2d.SetGenerator", g)
	d.gen = g
}

// String describes the module as PyTorch prints it.
func (d *Dropout2d) String() string { return fmt.Sprintf("Dropout2d(p=%g, inplace=False)", d.P) }

// AlphaDropout is dropout that keeps the zero mean and unit variance of
// SELU activations, as torch.nn.AlphaDropout; see autograd.AlphaDropout.
type AlphaDropout struct {
	Base
	P   float64
	gen *tensor.Generator
}

// NewAlphaDropout returns alpha dropout with probability p drawing its
// masks from g.
func NewAlphaDropout(p float64, g *tensor.Generator) *AlphaDropout {
	checkP("NewAlphaDropout", p)
	checkGen("NewAlphaDropout", g)
	return &AlphaDropout{P: p, gen: g}
}

// Forward applies alpha dropout in training mode.
func (d *AlphaDropout) Forward(x *autograd.Var) *autograd.Var {
	return autograd.AlphaDropout(x, d.P, d.IsTraining(), d.gen)
}

// Generator returns the generator AlphaDropout draws its dropout masks from.
func (d *AlphaDropout) Generator() *tensor.Generator { return d.gen }

// SetGenerator makes AlphaDropout draw its dropout masks from g from now
// on. (To resume a run, restoring the old generator's state with
// UnmarshalBinary works as well.) It panics if g is nil.
func (d *AlphaDropout) SetGenerator(g *tensor.Generator) {
	checkGen("AlphaDropout.SetGenerator", g)
	d.gen = g
}

// String describes the module as PyTorch prints it.
func (d *AlphaDropout) String() string { return fmt.Sprintf("AlphaDropout(p=%g, inplace=False)", d.P) }

// Bilinear maps two inputs to y = x1ᵀ·W_k·x2 + b_k, as torch.nn.Bilinear.
// Weight has shape [out, in1, in2] and Bias [out] (nil without bias). It
// takes two inputs: call Forward2.
type Bilinear struct {
	Base
	In1Features, In2Features, OutFeatures int
	Weight, Bias                          *autograd.Var
}

// NewBilinear returns a bilinear layer initialized as PyTorch does: weight
// and bias from U(-1/sqrt(in1), 1/sqrt(in1)) using g.
func NewBilinear(g *tensor.Generator, in1, in2, out int, bias bool, dt ...tensor.DType) *Bilinear {
	if in1 <= 0 || in2 <= 0 || out <= 0 {
		panic(fmt.Sprintf("nn.NewBilinear: feature counts must be positive, got in1=%d in2=%d out=%d", in1, in2, out))
	}
	d := pickDType(dt)
	b := &Bilinear{In1Features: in1, In2Features: in2, OutFeatures: out}
	b.Weight = b.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewBilinear", []int{out, in1, in2}, in1, d)))
	if bias {
		b.Bias = b.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewBilinear", []int{out}, in1, d)))
	}
	return b
}

// Forward panics: Bilinear takes two inputs (see Forward2).
func (b *Bilinear) Forward(*autograd.Var) *autograd.Var {
	panic("nn.Bilinear.Forward: Bilinear takes two inputs; call Forward2(x1, x2)")
}

// Forward2 maps x1 [..., in1] and x2 [..., in2] to [..., out].
func (b *Bilinear) Forward2(x1, x2 *autograd.Var) *autograd.Var {
	return autograd.Bilinear(x1, x2, b.Weight, b.Bias)
}

// String describes the layer as PyTorch prints it.
func (b *Bilinear) String() string {
	return fmt.Sprintf("Bilinear(in1_features=%d, in2_features=%d, out_features=%d, bias=%s)",
		b.In1Features, b.In2Features, b.OutFeatures, pyBool(b.Bias != nil))
}

// Unflatten splits axis Dim into the axes Sizes (one of which may be -1,
// inferred), as torch.nn.Unflatten.
type Unflatten struct {
	Base
	Dim   int
	Sizes []int
}

// NewUnflatten returns an Unflatten module.
func NewUnflatten(dim int, sizes ...int) *Unflatten {
	if len(sizes) == 0 {
		panic("nn.NewUnflatten: need at least one size")
	}
	return &Unflatten{Dim: dim, Sizes: append([]int(nil), sizes...)}
}

// Forward reshapes x.
func (u *Unflatten) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	d := u.Dim
	if d < 0 {
		d += len(s)
	}
	if d < 0 || d >= len(s) {
		panic(fmt.Sprintf("nn.Unflatten.Forward: axis %d out of range for shape %v", u.Dim, s))
	}
	sizes := append([]int(nil), u.Sizes...)
	known, free := 1, -1
	for i, v := range sizes {
		switch {
		case v == -1 && free < 0:
			free = i
		case v > 0:
			known *= v
		default:
			panic(fmt.Sprintf("nn.Unflatten.Forward: sizes %v must be positive with at most one -1", u.Sizes))
		}
	}
	if free >= 0 && known > 0 && s[d]%known == 0 {
		sizes[free] = s[d] / known
		known *= sizes[free]
	}
	if known != s[d] {
		panic(fmt.Sprintf("nn.Unflatten.Forward: sizes %v do not multiply to axis %d of shape %v", u.Sizes, d, s))
	}
	shape := append(append(append([]int{}, s[:d]...), sizes...), s[d+1:]...)
	return x.Reshape(shape...)
}

// String describes the module as PyTorch prints it.
func (u *Unflatten) String() string {
	return fmt.Sprintf("Unflatten(dim=%d, unflattened_size=%s)", u.Dim, pyShape(u.Sizes))
}

// Pad pads its input's trailing axes, as torch.nn.ZeroPad2d,
// ConstantPad1d/2d/3d, ReflectionPad1d/2d and ReplicationPad1d/2d.
// Padding lists (before, after) pairs from the last axis backwards, as
// torch.nn.functional.pad.
type Pad struct {
	Base
	Padding []int
	Mode    tensor.PadMode
	Value   float64
	name    string
}

func newPad(name string, dims int, mode tensor.PadMode, value float64, pads []int) *Pad {
	switch len(pads) {
	case 1:
		p := make([]int, 2*dims)
		for i := range p {
			p[i] = pads[0]
		}
		pads = p
	case 2 * dims:
		pads = append([]int(nil), pads...)
	default:
		panic(fmt.Sprintf("nn.New%s: want 1 or %d padding sizes, got %v", name, 2*dims, pads))
	}
	return &Pad{Padding: pads, Mode: mode, Value: value, name: name}
}

// NewZeroPad2d pads the last two axes with zeros: padding is one size for
// every side or (left, right, top, bottom).
func NewZeroPad2d(padding ...int) *Pad { return newPad("ZeroPad2d", 2, tensor.PadConstant, 0, padding) }

// NewConstantPad1d pads the last axis with value: one size for both sides
// or (left, right).
func NewConstantPad1d(value float64, padding ...int) *Pad {
	return newPad("ConstantPad1d", 1, tensor.PadConstant, value, padding)
}

// NewConstantPad2d pads the last two axes with value.
func NewConstantPad2d(value float64, padding ...int) *Pad {
	return newPad("ConstantPad2d", 2, tensor.PadConstant, value, padding)
}

// NewConstantPad3d pads the last three axes with value.
func NewConstantPad3d(value float64, padding ...int) *Pad {
	return newPad("ConstantPad3d", 3, tensor.PadConstant, value, padding)
}

// NewReflectionPad1d pads the last axis by reflection.
func NewReflectionPad1d(padding ...int) *Pad {
	return newPad("ReflectionPad1d", 1, tensor.PadReflect, 0, padding)
}

// NewReflectionPad2d pads the last two axes by reflection.
func NewReflectionPad2d(padding ...int) *Pad {
	return newPad("ReflectionPad2d", 2, tensor.PadReflect, 0, padding)
}

// NewReplicationPad1d pads the last axis by repeating the edge.
func NewReplicationPad1d(padding ...int) *Pad {
	return newPad("ReplicationPad1d", 1, tensor.PadReplicate, 0, padding)
}

// NewReplicationPad2d pads the last two axes by repeating the edge.
func NewReplicationPad2d(padding ...int) *Pad {
	return newPad("ReplicationPad2d", 2, tensor.PadReplicate, 0, padding)
}

// Forward pads x.
func (p *Pad) Forward(x *autograd.Var) *autograd.Var { return x.Pad(p.Padding, p.Mode, p.Value) }

// String describes the module as PyTorch prints it.
func (p *Pad) String() string {
	if strings.HasPrefix(p.name, "ConstantPad") {
		return fmt.Sprintf("%s(padding=%s, value=%s)", p.name, pyShape(p.Padding), pyFloat(p.Value))
	}
	return fmt.Sprintf("%s(%s)", p.name, pyShape(p.Padding))
}

// PixelShuffle rearranges [..., C·r², H, W] into [..., C, H·r, W·r], as
// torch.nn.PixelShuffle.
type PixelShuffle struct {
	Base
	UpscaleFactor int
}

// NewPixelShuffle returns a PixelShuffle with factor r.
func NewPixelShuffle(r int) *PixelShuffle {
	if r <= 0 {
		panic(fmt.Sprintf("nn.NewPixelShuffle: upscale factor %d must be positive", r))
	}
	return &PixelShuffle{UpscaleFactor: r}
}

// Forward shuffles x.
func (p *PixelShuffle) Forward(x *autograd.Var) *autograd.Var {
	return autograd.PixelShuffle(x, p.UpscaleFactor)
}

// String describes the module as PyTorch prints it.
func (p *PixelShuffle) String() string {
	return fmt.Sprintf("PixelShuffle(upscale_factor=%d)", p.UpscaleFactor)
}

// PixelUnshuffle is the inverse of PixelShuffle, as torch.nn.PixelUnshuffle.
type PixelUnshuffle struct {
	Base
	DownscaleFactor int
}

// NewPixelUnshuffle returns a PixelUnshuffle with factor r.
func NewPixelUnshuffle(r int) *PixelUnshuffle {
	if r <= 0 {
		panic(fmt.Sprintf("nn.NewPixelUnshuffle: downscale factor %d must be positive", r))
	}
	return &PixelUnshuffle{DownscaleFactor: r}
}

// Forward unshuffles x.
func (p *PixelUnshuffle) Forward(x *autograd.Var) *autograd.Var {
	return autograd.PixelUnshuffle(x, p.DownscaleFactor)
}

// String describes the module as PyTorch prints it.
func (p *PixelUnshuffle) String() string {
	return fmt.Sprintf("PixelUnshuffle(downscale_factor=%d)", p.DownscaleFactor)
}

// UpsampleOptions configures NewUpsample: exactly one of Size and
// ScaleFactor must be set.
type UpsampleOptions struct {
	// Size is the output (height, width).
	Size [2]int
	// ScaleFactor multiplies the input height and width (output sizes are
	// rounded down).
	ScaleFactor [2]float64
	// Mode is "nearest" (the default when empty) or "bilinear".
	Mode string
	// AlignCorners (bilinear only) lines up the corner pixels.
	AlignCorners bool
}

// Upsample resizes NCHW images, as torch.nn.Upsample with mode "nearest" or
// "bilinear".
type Upsample struct {
	Base
	Options UpsampleOptions
}

// NewUpsample returns an upsampling module.
func NewUpsample(opt UpsampleOptions) *Upsample {
	if opt.Mode == "" {
		opt.Mode = "nearest"
	}
	if opt.Mode != "nearest" && opt.Mode != "bilinear" {
		panic(fmt.Sprintf("nn.NewUpsample: mode %q is not \"nearest\" or \"bilinear\"", opt.Mode))
	}
	hasSize := opt.Size[0] > 0 && opt.Size[1] > 0
	hasScale := opt.ScaleFactor[0] > 0 && opt.ScaleFactor[1] > 0
	if hasSize == hasScale {
		panic(fmt.Sprintf("nn.NewUpsample: set exactly one of a positive Size %v and ScaleFactor %v", opt.Size, opt.ScaleFactor))
	}
	if opt.AlignCorners && opt.Mode == "nearest" {
		panic("nn.NewUpsample: AlignCorners only applies to bilinear mode")
	}
	return &Upsample{Options: opt}
}

// Forward resizes x of shape [N, C, H, W] (or [C, H, W]).
func (u *Upsample) Forward(x *autograd.Var) *autograd.Var {
	o := u.Options
	s := x.Shape()
	if len(s) != 3 && len(s) != 4 {
		panic(fmt.Sprintf("nn.Upsample.Forward: input shape %v must be [N, C, H, W] or [C, H, W]", s))
	}
	h, w := s[len(s)-2], s[len(s)-1]
	oh, ow := o.Size[0], o.Size[1]
	var sh, sw float64 // zero: in/out
	if oh == 0 {
		oh = int(math.Floor(float64(h) * o.ScaleFactor[0]))
		ow = int(math.Floor(float64(w) * o.ScaleFactor[1]))
		sh, sw = 1/o.ScaleFactor[0], 1/o.ScaleFactor[1]
	}
	if o.Mode == "bilinear" {
		return autograd.UpsampleBilinear2d(x, oh, ow, o.AlignCorners, sh, sw)
	}
	return autograd.UpsampleNearest2d(x, oh, ow, sh, sw)
}

// String describes the module as PyTorch prints it.
func (u *Upsample) String() string {
	o := u.Options
	var what string
	if o.Size[0] > 0 {
		what = "size=(" + fmt.Sprint(o.Size[0]) + ", " + fmt.Sprint(o.Size[1]) + ")"
	} else if o.ScaleFactor[0] == o.ScaleFactor[1] {
		what = "scale_factor=" + pyFloat(o.ScaleFactor[0])
	} else {
		what = "scale_factor=(" + pyFloat(o.ScaleFactor[0]) + ", " + pyFloat(o.ScaleFactor[1]) + ")"
	}
	return fmt.Sprintf("Upsample(%s, mode=%s)", what, o.Mode)
}
