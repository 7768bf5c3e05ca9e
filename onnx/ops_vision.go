package onnx

import (
	"fmt"
	"math"
	"sort"

	"github.com/emberml/ember/tensor"
)

// Vision operators computed on the host in float64: NonMaxSuppression,
// GridSample, MaxUnpool, RoiAlign, and the determinant Det.

func visionOps() opTable {
	return opTable{
		"NonMaxSuppression": {{since: 10, impl: opNMS}},
		"GridSample":        {{since: 16, impl: opGridSample}},
		"MaxUnpool":         {{since: 9, impl: opMaxUnpool}},
		"Det":               {{since: 11, impl: opDet}},
		// RoiAlign-10 always sampled as coordinate_transformation_mode
		// "output_half_pixel" does; opset 16 added the attribute, defaulting
		// to "half_pixel".
		"RoiAlign":   {{since: 10, until: 15, impl: roiAlign("output_half_pixel")}, {since: 16, impl: roiAlign("")}},
		"DeformConv": {{since: 19, impl: opDeformConv}},
		"Col2Im":     {{since: 18, impl: opCol2Im}},
		"AffineGrid": {{since: 20, impl: opAffineGrid}},
	}
}

// roiAlign returns RoiAlign: each region of interest (x1, y1, x2, y2 in
// input coordinates times spatial_scale) of image batch_indices[r] is cut
// into output_height × output_width bins, each bin sampled on a grid of
// sampling_ratio² points (adaptive, ceil(bin size), when 0) by bilinear
// interpolation, and the samples averaged (mode "avg") or, in mode "max",
// reduced to the largest weighted corner term, as ONNX Runtime defines it.
// mode fixes the coordinate transformation ("" reads the attribute).
func roiAlign(fixedMode string) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		mode := fixedMode
		args, err := n.needFirst(in, 3)
		if err != nil {
			return nil, err
		}
		x, rois, bt := args[0], args[1], args[2]
		if err := n.wantFloat(x, 0); err != nil {
			return nil, err
		}
		xs := x.Shape()
		if len(xs) != 4 {
			return nil, fmt.Errorf("onnx: %v: input %v must be [N, C, H, W]", n, xs)
		}
		nr := bt.Numel()
		if rs := rois.Shape(); len(rs) != 2 || rs[1] != 4 || rs[0] != nr || bt.Dim() != 1 {
			return nil, fmt.Errorf("onnx: %v: rois %v must be [num_rois, 4] and batch_indices %v [num_rois]", n, rs, bt.Shape())
		}
		if mode == "" {
			mode = n.attrString("coordinate_transformation_mode", "half_pixel")
		}
		if mode != "half_pixel" && mode != "output_half_pixel" {
			return nil, fmt.Errorf("onnx: %v: unknown coordinate_transformation_mode %q", n, mode)
		}
		pool := n.attrString("mode", "avg")
		if pool != "avg" && pool != "max" {
			return nil, fmt.Errorf("onnx: %v: unknown mode %q", n, pool)
		}
		oh, ow := int(n.attrInt("output_height", 1)), int(n.attrInt("output_width", 1))
		ratio := int(n.attrInt("sampling_ratio", 0))
		if oh <= 0 || ow <= 0 || ratio < 0 {
			return nil, fmt.Errorf("onnx: %v: output size %d×%d must be positive and sampling_ratio %d not negative", n, oh, ow, ratio)
		}
		outShape := []int{nr, xs[1], oh, ow}
		if err := n.checkShape(outShape, tensor.Float64); err != nil {
			return nil, err
		}
		scale := n.attrFloat("spatial_scale", 1)
		offset := 0.0
		if mode == "half_pixel" {
			offset = 0.5
		}
		src, boxes, batch := x.Float64s(), rois.Float64s(), ints(bt)
		c, h, w := xs[1], xs[2], xs[3]
		dst := make([]float64, prod(outShape))
		for r := range nr {
			b := batch[r]
			if b < 0 || b >= xs[0] {
				return nil, fmt.Errorf("onnx: %v: batch index %d of roi %d outside [0, %d)", n, b, r, xs[0])
			}
			box := boxes[4*r : 4*r+4]
			x0, y0 := box[0]*scale-offset, box[1]*scale-offset
			rw, rh := box[2]*scale-offset-x0, box[3]*scale-offset-y0
			if mode == "output_half_pixel" {
				rw, rh = max(rw, 1), max(rh, 1)
			}
			bw, bh := rw/float64(ow), rh/float64(oh)
			gh, gw := ratio, ratio
			if ratio == 0 {
				gh, gw = int(math.Ceil(rh/float64(oh))), int(math.Ceil(rw/float64(ow)))
			}
			if gh*gw > int(n.maxElements) {
				return nil, fmt.Errorf("onnx: %v: roi %d needs a %d×%d sampling grid per bin", n, r, gh, gw)
			}
			count := float64(max(gh*gw, 1))
			for ch := range c {
				plane := src[(b*c+ch)*h*w : (b*c+ch+1)*h*w]
				out := dst[(r*c+ch)*oh*ow : (r*c+ch+1)*oh*ow]
				for py := range oh {
					for px := range ow {
						acc := 0.0
						if pool == "max" {
							acc = math.Inf(-1)
						}
						for iy := range gh {
							sy := y0 + float64(py)*bh + (float64(iy)+0.5)*bh/float64(gh)
							for ix := range gw {
								sx := x0 + float64(px)*bw + (float64(ix)+0.5)*bw/float64(gw)
								terms := bilinearTerms(plane, h, w, sy, sx)
								if pool == "avg" {
									acc += terms[0] + terms[1] + terms[2] + terms[3]
								} else {
									acc = max(acc, terms[0], terms[1], terms[2], terms[3])
								}
							}
						}
						if pool == "avg" {
							acc /= count
						} else if gh*gw == 0 {
							acc = 0
						}
						out[py*ow+px] = acc
					}
				}
			}
		}
		return one(tensor.FromSlice(dst, outShape...).To(x.DType()))
	}
}

// bilinearTerms returns the four weighted corner values whose sum is the
// bilinear interpolation of plane ([h, w]) at (y, x). A point more than
// one pixel outside the plane contributes zeros; one within that margin is
// clamped to the border.
func bilinearTerms(plane []float64, h, w int, y, x float64) [4]float64 {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return [4]float64{}
	}
	y, x = max(y, 0), max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, float64(h-1)
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, float64(w-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	return [4]float64{
		hy * hx * plane[yl*w+xl], hy * lx * plane[yl*w+xh],
		ly * hx * plane[yh*w+xl], ly * lx * plane[yh*w+xh],
	}
}

func opNMS(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	boxes, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	scores, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	maxOut := int64(0)
	if t := arg(in, 2); t != nil && t.Numel() > 0 {
		maxOut = int64(t.Reshape(-1).At(0))
	}
	iouTh, scoreTh := 0.0, math.Inf(-1)
	if t := arg(in, 3); t != nil && t.Numel() > 0 {
		iouTh = t.Reshape(-1).At(0)
	}
	if t := arg(in, 4); t != nil && t.Numel() > 0 {
		scoreTh = t.Reshape(-1).At(0)
	}
	bs, ss := boxes.Shape(), scores.Shape()
	if len(bs) != 3 || bs[2] != 4 || len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		return nil, fmt.Errorf("onnx: %v: boxes %v and scores %v do not fit", n, bs, ss)
	}
	center := n.attrInt("center_point_box", 0) == 1
	bv, sv := boxes.Float64s(), scores.Float64s()
	nb, nc, nbox := bs[0], ss[1], bs[1]
	corners := func(b, i int) (y1, x1, y2, x2 float64) {
		v := bv[(b*nbox+i)*4:]
		if center {
			xc, yc, w, h := v[0], v[1], v[2], v[3]
			return yc - h/2, xc - w/2, yc + h/2, xc + w/2
		}
		return min(v[0], v[2]), min(v[1], v[3]), max(v[0], v[2]), max(v[1], v[3])
	}
	iou := func(b, i, j int) float64 {
		ay1, ax1, ay2, ax2 := corners(b, i)
		by1, bx1, by2, bx2 := corners(b, j)
		ih := max(0, min(ay2, by2)-max(ay1, by1))
		iw := max(0, min(ax2, bx2)-max(ax1, bx1))
		inter := ih * iw
		union := (ay2-ay1)*(ax2-ax1) + (by2-by1)*(bx2-bx1) - inter
		if union <= 0 {
			return 0
		}
		return inter / union
	}
	var out []int64
	for b := range nb {
		for c := range nc {
			s := sv[(b*nc+c)*nbox:][:nbox]
			var cand []int
			for i, v := range s {
				if v > scoreTh {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(x, y int) bool { return s[cand[x]] > s[cand[y]] })
			var kept []int
			for _, i := range cand {
				if int64(len(kept)) >= maxOut {
					break
				}
				ok := true
				for _, j := range kept {
					if iou(b, i, j) > iouTh {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					out = append(out, int64(b), int64(c), int64(i))
				}
			}
		}
	}
	if out == nil {
		out = []int64{}
	}
	return one(tensor.FromSlice(out, len(out)/3, 3))
}

// reflectCoord reflects x into [lo2/2, hi2/2] (PyTorch's grid sampler).
func reflectCoord(x float64, lo2, hi2 int) float64 {
	if lo2 == hi2 {
		return 0
	}
	lo := float64(lo2) / 2
	span := float64(hi2-lo2) / 2
	x = math.Abs(x - lo)
	extra := math.Mod(x, span)
	if int(math.Floor(x/span))%2 == 0 {
		return extra + lo
	}
	return span - extra + lo
}

func opGridSample(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	grid, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	xs, gs := x.Shape(), grid.Shape()
	if len(xs) == 5 {
		y, err := gridSample3d(n, x, grid)
		if err != nil {
			return nil, err
		}
		return one(y)
	}
	if len(xs) != 4 || len(gs) != 4 || gs[0] != xs[0] || gs[3] != 2 {
		return nil, fmt.Errorf("onnx: %v: input %v and grid %v must be [N, C, H, W] and [N, Ho, Wo, 2]", n, xs, gs)
	}
	mode := n.attrString("mode", "bilinear")
	switch mode {
	case "linear":
		mode = "bilinear"
	case "cubic":
		mode = "bicubic"
	}
	padMode := n.attrString("padding_mode", "zeros")
	align := n.attrInt("align_corners", 0) == 1
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	Ho, Wo := gs[1], gs[2]
	if err := n.checkShape([]int{N, C, Ho, Wo}, tensor.Float64); err != nil {
		return nil, err
	}
	xv, gv := x.Float64s(), grid.Float64s()
	out := make([]float64, N*C*Ho*Wo)
	unnorm := func(c float64, size int) float64 {
		if align {
			return (c + 1) / 2 * float64(size-1)
		}
		return ((c+1)*float64(size) - 1) / 2
	}
	fix := func(c float64, size int) float64 { // padding for the sample coordinate
		switch padMode {
		case "border":
			return min(max(c, 0), float64(size-1))
		case "reflection":
			if align {
				c = reflectCoord(c, 0, 2*(size-1))
			} else {
				c = reflectCoord(c, -1, 2*size-1)
			}
			return min(max(c, 0), float64(size-1))
		}
		return c
	}
	for b := range N {
		for i := range Ho {
			for j := range Wo {
				g := gv[((b*Ho+i)*Wo+j)*2:]
				ix, iy := unnorm(g[0], W), unnorm(g[1], H)
				for c := range C {
					plane := xv[(b*C+c)*H*W:][:H*W]
					at := func(yy, xx int) float64 {
						if yy >= 0 && yy < H && xx >= 0 && xx < W {
							return plane[yy*W+xx]
						}
						return 0
					}
					var v float64
					switch mode {
					case "nearest":
						fx, fy := fix(ix, W), fix(iy, H)
						v = at(int(math.RoundToEven(fy)), int(math.RoundToEven(fx)))
					case "bilinear":
						fx, fy := fix(ix, W), fix(iy, H)
						x0, y0 := int(math.Floor(fx)), int(math.Floor(fy))
						tx, ty := fx-float64(x0), fy-float64(y0)
						v = at(y0, x0)*(1-tx)*(1-ty) + at(y0, x0+1)*tx*(1-ty) +
							at(y0+1, x0)*(1-tx)*ty + at(y0+1, x0+1)*tx*ty
					case "bicubic":
						x0, y0 := int(math.Floor(ix)), int(math.Floor(iy))
						cx, cy := cubicCoeffs(-0.75, ix-float64(x0)), cubicCoeffs(-0.75, iy-float64(y0))
						tap := func(yy, xx int) float64 {
							if padMode == "zeros" {
								return at(yy, xx)
							}
							return at(int(fix(float64(yy), H)), int(fix(float64(xx), W)))
						}
						for p := range 4 {
							for q := range 4 {
								v += cy[p] * cx[q] * tap(y0-1+p, x0-1+q)
							}
						}
					default:
						return nil, fmt.Errorf("onnx: %v: unknown mode %q", n, mode)
					}
					out[((b*C+c)*Ho+i)*Wo+j] = v
				}
			}
		}
	}
	return one(tensor.FromSlice(out, N, C, Ho, Wo).To(x.DType()))
}

func opMaxUnpool(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	k := len(xs) - 2
	if k < 1 {
		return nil, fmt.Errorf("onnx: %v: input %v has no spatial axes", n, xs)
	}
	kernel := toInts(n.attrInts("kernel_shape"))
	if len(kernel) != k {
		return nil, fmt.Errorf("onnx: %v: kernel_shape %v must have %d entries", n, kernel, k)
	}
	stride, err := n.intsOr("strides", k, 1)
	if err != nil {
		return nil, err
	}
	pads, err := n.intsOr("pads", 2*k, 0)
	if err != nil {
		return nil, err
	}
	shape := append([]int(nil), xs...)
	for i := range k {
		shape[2+i] = (xs[2+i]-1)*stride[i] + kernel[i] - pads[i] - pads[k+i]
	}
	// Indices are positions in the default output shape; an explicit
	// output_shape re-places each at the same coordinates.
	def := shape
	if t := arg(in, 2); t != nil {
		shape = ints(t)
		if len(shape) != len(def) {
			return nil, fmt.Errorf("onnx: %v: output_shape %v must have rank %d", n, shape, len(def))
		}
	}
	if err := n.checkShape(shape, x.DType()); err != nil {
		return nil, err
	}
	total, defTotal := prod(shape), int64(prod(def))
	out := make([]float64, total)
	vals, pos := x.Float64s(), idx.Int64s()
	if len(pos) != len(vals) {
		return nil, fmt.Errorf("onnx: %v: %d indices for %d values", n, len(pos), len(vals))
	}
	coord := make([]int, len(def))
	for i, p := range pos {
		if p < 0 || p >= defTotal {
			return nil, fmt.Errorf("onnx: %v: index %d out of range for output %v", n, p, def)
		}
		for a := len(def) - 1; a >= 0; a-- {
			coord[a] = int(p % int64(def[a]))
			p /= int64(def[a])
		}
		flat, ok := 0, true
		for a, c := range coord {
			ok = ok && c < shape[a]
			flat = flat*shape[a] + c
		}
		if ok {
			out[flat] = vals[i]
		}
	}
	return one(tensor.FromSlice(out, shape...).To(x.DType()))
}

// opDet computes determinants of the trailing square matrices by LU
// decomposition with partial pivoting.
func opDet(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) < 2 || s[len(s)-1] != s[len(s)-2] {
		return nil, fmt.Errorf("onnx: %v: input %v must end in square matrices", n, s)
	}
	m := s[len(s)-1]
	v := x.Float64s()
	count := prod(s[:len(s)-2])
	out := make([]float64, count)
	for b := range count {
		a := append([]float64(nil), v[b*m*m:(b+1)*m*m]...)
		det := 1.0
		for c := range m {
			p := c
			for r := c + 1; r < m; r++ {
				if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
					p = r
				}
			}
			if a[p*m+c] == 0 {
				det = 0
				break
			}
			if p != c {
				for k := range m {
					a[p*m+k], a[c*m+k] = a[c*m+k], a[p*m+k]
				}
				det = -det
			}
			det *= a[c*m+c]
			for r := c + 1; r < m; r++ {
				f := a[r*m+c] / a[c*m+c]
				for k := c; k < m; k++ {
					a[r*m+k] -= f * a[c*m+k]
				}
			}
		}
		out[b] = det
	}
	return one(tensor.FromSlice(out, s[:len(s)-2]...).To(x.DType()))
}

// opCol2Im folds columns ([N, C·∏block, L]) back into images ([N, C,
// image...]), summing where blocks overlap: the inverse arrangement of
// im2col, as torch.nn.functional.fold, for any number of spatial axes.
func opCol2Im(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	x, image, block := args[0], ints(args[1]), ints(args[2])
	if err := n.wantFloat(x, 0); err != nil {
		return nil, err
	}
	k := len(image)
	xs := x.Shape()
	if k == 0 || len(block) != k || len(xs) != 3 {
		return nil, fmt.Errorf("onnx: %v: input %v must be [N, C·∏block, L] with image_shape %v and block_shape %v of one length", n, xs, image, block)
	}
	sp, err := n.spatialParams(image, block)
	if err != nil {
		return nil, err
	}
	kvol := prod(block)
	if xs[1]%kvol != 0 {
		return nil, fmt.Errorf("onnx: %v: %d columns rows are not a multiple of the block volume %d", n, xs[1], kvol)
	}
	c := xs[1] / kvol
	blocks := make([]int, k) // block positions along each axis
	for i := range k {
		span := image[i] + sp.padBegin[i] + sp.padEnd[i] - sp.dilation[i]*(block[i]-1) - 1
		if image[i] <= 0 || span < 0 {
			return nil, fmt.Errorf("onnx: %v: block %v does not fit image %v with its padding", n, block, image)
		}
		blocks[i] = span/sp.stride[i] + 1
	}
	if prod(blocks) != xs[2] {
		return nil, fmt.Errorf("onnx: %v: %d blocks given, image %v holds %d", n, xs[2], image, prod(blocks))
	}
	outShape := append([]int{xs[0], c}, image...)
	if err := n.checkShape(outShape, tensor.Float64); err != nil {
		return nil, err
	}
	src := x.Float64s()
	vol := prod(image)
	dst := make([]float64, xs[0]*c*vol)
	off, pos := make([]int, k), make([]int, k)
	for r := range xs[0] * c { // one (image, channel) pair at a time
		cols := src[r*kvol*xs[2] : (r+1)*kvol*xs[2]]
		img := dst[r*vol : (r+1)*vol]
		for kk := range kvol {
			unravelInto(off, kk, block)
			for l := range xs[2] {
				unravelInto(pos, l, blocks)
				at, inside := 0, true
				for i := range k {
					p := pos[i]*sp.stride[i] - sp.padBegin[i] + off[i]*sp.dilation[i]
					if p < 0 || p >= image[i] {
						inside = false
						break
					}
					at = at*image[i] + p
				}
				if inside {
					img[at] += cols[kk*xs[2]+l]
				}
			}
		}
	}
	return one(tensor.FromSlice(dst, outShape...).To(x.DType()))
}

// unravelInto writes the row-major multi-index of flat index i in shape.
func unravelInto(idx []int, i int, shape []int) {
	for a := len(shape) - 1; a >= 0; a-- {
		idx[a], i = i%shape[a], i/shape[a]
	}
}

// opAffineGrid returns the sampling grid ([N, H, W, 2] or [N, D, H, W, 3])
// of affine transforms theta ([N, 2, 3] or [N, 3, 4]) for an output of
// size [N, C, H, W] or [N, C, D, H, W], as torch.nn.functional.affine_grid:
// normalized coordinates in [-1, 1] at pixel centres (align_corners 0) or
// corners (1), x first.
func opAffineGrid(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	theta, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	st, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	size := ints(st)
	k := len(size) - 2 // spatial axes: 2 or 3
	ts := theta.Shape()
	if (k != 2 && k != 3) || len(ts) != 3 || ts[0] != size[0] || ts[1] != k || ts[2] != k+1 {
		return nil, fmt.Errorf("onnx: %v: theta %v does not fit size %v (want [N, 2, 3] with [N, C, H, W] or [N, 3, 4] with [N, C, D, H, W])", n, ts, size)
	}
	spatial := size[2:]
	outShape := append(append([]int{size[0]}, spatial...), k)
	for _, d := range outShape {
		if d < 0 {
			return nil, fmt.Errorf("onnx: %v: negative size %v", n, size)
		}
	}
	if err := n.checkShape(outShape, tensor.Float64); err != nil {
		return nil, err
	}
	align := n.attrInt("align_corners", 0) == 1
	// coord(i, m) is the normalized position of index i of m.
	coord := func(i, m int) float64 {
		if align {
			if m == 1 {
				return 0
			}
			return -1 + 2*float64(i)/float64(m-1)
		}
		return (2*float64(i)+1)/float64(m) - 1
	}
	th := theta.Float64s()
	vol := prod(spatial)
	dst := make([]float64, size[0]*vol*k)
	idx := make([]int, k)
	base := make([]float64, k+1)
	for b := range size[0] {
		t := th[b*k*(k+1) : (b+1)*k*(k+1)]
		for p := range vol {
			unravelInto(idx, p, spatial)
			// base is (x, y[, z], 1): the last spatial axis is x.
			for a := range k {
				base[a] = coord(idx[k-1-a], spatial[k-1-a])
			}
			base[k] = 1
			out := dst[(b*vol+p)*k : (b*vol+p+1)*k]
			for r := range k {
				sum := 0.0
				for j := range k + 1 {
					sum += t[r*(k+1)+j] * base[j]
				}
				out[r] = sum
			}
		}
	}
	return one(tensor.FromSlice(dst, outShape...).To(theta.DType()))
}
