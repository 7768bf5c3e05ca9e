package tensor

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor/internal/cpu"
)

// Conv2dRelu returns max(Conv2d(x, w, b, opt), 0): the convolution followed
// by a ReLU, with the same shapes and rules as Conv2d. On the CPU float32
// convolutions (and depthwise ones of either float type) clamp their fresh
// output in place, so no second output tensor is allocated; elsewhere it is
// Conv2d followed by Relu. It is a forward-only
// inference helper: autograd does not record it.
func Conv2dRelu(x, w, b *Tensor, opt Conv2dOptions) *Tensor {
	return unbatched(x, 4, func(x *Tensor) *Tensor {
		nnFloat("Conv2dRelu", x, w, b)
		opt := opt.withDefaults("Conv2dRelu")
		g := conv2dGeom("Conv2dRelu", x.shape, w.shape, opt)
		checkBias("Conv2dRelu", b, w.shape[0])
		if y := cpuConvForward(x, w, b, g, opt.Groups, true); y != nil {
			return y
		}
		return Conv2d(x, w, b, opt).Relu()
	})
}

// PackedConv2dWeight is a convolution weight ([O, C/groups, KH, KW])
// prepared once for repeated inference with Conv2dPacked: on the CPU a
// float32 weight of a non-depthwise convolution is packed into the matrix
// product's panel layout, so calls skip repacking it. It holds the weight
// as given (Weight), which must not be modified afterwards, and is safe for
// concurrent use.
type PackedConv2dWeight struct {
	w      *Tensor
	scale  *Tensor // per output channel factor folded into w, or nil
	groups int
	packed *cpu.PackedConvF32 // nil where the packed kernel does not apply
}

// PackConv2dWeight prepares w, a [O, C/groups, KH, KW] float weight, for
// Conv2dPacked with the given group count (at least 1, dividing O). Weights
// the packed CPU kernel does not take (float64, depthwise, off the CPU)
// are kept as they are, and Conv2dPacked then runs Conv2d on them.
func PackConv2dWeight(w *Tensor, groups int) *PackedConv2dWeight {
	return PackScaledConv2dWeight(w, nil, groups)
}

// PackScaledConv2dWeight is PackConv2dWeight for the weight w·scale whose
// output channel i is w's times scale[i] (scale: [O], w's dtype and
// device; nil means 1): a batch norm in evaluation mode folded into the
// convolution. The packed CPU kernel scales w as it packs it, so no scaled
// copy of w is kept; elsewhere Conv2dPacked scales w on every call. w and
// scale must not be modified afterwards.
func PackScaledConv2dWeight(w, scale *Tensor, groups int) *PackedConv2dWeight {
	nnFloat("PackConv2dWeight", w, scale)
	if w.Dim() != 4 || groups < 1 || w.shape[0]%groups != 0 {
		panic(fmt.Sprintf("tensor.PackConv2dWeight: weight %v must be [O, C/groups, KH, KW] with O divisible by groups = %d >= 1", w.shape, groups))
	}
	if scale != nil && (scale.Dim() != 1 || scale.shape[0] != w.shape[0]) {
		panic(fmt.Sprintf("tensor.PackScaledConv2dWeight: scale %v must be [%d], one factor per output channel of weight %v", scale.shape, w.shape[0], w.shape))
	}
	p := &PackedConv2dWeight{w: w, scale: scale, groups: groups}
	ck := w.shape[1] * w.shape[2] * w.shape[3]
	if w.dtype != Float32 || w.shape[1] == 1 || ck == 0 || w.shape[0] == 0 {
		return p
	}
	d, ok := cpuDense[float32](w)
	var s []float32
	if ok && scale != nil {
		s, ok = cpuDense[float32](scale)
	}
	if ok {
		p.packed = cpu.PackScaledConvWeightsF32(d, s, w.shape[0], groups, w.shape[1], w.shape[2], w.shape[3])
	}
	return p
}

// weight returns the weight p stands for: w, or w·scale made afresh.
func (p *PackedConv2dWeight) weight() *Tensor {
	if p.scale == nil {
		return p.w
	}
	return p.w.Mul(p.scale.Reshape(p.w.shape[0], 1, 1, 1))
}

// Weight returns the weight p was prepared from (without its scale).
func (p *PackedConv2dWeight) Weight() *Tensor { return p.w }

// Groups returns the group count p was prepared for.
func (p *PackedConv2dWeight) Groups() int { return p.groups }

// Conv2dPacked returns Conv2d(x, w.Weight(), b, opt) (the weight scaled
// per output channel if w was packed with a scale), plus residual when
// it is not nil, followed by a ReLU when relu is set: the convolution and
// the epilogue of a residual block in one pass, using w's packed weight
// where it applies. residual must have the output's shape and dtype (no
// broadcasting); on the packed path the output starts as residual plus
// bias and the matrix product accumulates onto it, which may round
// differently from adding afterwards. opt.Groups (0 meaning 1) must be the
// group count w was packed for. It is a forward-only inference helper:
// autograd does not record it.
func Conv2dPacked(x *Tensor, w *PackedConv2dWeight, b *Tensor, opt Conv2dOptions, residual *Tensor, relu bool) *Tensor {
	if max(opt.Groups, 1) != w.groups {
		panic(fmt.Sprintf("tensor.Conv2dPacked: options ask for %d groups, the weight %v was packed for %d", opt.Groups, w.w.shape, w.groups))
	}
	if residual != nil && x.Dim() == 3 {
		residual = residual.Unsqueeze(0)
	}
	return unbatched(x, 4, func(x *Tensor) *Tensor {
		nnFloat("Conv2dPacked", x, w.w, b, residual)
		opt := opt.withDefaults("Conv2dPacked")
		g := conv2dGeom("Conv2dPacked", x.shape, w.w.shape, opt)
		checkBias("Conv2dPacked", b, w.w.shape[0])
		outShape := []int{g.N, w.w.shape[0], g.OH, g.OW}
		if residual != nil && !slices.Equal(residual.shape, outShape) {
			panic(fmt.Sprintf("tensor.Conv2dPacked: residual %v must have the output's shape %v", residual.shape, outShape))
		}
		if w.packed != nil && !depthwise(g, opt.Groups) && !convEmpty(g, w.w.shape[0]) {
			if ops, ok := convOperands[float32](x, b, residual); ok {
				y := emptyOut(x.st.backend, x.dtype, outShape)
				dst := y.st.buf.(*cpuBuffer).data.([]float32)
				cpu.ConvForwardPackedF32(dst, ops[0], w.packed, ops[1], ops[2], cpu.ConvGeom(g), NumThreads(), relu)
				return y
			}
		}
		wt := w.weight()
		if residual == nil && relu {
			return Conv2dRelu(x, wt, b, opt)
		}
		y := Conv2d(x, wt, b, opt)
		if residual != nil {
			y = y.Add(residual)
		}
		if relu {
			y = y.Relu()
		}
		return y
	})
}
