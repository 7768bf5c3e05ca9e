package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// opDeformConv is DeformConv (opset 19), the deformable convolution of
// torchvision.ops.deform_conv2d: every kernel tap of every output position
// samples the input at its regular place moved by a learned (dy, dx)
// offset, by bilinear interpolation with zeros outside the image,
// optionally scaled by a mask, and the samples are then combined with the
// weights as an ordinary grouped convolution would combine them. Offsets
// and masks come in offset_group sets, each for C/offset_group consecutive
// input channels.
func opDeformConv(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	x, w, off := args[0], args[1], args[2]
	if err := n.wantFloat(x, 0); err != nil {
		return nil, err
	}
	xs, ws, os := x.Shape(), w.Shape(), off.Shape()
	if len(xs) != 4 || len(ws) != 4 || len(os) != 4 {
		return nil, fmt.Errorf("onnx: %v: X %v, W %v and offset %v must all be 4-d (2-d deformable convolution)", n, xs, ws, os)
	}
	nb, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	oc, kh, kw := ws[0], ws[2], ws[3]
	groups, offGroups := int(n.attrInt("group", 1)), int(n.attrInt("offset_group", 1))
	if groups <= 0 || offGroups <= 0 || c%groups != 0 || oc%groups != 0 || ws[1] != c/groups || c%offGroups != 0 {
		return nil, fmt.Errorf("onnx: %v: X %v, W %v, group %d and offset_group %d do not fit", n, xs, ws, groups, offGroups)
	}
	if ks := toInts(n.attrInts("kernel_shape")); ks != nil && (len(ks) != 2 || ks[0] != kh || ks[1] != kw) {
		return nil, fmt.Errorf("onnx: %v: kernel_shape %v contradicts W %v", n, ks, ws)
	}
	sp, err := n.spatialParams(xs[2:], []int{kh, kw})
	if err != nil {
		return nil, err
	}
	if err := n.checkSizes(xs, oc, c, sp, x.DType()); err != nil {
		return nil, err
	}
	oh := (h+sp.padBegin[0]+sp.padEnd[0]-sp.dilation[0]*(kh-1)-1)/sp.stride[0] + 1
	ow := (wd+sp.padBegin[1]+sp.padEnd[1]-sp.dilation[1]*(kw-1)-1)/sp.stride[1] + 1
	taps := kh * kw
	if os[0] != nb || os[1] != 2*offGroups*taps || os[2] != oh || os[3] != ow {
		return nil, fmt.Errorf("onnx: %v: offset %v, want [%d, %d, %d, %d]", n, os, nb, 2*offGroups*taps, oh, ow)
	}
	var mask []float64
	if m := arg(in, 4); m != nil {
		if ms := m.Shape(); len(ms) != 4 || ms[0] != nb || ms[1] != offGroups*taps || ms[2] != oh || ms[3] != ow {
			return nil, fmt.Errorf("onnx: %v: mask %v, want [%d, %d, %d, %d]", n, ms, nb, offGroups*taps, oh, ow)
		}
		mask = m.Float64s()
	}
	src, offs := x.Float64s(), off.Float64s()
	p := oh * ow
	// cols holds, per image, the sampled input [C·kh·kw, oh·ow], laid out
	// as im2col lays out an ordinary convolution's.
	cols := make([]float64, nb*c*taps*p)
	perOff := c / offGroups
	for b := range nb {
		for ch := range c {
			g := ch / perOff
			plane := src[(b*c+ch)*h*wd : (b*c+ch+1)*h*wd]
			for t := range taps {
				i, j := t/kw, t%kw
				dy := offs[((b*2*offGroups*taps)+(g*taps+t)*2)*p:]
				dx := offs[((b*2*offGroups*taps)+(g*taps+t)*2+1)*p:]
				row := cols[((b*c+ch)*taps+t)*p : ((b*c+ch)*taps+t+1)*p]
				for q := range p {
					y := float64((q/ow)*sp.stride[0]-sp.padBegin[0]+i*sp.dilation[0]) + dy[q]
					xx := float64((q%ow)*sp.stride[1]-sp.padBegin[1]+j*sp.dilation[1]) + dx[q]
					v := bilinearZero(plane, h, wd, y, xx)
					if mask != nil {
						v *= mask[((b*offGroups+g)*taps+t)*p+q]
					}
					row[q] = v
				}
			}
		}
	}
	// Per image and group: W_g [oC/g, C/g·taps] times cols_g [C/g·taps, P].
	colT := tensor.FromSlice(cols, nb, groups, c/groups*taps, p).To(x.DType())
	wT := w.To(x.DType()).Reshape(1, groups, oc/groups, c/groups*taps)
	y := wT.MatMul(colT).Reshape(nb, oc, oh, ow)
	if bias := arg(in, 3); bias != nil {
		if bias.Numel() != oc {
			return nil, fmt.Errorf("onnx: %v: bias %v must hold %d values", n, bias.Shape(), oc)
		}
		y = y.Add(bias.To(x.DType()).Reshape(1, oc, 1, 1))
	}
	return one(y)
}

// bilinearZero interpolates plane ([h, w]) at (y, x), reading zeros
// outside the plane: each of the four neighbours that lies outside adds
// nothing, and a point a whole pixel or more outside gives 0.
func bilinearZero(plane []float64, h, w int, y, x float64) float64 {
	if y <= -1 || y >= float64(h) || x <= -1 || x >= float64(w) {
		return 0
	}
	y0, x0 := floorInt(y), floorInt(x)
	ly, lx := y-float64(y0), x-float64(x0)
	at := func(r, c int) float64 {
		if r < 0 || r >= h || c < 0 || c >= w {
			return 0
		}
		return plane[r*w+c]
	}
	return (1-ly)*(1-lx)*at(y0, x0) + (1-ly)*lx*at(y0, x0+1) + ly*(1-lx)*at(y0+1, x0) + ly*lx*at(y0+1, x0+1)
}

// floorInt is ⌊v⌋ for v > -1 (int conversion truncates towards zero).
func floorInt(v float64) int {
	if v < 0 {
		return -1
	}
	return int(v)
}
