package tensor

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor/internal/vec"
)

// Normalization: statistics helpers and the functional forms of batch,
// layer and group normalization. Statistics are the mean and the biased
// variance (divided by the count, not count-1), as PyTorch normalizes with;
// they accumulate in float64.

// moments returns the mean and biased variance of each middle index of t
// viewed as [outer, n, inner], as two [n] tensors.
func moments(op string, t *Tensor, outer, n, inner int) (mean, variance *Tensor) {
	if outer*inner == 0 {
		panic(fmt.Sprintf("tensor.%s: no elements to take statistics of in shape %v", op, t.shape))
	}
	c := t.Contiguous()
	be := c.st.backend
	mean = empty(be, c.dtype, []int{n})
	variance = empty(be, c.dtype, []int{n})
	if n > 0 {
		be.Moments(mean.st.buf, variance.st.buf, c.st.buf, c.offset, outer, n, inner)
	}
	return mean, variance
}

// scaleShift returns src*scale[j] + shift[j] over src viewed as
// [outer, n, inner]; nil scale or shift are skipped. With inPlace it
// overwrites src, which must be a fresh dense tensor.
func scaleShift(src, scale, shift *Tensor, outer, n, inner int, inPlace bool) *Tensor {
	if src.Numel() == 0 {
		return src
	}
	var sb, hb Buffer
	if scale != nil {
		sb = dense(scale).st.buf
	}
	if shift != nil {
		hb = dense(shift).st.buf
	}
	be := src.st.backend
	if inPlace {
		be.ScaleShift(src.st.buf, src.st.buf, 0, sb, hb, outer, n, inner)
		return src
	}
	c := src.Contiguous()
	out := empty(be, c.dtype, c.shape)
	be.ScaleShift(out.st.buf, c.st.buf, c.offset, sb, hb, outer, n, inner)
	return out
}

// invStd returns 1/sqrt(variance + eps).
func invStd(variance *Tensor, eps float64) *Tensor { return variance.AddScalar(eps).Rsqrt() }

// channelDims returns N, C and the product of the remaining axes of a
// [N, C, ...] tensor.
func channelDims(op string, x *Tensor) (n, c, rest int) {
	if x.Dim() < 2 {
		panic(fmt.Sprintf("tensor.%s: want input [N, C, ...], got shape %v", op, x.shape))
	}
	n, c = x.shape[0], x.shape[1]
	return n, c, numel(x.shape[2:])
}

// checkPerChannel panics unless t is nil or has shape [c].
func checkPerChannel(op, what string, t *Tensor, c int) {
	if t != nil && (t.Dim() != 1 || t.shape[0] != c) {
		panic(fmt.Sprintf("tensor.%s: %s has shape %v, want [%d] (one value per channel)", op, what, t.shape, c))
	}
}

// BatchNormStats returns the mean and biased variance of x ([N, C, ...])
// for each channel, over the batch and every axis after the channel axis:
// two [C] tensors.
func BatchNormStats(x *Tensor) (mean, variance *Tensor) {
	nnFloat("BatchNormStats", x)
	n, c, rest := channelDims("BatchNormStats", x)
	return moments("BatchNormStats", x, n, c, rest)
}

// LayerNormStats returns the mean and biased variance of x over its last
// normDims axes, shaped like x's leading axes.
func LayerNormStats(x *Tensor, normDims int) (mean, variance *Tensor) {
	nnFloat("LayerNormStats", x)
	if normDims < 0 || normDims > x.Dim() {
		panic(fmt.Sprintf("tensor.LayerNormStats: cannot normalize over the last %d axes of shape %v", normDims, x.shape))
	}
	lead := x.shape[:x.Dim()-normDims]
	mean, variance = moments("LayerNormStats", x, 1, numel(lead), numel(x.shape[x.Dim()-normDims:]))
	return mean.Reshape(lead...), variance.Reshape(lead...)
}

// GroupNormStats returns the mean and biased variance of x ([N, C, ...])
// over each of groups groups of C/groups consecutive channels (and every
// axis after the channel axis), as two [N, groups] tensors.
func GroupNormStats(x *Tensor, groups int) (mean, variance *Tensor) {
	nnFloat("GroupNormStats", x)
	n, c, rest := channelDims("GroupNormStats", x)
	checkGroups("GroupNormStats", x, groups)
	mean, variance = moments("GroupNormStats", x, 1, n*groups, c/groups*rest)
	return mean.Reshape(n, groups), variance.Reshape(n, groups)
}

func checkGroups(op string, x *Tensor, groups int) {
	if groups <= 0 || x.shape[1]%groups != 0 {
		panic(fmt.Sprintf("tensor.%s: %d channels of input %v do not split into %d groups", op, x.shape[1], x.shape, groups))
	}
}

// BatchNorm normalizes x ([N, C, ...]) per channel, as
// torch.nn.functional.batch_norm: y = (x - mean) / sqrt(var + eps) * weight
// + bias. In training, or when runningMean is nil, mean and var are the
// batch statistics (BatchNormStats); in training the running statistics, if
// given, are updated in place: running = (1-momentum)*running +
// momentum*batch, with the unbiased batch variance for runningVar. In eval
// with running statistics, those are used instead. weight, bias,
// runningMean and runningVar are [C] tensors or nil.
func BatchNorm(x, runningMean, runningVar, weight, bias *Tensor, training bool, momentum, eps float64) *Tensor {
	out, _, _ := BatchNormWithStats(x, runningMean, runningVar, weight, bias, training, momentum, eps)
	return out
}

// BatchNormWithStats is BatchNorm that also returns the per-channel mean and
// biased variance it normalized with (the batch's or the running ones).
func BatchNormWithStats(x, runningMean, runningVar, weight, bias *Tensor, training bool, momentum, eps float64) (out, mean, variance *Tensor) {
	const op = "BatchNorm"
	nnFloat(op, x, runningMean, runningVar, weight, bias)
	n, c, rest := channelDims(op, x)
	for _, p := range []struct {
		what string
		t    *Tensor
	}{{"runningMean", runningMean}, {"runningVar", runningVar}, {"weight", weight}, {"bias", bias}} {
		checkPerChannel(op, p.what, p.t, c)
	}
	if (runningMean == nil) != (runningVar == nil) {
		panic("tensor.BatchNorm: give both runningMean and runningVar or neither")
	}
	if training || runningMean == nil {
		if training && n*rest <= 1 {
			panic(fmt.Sprintf("tensor.BatchNorm: expected more than 1 value per channel when training, got input shape %v", x.shape))
		}
		mean, variance = moments(op, x, n, c, rest)
		if training && runningMean != nil {
			cnt := float64(n * rest)
			runningMean.CopyFrom(runningMean.MulScalar(1 - momentum).Add(mean.MulScalar(momentum)))
			runningVar.CopyFrom(runningVar.MulScalar(1 - momentum).Add(variance.MulScalar(momentum * cnt / (cnt - 1))))
		}
	} else {
		mean, variance = runningMean.Clone(), runningVar.Clone()
	}
	scale := invStd(variance, eps)
	if weight != nil {
		scale = scale.Mul(weight)
	}
	shift := mean.Mul(scale).Neg()
	if bias != nil {
		shift = shift.Add(bias)
	}
	return scaleShift(x, scale, shift, n, c, rest, false), mean, variance
}

// LayerNorm normalizes x over its trailing axes normalizedShape, as
// torch.nn.functional.layer_norm: y = (x - mean) / sqrt(var + eps) * weight
// + bias, with weight and bias (nil for none) of shape normalizedShape.
func LayerNorm(x *Tensor, normalizedShape []int, weight, bias *Tensor, eps float64) *Tensor {
	out, _, _ := LayerNormWithStats(x, normalizedShape, weight, bias, eps)
	return out
}

// LayerNormWithStats is LayerNorm that also returns the mean and biased
// variance of each normalized slice, shaped like x's leading axes.
func LayerNormWithStats(x *Tensor, normalizedShape []int, weight, bias *Tensor, eps float64) (out, mean, variance *Tensor) {
	const op = "LayerNorm"
	nnFloat(op, x, weight, bias)
	k := len(normalizedShape)
	if k == 0 || k > x.Dim() || !slices.Equal(x.shape[x.Dim()-k:], normalizedShape) {
		panic(fmt.Sprintf("tensor.LayerNorm: normalized shape %v must be a non-empty suffix of the input shape %v", normalizedShape, x.shape))
	}
	for _, p := range []*Tensor{weight, bias} {
		if p != nil && !slices.Equal(p.shape, normalizedShape) {
			panic(fmt.Sprintf("tensor.LayerNorm: weight/bias has shape %v, want the normalized shape %v", p.shape, normalizedShape))
		}
	}
	lead := x.shape[:x.Dim()-k]
	rows, cols := numel(lead), numel(normalizedShape)
	mean, variance = moments(op, x, 1, rows, cols)
	rstd := invStd(variance, eps)
	if x.dtype == Float32 && sameFloatDense(x, mean, rstd) && (weight == nil || sameFloatDense(x, weight)) && (bias == nil || sameFloatDense(x, bias)) {
		out = layerNormApply32(x, mean, rstd, weight, bias, rows, cols)
		return out, mean.Reshape(lead...), variance.Reshape(lead...)
	}
	out = scaleShift(x, rstd, mean.Mul(rstd).Neg(), 1, rows, cols, false)
	if weight != nil || bias != nil {
		scaleShift(out, weight, bias, rows, cols, 1, true)
	}
	return out, mean.Reshape(lead...), variance.Reshape(lead...)
}

// layerNormApply32 returns (x-mean)·rstd·weight + bias, row by row with the
// vector kernels (the same roundings as the general path), for contiguous float32 CPU operands (x [rows, cols], mean
// and rstd [rows], weight and bias [cols] or nil), where the general
// ScaleShift path would take the per-column affine one element at a time.
func layerNormApply32(x, mean, rstd, weight, bias *Tensor, rows, cols int) *Tensor {
	xd, _ := cpuDense[float32](x)
	md, _ := cpuDense[float32](mean)
	rd, _ := cpuDense[float32](rstd)
	var w, b []float32
	if weight != nil {
		w, _ = cpuDense[float32](weight)
	}
	if bias != nil {
		b, _ = cpuDense[float32](bias)
	}
	out := emptyOut(x.st.backend, Float32, x.shape)
	od := out.st.buf.(*cpuBuffer).data.([]float32)
	parallelFor(rows*cols, cols, func(lo, hi int) {
		for r := lo / cols; r < hi/cols; r++ {
			o := od[r*cols : (r+1)*cols]
			// x·rstd + (-mean·rstd), rounded as the general path rounds.
			vec.MulConst(o, xd[r*cols:(r+1)*cols], rd[r])
			vec.AddConst(o, o, -(md[r] * rd[r]))
			if w != nil {
				vec.Mul(o, o, w)
			}
			if b != nil {
				vec.Add(o, o, b)
			}
		}
	})
	return out
}

// GroupNorm normalizes x ([N, C, ...]) over groups of C/groups consecutive
// channels, as torch.nn.functional.group_norm, then applies the per-channel
// weight and bias ([C] or nil).
func GroupNorm(x *Tensor, groups int, weight, bias *Tensor, eps float64) *Tensor {
	out, _, _ := GroupNormWithStats(x, groups, weight, bias, eps)
	return out
}

// GroupNormWithStats is GroupNorm that also returns the [N, groups] mean and
// biased variance it normalized with.
func GroupNormWithStats(x *Tensor, groups int, weight, bias *Tensor, eps float64) (out, mean, variance *Tensor) {
	const op = "GroupNorm"
	nnFloat(op, x, weight, bias)
	n, c, rest := channelDims(op, x)
	checkGroups(op, x, groups)
	checkPerChannel(op, "weight", weight, c)
	checkPerChannel(op, "bias", bias, c)
	mean, variance = moments(op, x, 1, n*groups, c/groups*rest)
	rstd := invStd(variance, eps)
	out = scaleShift(x, rstd, mean.Mul(rstd).Neg(), 1, n*groups, c/groups*rest, false)
	if weight != nil || bias != nil {
		scaleShift(out, weight, bias, n, c, rest, true)
	}
	return out, mean.Reshape(n, groups), variance.Reshape(n, groups)
}

// normBackward runs the NormBackward kernel over grad and x viewed as
// [outer, n, inner] and returns (dx or nil, sumG, sumGX); mean, rstd and
// scale are [n] tensors or nil.
func normBackward(grad, x, mean, rstd, scale *Tensor, outer, n, inner int, wantDx bool) (dx, sumG, sumGX *Tensor) {
	gc, xc := grad.Contiguous(), x.Contiguous()
	be := gc.st.backend
	sumG = empty(be, gc.dtype, []int{n})
	sumGX = empty(be, gc.dtype, []int{n})
	var dxb Buffer
	if wantDx {
		dx = empty(be, gc.dtype, gc.shape)
		dxb = dx.st.buf
	}
	if outer*n*inner == 0 {
		return dx, sumG, sumGX
	}
	buf := func(t *Tensor) Buffer {
		if t == nil {
			return nil
		}
		return dense(t).st.buf
	}
	be.NormBackward(dxb, sumG.st.buf, sumGX.st.buf, gc.st.buf, gc.offset, xc.st.buf, xc.offset, buf(mean), buf(rstd), buf(scale), outer, n, inner)
	return dx, sumG, sumGX
}

// checkSameShape panics unless grad has x's shape.
func checkSameShape(op string, grad, x *Tensor) {
	if !sameShape(grad.shape, x.shape) {
		panic(fmt.Sprintf("tensor.%s: grad shape %v differs from input shape %v", op, grad.shape, x.shape))
	}
}

// BatchNormBackward returns the gradients of BatchNorm with respect to its
// input, weight and bias, given the output gradient grad, the input x and
// the [C] mean and biased variance it normalized with (as
// BatchNormWithStats returns them). batchStats says whether those were x's
// own statistics (training, or no running statistics), in which case the
// input gradient flows through them too. weight may be nil; dweight and
// dbias are returned either way.
func BatchNormBackward(grad, x, mean, variance, weight *Tensor, batchStats bool, eps float64) (dx, dweight, dbias *Tensor) {
	const op = "BatchNormBackward"
	nnFloat(op, grad, x, mean, variance, weight)
	checkSameShape(op, grad, x)
	n, c, rest := channelDims(op, x)
	checkPerChannel(op, "mean", mean, c)
	checkPerChannel(op, "variance", variance, c)
	checkPerChannel(op, "weight", weight, c)
	rstd := invStd(variance, eps)
	dx, dbias, dweight = normBackward(grad, x, mean, rstd, weight, n, c, rest, batchStats)
	if !batchStats {
		scale := rstd
		if weight != nil {
			scale = scale.Mul(weight)
		}
		dx = scaleShift(grad, scale, nil, n, c, rest, false)
	}
	return dx, dweight, dbias
}

// LayerNormBackward returns the gradients of LayerNorm with respect to its
// input, weight and bias (the latter two of shape normalizedShape), given
// the output gradient, the input and the mean and biased variance
// LayerNormWithStats returned. weight may be nil.
func LayerNormBackward(grad, x, mean, variance *Tensor, normalizedShape []int, weight *Tensor, eps float64) (dx, dweight, dbias *Tensor) {
	const op = "LayerNormBackward"
	nnFloat(op, grad, x, mean, variance, weight)
	checkSameShape(op, grad, x)
	k := len(normalizedShape)
	if k == 0 || k > x.Dim() || !slices.Equal(x.shape[x.Dim()-k:], normalizedShape) {
		panic(fmt.Sprintf("tensor.%s: normalized shape %v must be a non-empty suffix of the input shape %v", op, normalizedShape, x.shape))
	}
	rows, cols := numel(x.shape[:x.Dim()-k]), numel(normalizedShape)
	if mean.Numel() != rows || variance.Numel() != rows {
		panic(fmt.Sprintf("tensor.%s: mean %v and variance %v must have one value per normalized slice (%d)", op, mean.shape, variance.shape, rows))
	}
	if weight != nil && !slices.Equal(weight.shape, normalizedShape) {
		panic(fmt.Sprintf("tensor.%s: weight has shape %v, want %v", op, weight.shape, normalizedShape))
	}
	mean, rstd := mean.Reshape(rows), invStd(variance.Reshape(rows), eps)
	if sameFloatDense(grad, x, mean, rstd) && (weight == nil || sameFloatDense(grad, weight)) && rows*cols > 0 {
		switch grad.dtype {
		case Float32:
			dx, dweight, dbias = layerNormBackward32(grad, x, mean, rstd, weight, rows, cols)
		case Float64:
			dx, dweight, dbias = layerNormBackwardDense[float64](grad, x, mean, rstd, weight, rows, cols)
		}
		return dx, dweight.Reshape(normalizedShape...), dbias.Reshape(normalizedShape...)
	}
	gw := grad
	if weight != nil {
		gw = scaleShift(grad, weight.Reshape(cols), nil, rows, cols, 1, false)
	}
	dx, _, _ = normBackward(gw, x, mean, rstd, nil, 1, rows, cols, true)
	xhat := scaleShift(x, rstd, mean.Mul(rstd).Neg(), 1, rows, cols, false)
	_, dbias, dweight = normBackward(grad, xhat, nil, nil, nil, rows, cols, 1, false)
	return dx, dweight.Reshape(normalizedShape...), dbias.Reshape(normalizedShape...)
}

// GroupNormBackward returns the gradients of GroupNorm with respect to its
// input, weight and bias ([C]), given the output gradient, the input and the
// [N, groups] mean and biased variance GroupNormWithStats returned. weight
// may be nil.
func GroupNormBackward(grad, x, mean, variance *Tensor, groups int, weight *Tensor, eps float64) (dx, dweight, dbias *Tensor) {
	const op = "GroupNormBackward"
	nnFloat(op, grad, x, mean, variance, weight)
	checkSameShape(op, grad, x)
	n, c, rest := channelDims(op, x)
	checkGroups(op, x, groups)
	checkPerChannel(op, "weight", weight, c)
	if mean.Numel() != n*groups || variance.Numel() != n*groups {
		panic(fmt.Sprintf("tensor.%s: mean %v and variance %v must be [%d %d]", op, mean.shape, variance.shape, n, groups))
	}
	mean, rstd := mean.Reshape(n*groups), invStd(variance.Reshape(n*groups), eps)
	gw := grad
	if weight != nil {
		gw = scaleShift(grad, weight, nil, n, c, rest, false)
	}
	inner := c / groups * rest
	dx, _, _ = normBackward(gw, x, mean, rstd, nil, 1, n*groups, inner, true)
	xhat := scaleShift(x, rstd, mean.Mul(rstd).Neg(), 1, n*groups, inner, false)
	_, dbias, dweight = normBackward(grad, xhat, nil, nil, nil, n, c, rest, false)
	return dx, dweight, dbias
}

// layerNormRowBlock is the number of rows whose weight and bias gradients
// layerNormBackwardDense sums into one partial; the partials are added in
// order, so the result does not depend on the thread count.
const layerNormRowBlock = 32

// layerNormBackwardDense is LayerNormBackward on contiguous CPU operands of
// element type T in one pass over the rows: with x̂ = (x-mean)·rstd and
// gw = grad·weight, dx = rstd·(gw - mean(gw) - x̂·mean(gw·x̂)) per row, and
// the columns of grad and grad·x̂ summed into dbias and dweight, all in
// float64.
func layerNormBackwardDense[T float32 | float64](grad, x, mean, rstd, weight *Tensor, rows, cols int) (dx, dweight, dbias *Tensor) {
	g, _ := cpuDense[T](grad)
	xd, _ := cpuDense[T](x)
	md, _ := cpuDense[T](mean)
	rd, _ := cpuDense[T](rstd)
	var w []T
	if weight != nil {
		w, _ = cpuDense[T](weight)
	}
	be := grad.st.backend
	dx = emptyOut(be, grad.dtype, grad.shape)
	dd := dx.st.buf.(*cpuBuffer).data.([]T)
	blocks := (rows + layerNormRowBlock - 1) / layerNormRowBlock
	// Per block: cols sums of grad, then cols sums of grad·x̂.
	part := make([]float64, blocks*2*cols)
	unit := layerNormRowBlock * cols
	parallelFor(rows*cols, unit, func(lo, hi int) {
		xh := make([]float64, cols)
		for b := lo / unit; b < (hi+unit-1)/unit; b++ {
			sb, sw := part[b*2*cols:b*2*cols+cols], part[b*2*cols+cols:(b+1)*2*cols]
			for r := b * layerNormRowBlock; r < min((b+1)*layerNormRowBlock, rows); r++ {
				gr, xr, dr := g[r*cols:(r+1)*cols], xd[r*cols:(r+1)*cols], dd[r*cols:(r+1)*cols]
				m, rs := float64(md[r]), float64(rd[r])
				var s1, s2 float64
				for i, gv := range gr {
					v := (float64(xr[i]) - m) * rs
					xh[i] = v
					gf := float64(gv)
					sb[i] += gf
					sw[i] += gf * v
					if w != nil {
						gf *= float64(w[i])
					}
					s1 += gf
					s2 += gf * v
				}
				m1, m2 := s1/float64(cols), s2/float64(cols)
				for i, gv := range gr {
					gf := float64(gv)
					if w != nil {
						gf *= float64(w[i])
					}
					dr[i] = T(rs * (gf - m1 - xh[i]*m2))
				}
			}
		}
	})
	dweight, dbias = layerNormParamGrads[T](be, part, blocks, cols)
	return dx, dweight, dbias
}

// layerNormParamGrads adds up the per-block column sums of grad·x̂ and grad
// (part: per block, cols sums of grad then cols sums of grad·x̂) in block
// order into dweight and dbias.
func layerNormParamGrads[T float32 | float64](be Backend, part []float64, blocks, cols int) (dweight, dbias *Tensor) {
	dt := Float64
	if _, f32 := any(T(0)).(float32); f32 {
		dt = Float32
	}
	dweight, dbias = emptyOut(be, dt, []int{cols}), emptyOut(be, dt, []int{cols})
	dw, db := dweight.st.buf.(*cpuBuffer).data.([]T), dbias.st.buf.(*cpuBuffer).data.([]T)
	for i := range cols {
		var sb, sw float64
		for b := range blocks {
			sb += part[b*2*cols+i]
			sw += part[b*2*cols+cols+i]
		}
		db[i], dw[i] = T(sb), T(sw)
	}
	return dweight, dbias
}

// layerNormBackward32 is layerNormBackwardDense for float32 with the
// vector kernels, row by row: x̂, grad·weight, their products and dx in
// float32, the row sums of grad·weight and grad·weight·x̂ in float64, and
// the column sums of each block of rows in float32 before they are added
// in float64.
func layerNormBackward32(grad, x, mean, rstd, weight *Tensor, rows, cols int) (dx, dweight, dbias *Tensor) {
	g, _ := cpuDense[float32](grad)
	xd, _ := cpuDense[float32](x)
	md, _ := cpuDense[float32](mean)
	rd, _ := cpuDense[float32](rstd)
	var w []float32
	if weight != nil {
		w, _ = cpuDense[float32](weight)
	}
	be := grad.st.backend
	dx = emptyOut(be, Float32, grad.shape)
	dd := dx.st.buf.(*cpuBuffer).data.([]float32)
	blocks := (rows + layerNormRowBlock - 1) / layerNormRowBlock
	part := make([]float64, blocks*2*cols)
	unit := layerNormRowBlock * cols
	n := float64(cols)
	parallelFor(rows*cols, unit, func(lo, hi int) {
		scratch := make([]float32, 5*cols)
		xh, gw, t := scratch[:cols], scratch[cols:2*cols], scratch[2*cols:3*cols]
		sb, sw := scratch[3*cols:4*cols], scratch[4*cols:]
		for b := lo / unit; b < (hi+unit-1)/unit; b++ {
			clear(sb)
			clear(sw)
			for r := b * layerNormRowBlock; r < min((b+1)*layerNormRowBlock, rows); r++ {
				gr, dr := g[r*cols:(r+1)*cols], dd[r*cols:(r+1)*cols]
				rs := rd[r]
				vec.SubConst(xh, xd[r*cols:(r+1)*cols], md[r])
				vec.MulConst(xh, xh, rs)
				vec.Add(sb, sb, gr)
				vec.Mul(t, gr, xh)
				vec.Add(sw, sw, t)
				gwr := gr
				if w != nil {
					vec.Mul(gw, gr, w)
					gwr = gw
					vec.Mul(t, gw, xh)
				}
				// t holds gw·x̂, its products rounded to float32.
				m1, m2 := vec.Sum(gwr)/n, vec.Sum(t)/n
				// dx = rstd·(gw - m1 - x̂·m2)
				vec.MulConst(t, xh, float32(m2))
				vec.Sub(t, gwr, t)
				vec.MulConst(dr, t, rs)
				vec.AddConst(dr, dr, float32(-m1*float64(rs)))
			}
			pb := part[b*2*cols : (b+1)*2*cols]
			for i := range cols {
				pb[i], pb[cols+i] = float64(sb[i]), float64(sw[i])
			}
		}
	})
	dweight, dbias = layerNormParamGrads[float32](be, part, blocks, cols)
	return dx, dweight, dbias
}
