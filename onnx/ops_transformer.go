package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// The other transformer operators of opsets 23 and later:
// RMSNormalization, RotaryEmbedding, Swish and SwiGLU, each one pass over
// its input.

// transformerOps registers the transformer operators beside Attention.
func transformerOps() opTable {
	return opTable{
		"RMSNormalization": {{since: 23, impl: opRMSNormalization}},
		"RotaryEmbedding":  {{since: 23, impl: opRotaryEmbedding}},
	}
}

// floatData returns t's elements as float32 (float64 for a double
// tensor), the precision the transformer kernels compute in.
func floatData[T float32 | float64](t *tensor.Tensor) []T {
	var out []T
	switch s := any(&out).(type) {
	case *[]float32:
		*s = t.Float32s()
	case *[]float64:
		*s = t.Float64s()
	}
	return out
}

// opRMSNormalization is RMSNormalization 23: X divided by the root mean
// square of its elements over the axes from axis on (plus epsilon under
// the root), times scale (which broadcasts to those axes). It computes in
// float32 (float64 for double inputs) whatever stash_type says, which only
// ever asks for at least float32.
func opRMSNormalization(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	scale, err := n.needFloat(in, 1)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", -1)), x.Dim())
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	inner := 1
	for _, d := range xs[axis:] {
		inner *= d
	}
	eps := n.attrFloat("epsilon", 1e-5)
	// scale broadcasts against the normalized axes.
	ss := scale.Shape()
	if len(ss) > len(xs)-axis {
		return nil, fmt.Errorf("onnx: %v: scale %v has more axes than the %d normalized ones of %v", n, ss, len(xs)-axis, xs)
	}
	full := scale
	if scale.Numel() != inner || len(ss) != len(xs)-axis {
		if !broadcastsTo(ss, xs[axis:]) {
			return nil, fmt.Errorf("onnx: %v: scale %v does not broadcast to %v", n, ss, xs[axis:])
		}
		full = scale.Expand(xs[axis:]...)
	}
	if x.DType() == tensor.Float64 {
		return one(rmsNorm(floatData[float64](x), floatData[float64](full), inner, eps, xs).To(x.DType()))
	}
	return one(rmsNorm(floatData[float32](x), floatData[float32](full), inner, eps, xs).To(x.DType()))
}

// broadcastsTo reports whether shape from broadcasts to shape to (aligned
// at the right).
func broadcastsTo(from, to []int) bool {
	if len(from) > len(to) {
		return false
	}
	off := len(to) - len(from)
	for i, d := range from {
		if d != 1 && d != to[off+i] {
			return false
		}
	}
	return true
}

// rmsNorm normalizes each run of inner elements of x and multiplies by
// scale.
func rmsNorm[T float32 | float64](x, scale []T, inner int, eps float64, shape []int) *tensor.Tensor {
	y := make([]T, len(x))
	if inner > 0 {
		for lo := 0; lo < len(x); lo += inner {
			row := x[lo : lo+inner]
			var sq float64
			for _, v := range row {
				sq += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(sq/float64(inner)+eps)
			for i, v := range row {
				y[lo+i] = T(float64(v)*inv) * scale[i]
			}
		}
	}
	return tensor.FromSlice(y, shape...)
}

// opRotaryEmbedding is RotaryEmbedding 23. X is [batch, heads, seq, head
// size] or [batch, seq, heads*head size] (num_heads then says how many
// heads). The first rotary_embedding_dim elements of each head (all when
// 0) rotate in pairs by the angle whose cosine and sine the caches hold:
// the two halves pair up, or (interleaved) neighbours do. With
// position_ids [batch, seq] the caches are [max position, dim/2] and
// indexed by position; without, they are [batch, seq, dim/2].
func opRotaryEmbedding(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	cosT, err := n.needFloat(in, 1)
	if err != nil {
		return nil, err
	}
	sinT, err := n.needFloat(in, 2)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := &rotary{interleaved: n.attrInt("interleaved", 0) != 0}
	switch len(xs) {
	case 4:
		r.batch, r.heads, r.seq, r.headDim = xs[0], xs[1], xs[2], xs[3]
		r.headsFirst = true
	case 3:
		h := int(n.attrInt("num_heads", 0))
		if h <= 0 || xs[2]%h != 0 {
			return nil, fmt.Errorf("onnx: %v: a 3-D input %v needs num_heads (got %d) dividing its hidden size", n, xs, h)
		}
		r.batch, r.seq, r.heads, r.headDim = xs[0], xs[1], h, xs[2]/h
	default:
		return nil, fmt.Errorf("onnx: %v: input %v must be 3-D or 4-D", n, xs)
	}
	r.dim = int(n.attrInt("rotary_embedding_dim", 0))
	if r.dim == 0 {
		r.dim = r.headDim
	}
	if r.dim < 0 || r.dim > r.headDim || r.dim%2 != 0 {
		return nil, fmt.Errorf("onnx: %v: rotary_embedding_dim %d must be even and at most the head size %d", n, r.dim, r.headDim)
	}
	half := r.dim / 2
	cs, sn := cosT.Shape(), sinT.Shape()
	if fmt.Sprint(cs) != fmt.Sprint(sn) {
		return nil, fmt.Errorf("onnx: %v: cos_cache %v and sin_cache %v differ", n, cs, sn)
	}
	r.positions = make([]int, r.batch*r.seq)
	if p := arg(in, 3); p != nil {
		if p.DType().IsFloat() || fmt.Sprint(p.Shape()) != fmt.Sprint([]int{r.batch, r.seq}) {
			return nil, fmt.Errorf("onnx: %v: position_ids %s %v must be integers of shape [%d %d]", n, p.DType(), p.Shape(), r.batch, r.seq)
		}
		if len(cs) != 2 || cs[1] != half {
			return nil, fmt.Errorf("onnx: %v: with position_ids the caches %v must be [max position, %d]", n, cs, half)
		}
		for i, v := range p.Int64s() {
			if v < 0 || v >= int64(cs[0]) {
				return nil, fmt.Errorf("onnx: %v: position id %d is outside the caches' %d positions", n, v, cs[0])
			}
			r.positions[i] = int(v)
		}
	} else {
		if len(cs) != 3 || cs[0] != r.batch || cs[1] != r.seq || cs[2] != half {
			return nil, fmt.Errorf("onnx: %v: without position_ids the caches %v must be [%d %d %d]", n, cs, r.batch, r.seq, half)
		}
		for i := range r.positions {
			r.positions[i] = i
		}
	}
	if x.DType() == tensor.Float64 {
		return one(rotate(r, floatData[float64](x), floatData[float64](cosT), floatData[float64](sinT)).Reshape(xs...).To(x.DType()))
	}
	return one(rotate(r, floatData[float32](x), floatData[float32](cosT), floatData[float32](sinT)).Reshape(xs...).To(x.DType()))
}

// rotary holds one RotaryEmbedding call's geometry.
type rotary struct {
	batch, heads, seq, headDim, dim int
	headsFirst, interleaved         bool
	// positions holds, per batch and sequence position, the row of the
	// caches to use.
	positions []int
}

// rotate applies the rotation to every head of x.
func rotate[T float32 | float64](r *rotary, x, cos, sin []T) *tensor.Tensor {
	y := append([]T(nil), x...)
	half := r.dim / 2
	for b := range r.batch {
		for h := range r.heads {
			for s := range r.seq {
				var off int
				if r.headsFirst {
					off = ((b*r.heads+h)*r.seq + s) * r.headDim
				} else {
					off = ((b*r.seq+s)*r.heads + h) * r.headDim
				}
				row := r.positions[b*r.seq+s] * half
				c, sn := cos[row:row+half], sin[row:row+half]
				in, out := x[off:off+r.dim], y[off:off+r.dim]
				for i := range half {
					var i1, i2 int
					if r.interleaved {
						i1, i2 = 2*i, 2*i+1
					} else {
						i1, i2 = i, i+half
					}
					x1, x2 := in[i1], in[i2]
					out[i1] = c[i]*x1 - sn[i]*x2
					out[i2] = sn[i]*x1 + c[i]*x2
				}
			}
		}
	}
	return tensor.FromSlice(y, len(y))
}
