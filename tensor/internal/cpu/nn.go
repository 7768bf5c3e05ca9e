package cpu

import (
	"math"

	"github.com/emberml/ember/tensor/internal/parallel"
)

// ConvGeom mirrors tensor.ConvGeom: the shape of a 2-d convolution lowered
// to a matrix product.
type ConvGeom struct {
	N, C, H, W           int
	KH, KW               int
	StrideH, StrideW     int
	PadH, PadW           int
	DilationH, DilationW int
	OH, OW               int
}

// PoolGeom mirrors tensor.PoolGeom: a pooling window over independent planes.
type PoolGeom struct {
	Planes, H, W         int
	KH, KW               int
	StrideH, StrideW     int
	PadH, PadW           int
	DilationH, DilationW int
	OH, OW               int
	CountIncludePad      bool
}

// parallelMinWork is the number of elements below which kernels stay on the
// calling goroutine: spawning costs more than it saves on small tensors.
const parallelMinWork = 1 << 15

// parallelFor runs f over [0, n) split into contiguous chunks, one per
// thread of the tensor.SetNumThreads setting (parallel.Threads), when the
// total work (n units of unitWork elements) is large enough; otherwise it
// calls f(0, n) directly. Chunks must be independent.
func parallelFor(n, unitWork int, f func(lo, hi int)) {
	workers := min(parallel.Threads(), n)
	if workers <= 1 || n*unitWork < parallelMinWork {
		f(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	parallel.Run((n+chunk-1)/chunk, func(i int) { f(i*chunk, min((i+1)*chunk, n)) })
}

// validRange returns the half-open range [lo, hi) of output positions o in
// [0, n) whose input coordinate o*stride + off lies in [0, size).
func validRange(off, stride, size, n int) (lo, hi int) {
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	if last := size - 1 - off; last >= 0 {
		hi = last/stride + 1
	}
	hi = min(hi, n)
	lo = min(lo, hi)
	return lo, hi
}

// Im2Col unfolds the [N, C, H, W] images in src into the [C*KH*KW, N*OH*OW]
// matrix dst (see tensor.NNKernels).
func Im2Col[T Float](dst, src []T, g ConvGeom) {
	taps := g.KH * g.KW
	parallelFor(g.C, taps*g.N*g.OH*g.OW, func(c0, c1 int) { im2colChannels(dst, src, g, c0, c1) })
}

// im2colChannels writes the rows of channels [c0, c1) of Im2Col's matrix.
func im2colChannels[T Float](dst, src []T, g ConvGeom, c0, c1 int) {
	l := g.OH * g.OW
	nl := g.N * l
	hw := g.H * g.W
	// A stride-1 tap of a convolution that keeps the width reads the plane
	// at one fixed offset, so its rows are one copy instead of OH short ones
	// (the rows of a 3×3 layer on 14×14 images are 14 elements: the call
	// overhead of the per-row copies cost more than the data).
	shifted := g.StrideH == 1 && g.StrideW == 1 && g.OW == g.W
	for c := c0; c < c1; c++ {
		for kh := range g.KH {
			offH := kh*g.DilationH - g.PadH
			ohLo, ohHi := validRange(offH, g.StrideH, g.H, g.OH)
			for kw := range g.KW {
				offW := kw*g.DilationW - g.PadW
				owLo, owHi := validRange(offW, g.StrideW, g.W, g.OW)
				row := dst[((c*g.KH+kh)*g.KW+kw)*nl:][:nl]
				for n := range g.N {
					plane := src[(n*g.C+c)*hw:][:hw]
					out := row[n*l:][:l]
					if shifted {
						shiftedPlane(out, plane, g.W, offH*g.W+offW, ohLo, ohHi, owLo, owHi)
						continue
					}
					clear(out[:ohLo*g.OW])
					clear(out[ohHi*g.OW:])
					for oh := ohLo; oh < ohHi; oh++ {
						ih := oh*g.StrideH + offH
						o := out[oh*g.OW:][:g.OW]
						clear(o[:owLo])
						clear(o[owHi:])
						srow := plane[ih*g.W:][:g.W]
						if g.StrideW == 1 {
							if owLo < owHi { // an empty range may start left of the row
								copy(o[owLo:owHi], srow[owLo+offW:owHi+offW])
							}
							continue
						}
						iw := owLo*g.StrideW + offW
						for ow := owLo; ow < owHi; ow++ {
							o[ow] = srow[iw]
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

// shiftedPlane writes one image's row of a stride-1 im2col whose output
// width is the input width w: out[p] = plane[p+shift] for the output rows
// [ohLo, ohHi) and columns [owLo, owHi) that read inside the plane, zero
// elsewhere. Within those rows the input is contiguous at the one offset
// shift, so a single copy moves them all; it also carries the neighbouring
// input rows into the columns outside [owLo, owHi), which are zeroed after.
func shiftedPlane[T Float](out, plane []T, w, shift, ohLo, ohHi, owLo, owHi int) {
	if ohLo >= ohHi || owLo >= owHi {
		clear(out)
		return
	}
	first, last := ohLo*w+owLo, (ohHi-1)*w+owHi
	clear(out[:first])
	copy(out[first:last], plane[first+shift:last+shift])
	clear(out[last:])
	if owLo > 0 { // columns left of the plane, in every row after the first
		for p := (ohLo + 1) * w; p < ohHi*w; p += w {
			for i := range owLo {
				out[p+i] = 0
			}
		}
	}
	if n := w - owHi; n > 0 { // columns right of it, in every row before the last
		for p := ohLo*w + owHi; p < (ohHi-1)*w; p += w {
			for i := range n {
				out[p+i] = 0
			}
		}
	}
}

// Col2Im adds the [C*KH*KW, N*OH*OW] matrix src into the [N, C, H, W]
// images dst: the adjoint of Im2Col. Channels are independent, so they run
// in parallel.
func Col2Im[T Float](dst, src []T, g ConvGeom) {
	taps := g.KH * g.KW
	parallelFor(g.C, taps*g.N*g.OH*g.OW, func(c0, c1 int) { col2imChannels(dst, src, g, c0, c1) })
}

// col2imChannels adds the rows of channels [c0, c1) of Col2Im's matrix into
// their images.
func col2imChannels[T Float](dst, src []T, g ConvGeom, c0, c1 int) {
	l := g.OH * g.OW
	nl := g.N * l
	hw := g.H * g.W
	for c := c0; c < c1; c++ {
		for kh := range g.KH {
			offH := kh*g.DilationH - g.PadH
			ohLo, ohHi := validRange(offH, g.StrideH, g.H, g.OH)
			for kw := range g.KW {
				offW := kw*g.DilationW - g.PadW
				owLo, owHi := validRange(offW, g.StrideW, g.W, g.OW)
				row := src[((c*g.KH+kh)*g.KW+kw)*nl:][:nl]
				for n := range g.N {
					plane := dst[(n*g.C+c)*hw:][:hw]
					in := row[n*l:][:l]
					for oh := ohLo; oh < ohHi; oh++ {
						ih := oh*g.StrideH + offH
						o := in[oh*g.OW:][:g.OW]
						drow := plane[ih*g.W:][:g.W]
						if g.StrideW == 1 {
							if owLo >= owHi { // an empty range may start left of the row
								continue
							}
							d := drow[owLo+offW : owHi+offW]
							for i, v := range o[owLo:owHi] {
								d[i] += v
							}
							continue
						}
						iw := owLo*g.StrideW + offW
						for ow := owLo; ow < owHi; ow++ {
							drow[iw] += o[ow]
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

// MaxPool2d writes each window's maximum into dst and its flat position in
// the plane into idx, exactly as PyTorch's CPU kernel chooses it: the first
// strict maximum in row-major window order, or the last NaN.
func MaxPool2d[T Float](dst []T, idx []int64, src []T, g PoolGeom) {
	if g.KH == 2 && g.KW == 2 && g.StrideH == 2 && g.StrideW == 2 && g.PadH == 0 && g.PadW == 0 &&
		g.DilationH == 1 && g.DilationW == 1 && 2*g.OH <= g.H && 2*g.OW <= g.W {
		maxPool2x2(dst, idx, src, g)
		return
	}
	p := newMaxPoolPlan[T](g)
	ohw, hw := g.OH*g.OW, g.H*g.W
	parallelFor(g.Planes, ohw*g.KH*g.KW, func(p0, p1 int) {
		s := p.scratch()
		for pl := p0; pl < p1; pl++ {
			out, plane := dst[pl*ohw:][:ohw], src[pl*hw:][:hw]
			p.values(out, plane, s)
			p.positions(out, idx[pl*ohw:][:ohw], plane)
		}
	})
}

// maxPool2x2 is MaxPool2d for 2×2 windows at stride 2 without padding or
// dilation, where each window is two pairs of adjacent inputs: float32
// planes go through maxPool2x2Plane32 (vectorized where the CPU allows),
// others through maxPool2x2Go.
func maxPool2x2[T Float](dst []T, idx []int64, src []T, g PoolGeom) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	d32, _ := any(dst).([]float32)
	s32, _ := any(src).([]float32)
	parallelFor(g.Planes, ohw*4, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			oidx := idx[p*ohw:][:ohw]
			if d32 != nil {
				maxPool2x2Plane32(d32[p*ohw:][:ohw], oidx, s32[p*hw:][:hw], g.OH, g.OW, g.W)
				continue
			}
			maxPool2x2Go(dst[p*ohw:][:ohw], oidx, src[p*hw:][:hw], g.OH, g.OW, g.W)
		}
	})
}

// maxPool2x2Go pools one plane of width w into oh×ow outputs and their
// positions in the plane, scanning each window in row-major order: a later
// input wins only when strictly greater or NaN.
func maxPool2x2Go[T Float](out []T, oidx []int64, plane []T, oh, ow, w int) {
	for r := range oh {
		base := 2 * r * w
		r0, r1 := plane[base:][:2*ow], plane[base+w:][:2*ow]
		o, oi := out[r*ow:][:ow], oidx[r*ow:][:ow]
		for j := range o {
			a, b := r0[2*j:][:2], r1[2*j:][:2]
			best, bi := a[0], base+2*j
			if v := a[1]; v > best || v != v {
				best, bi = v, base+2*j+1
			}
			if v := b[0]; v > best || v != v {
				best, bi = v, base+w+2*j
			}
			if v := b[1]; v > best || v != v {
				best, bi = v, base+w+2*j+1
			}
			o[j] = best
			oi[j] = int64(bi)
		}
	}
}

// MaxPool2dValues writes each window's maximum into dst, like MaxPool2d
// but without the positions, for inference: the values equal MaxPool2d's
// (a NaN in a window is its maximum), except that a window whose maximum is
// a zero holding both signs may give +0 where MaxPool2d gives the first.
func MaxPool2dValues[T Float](dst, src []T, g PoolGeom) {
	p := newMaxPoolPlan[T](g)
	parallelFor(g.Planes, g.OH*g.OW*g.KH*g.KW, func(p0, p1 int) {
		s := p.scratch()
		for pl := p0; pl < p1; pl++ {
			p.values(dst[pl*g.OH*g.OW:][:g.OH*g.OW], src[pl*g.H*g.W:][:g.H*g.W], s)
		}
	})
}

// maxPoolPlan is one max pooling's windows: output row oh reads input
// rows h0[oh], h0[oh]+DilationH, ... below h1[oh], and output column j
// input columns w0[j], ... below w1[j].
type maxPoolPlan[T Float] struct {
	g              PoolGeom
	h0, h1, w0, w1 []int
	// Output columns [fullLo, fullHi) have undilated windows of all KW
	// columns, starting at w0[j] = j·StrideW - PadW: values reads them
	// from its row of window maxima in one strided pass.
	fullLo, fullHi int
}

func newMaxPoolPlan[T Float](g PoolGeom) *maxPoolPlan[T] {
	p := &maxPoolPlan[T]{g: g}
	p.h0, p.h1 = maxWindows(g.OH, g.StrideH, g.PadH, g.KH, g.DilationH, g.H)
	p.w0, p.w1 = maxWindows(g.OW, g.StrideW, g.PadW, g.KW, g.DilationW, g.W)
	if g.DilationW == 1 && g.KW > 1 && g.KW <= g.W {
		full := func(j int) bool { return p.w1[j]-p.w0[j] == g.KW }
		for p.fullLo < g.OW && !full(p.fullLo) {
			p.fullLo++
		}
		for p.fullHi = p.fullLo; p.fullHi < g.OW && full(p.fullHi); p.fullHi++ {
		}
	}
	return p
}

// maxPoolScratch is one goroutine's rows for maxPoolPlan.values: the
// maxima down a window's rows (col) and across each full window of
// them (win).
type maxPoolScratch[T Float] struct{ col, win []T }

func (p *maxPoolPlan[T]) scratch() *maxPoolScratch[T] {
	return &maxPoolScratch[T]{col: make([]T, p.g.W), win: make([]T, p.g.W)}
}

// values pools one plane into out. Each output row takes three passes,
// all but the last vectorized (maxInto): the maxima down the window's
// input rows into s.col; for undilated windows the maxima of every run
// of KW columns of s.col into s.win; then each output reads its window's
// maximum from s.win, or for windows clipped by the padding (and dilated
// ones) takes it across s.col. Go's max throughout, so the values do not
// depend on the path.
func (p *maxPoolPlan[T]) values(out, plane []T, s *maxPoolScratch[T]) {
	g := p.g
	w, ow, dh, dw, kw := g.W, g.OW, g.DilationH, g.DilationW, g.KW
	negInf := T(math.Inf(-1))
	col := s.col
	runs := 0 // full windows of kw columns start at 0 ... runs-1
	if dw == 1 && kw > 1 && kw <= w {
		runs = w - kw + 1
	}
	for oh, ih0 := range p.h0 {
		ih1 := p.h1[oh]
		o := out[oh*ow:][:ow]
		if ih0 >= ih1 {
			for j := range o {
				o[j] = negInf
			}
			continue
		}
		copy(col, plane[ih0*w:][:w])
		for ih := ih0 + dh; ih < ih1; ih += dh {
			maxInto(col, plane[ih*w:][:w])
		}
		win := s.win[:runs]
		if runs > 0 {
			copy(win, col)
			for d := 1; d < kw; d++ {
				maxInto(win, col[d:][:runs])
			}
		}
		p.clipped(o, col, 0, p.fullLo)
		if p.fullLo < p.fullHi {
			sw, at := g.StrideW, p.w0[p.fullLo]
			for j := range o[p.fullLo:p.fullHi] {
				o[p.fullLo+j] = win[at+j*sw]
			}
		}
		p.clipped(o, col, p.fullHi, ow)
	}
}

// clipped writes outputs [j0, j1) of a row of values' from the row's
// column maxima col, one window at a time: the windows that the padding
// clips, and dilated ones.
func (p *maxPoolPlan[T]) clipped(o, col []T, j0, j1 int) {
	dw := p.g.DilationW
	for j := j0; j < j1; j++ {
		best := T(math.Inf(-1))
		for iw := p.w0[j]; iw < p.w1[j]; iw += dw {
			best = max(best, col[iw])
		}
		o[j] = best
	}
}

// positions writes into oidx the flat position in plane of each window's
// maximum in out (pooled by values) as MaxPool2d chooses it, and sets the
// value to the input there (the sign of a zero maximum): the first
// input equal to the maximum in row-major window order, found by a scan
// from the window's end that the compiler keeps branch-free, or, for a
// NaN, the last NaN; an empty window gives its start and -Inf.
func (p *maxPoolPlan[T]) positions(out []T, oidx []int64, plane []T) {
	g := p.g
	w, ow, dh, dw := g.W, g.OW, g.DilationH, g.DilationW
	for oh, ih0 := range p.h0 {
		ih1 := p.h1[oh]
		o, oi := out[oh*ow:][:ow], oidx[oh*ow:][:ow]
		lastH := ih0 + (ih1-1-ih0)/dh*dh
		for j, iw0 := range p.w0 {
			iw1 := p.w1[j]
			best, bi := o[j], ih0*w+iw0
			if best != best {
				for ih := ih0; ih < ih1; ih += dh {
					for iw := iw0; iw < iw1; iw += dw {
						if v := plane[ih*w+iw]; v != v {
							bi = ih*w + iw
						}
					}
				}
				o[j] = plane[bi]
			} else if ih0 < ih1 && iw0 < iw1 {
				lastW := iw1 - 1
				if dw > 1 {
					lastW = iw0 + (iw1-1-iw0)/dw*dw
				}
				for ih := lastH; ih >= ih0; ih -= dh {
					row := plane[ih*w:][:lastW+1]
					if dw == 1 {
						run := row[iw0:]
						for k := len(run) - 1; k >= 0; k-- {
							if run[k] == best {
								bi = ih*w + iw0 + k
							}
						}
						continue
					}
					for iw := lastW; iw >= iw0; iw -= dw {
						if row[iw] == best {
							bi = ih*w + iw
						}
					}
				}
				o[j] = plane[bi]
			}
			oi[j] = int64(bi)
		}
	}
}

// maxInto sets dst[i] = max(dst[i], src[i]) for every i of dst, with
// Go's max (NaN when either is NaN, +0 over -0); float32 runs the vector
// kernel maxInto32.
func maxInto[T Float](dst, src []T) {
	if d, ok := any(dst).([]float32); ok {
		maxInto32(d, any(src).([]float32)[:len(d)])
		return
	}
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = max(dst[i], v)
	}
}

// maxIntoGo is maxInto32's Go twin.
func maxIntoGo(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = max(dst[i], v)
	}
}

// maxWindows returns, for each of n outputs, the first input position of
// its max-pooling window inside the input (the start moved forward by the
// dilation past the padding, as PyTorch does) and the clipped end.
func maxWindows(n, stride, pad, k, dil, size int) (lo, hi []int) {
	lo, hi = make([]int, n), make([]int, n)
	for o := range n {
		s := o*stride - pad
		hi[o] = min(s+(k-1)*dil+1, size)
		for s < 0 {
			s += dil
		}
		lo[o] = s
	}
	return lo, hi
}

// PlaneGather writes dst[p*m+j] = src[p*n+idx[p*m+j]].
func PlaneGather[T Float](dst, src []T, idx []int64, planes, n, m int) {
	for p := range planes {
		s := src[p*n:][:n]
		d := dst[p*m:][:m]
		for j, i := range idx[p*m:][:m] {
			d[j] = s[i]
		}
	}
}

// PlaneScatterAdd adds src[p*m+j] into dst[p*n+idx[p*m+j]].
func PlaneScatterAdd[T Float](dst, src []T, idx []int64, planes, n, m int) {
	for p := range planes {
		d := dst[p*n:][:n]
		s := src[p*m:][:m]
		for j, i := range idx[p*m:][:m] {
			d[i] += s[j]
		}
	}
}

// avgWindow returns the clipped window [h0, h1) × [w0, w1) of output
// (oh, ow) and the divisor PyTorch uses for it.
func avgWindow(g *PoolGeom, oh, ow int) (h0, h1, w0, w1 int, div float64) {
	h0 = oh*g.StrideH - g.PadH
	w0 = ow*g.StrideW - g.PadW
	h1 = min(h0+g.KH, g.H+g.PadH)
	w1 = min(w0+g.KW, g.W+g.PadW)
	size := (h1 - h0) * (w1 - w0)
	h0, w0 = max(h0, 0), max(w0, 0)
	h1, w1 = min(h1, g.H), min(w1, g.W)
	if !g.CountIncludePad {
		size = (h1 - h0) * (w1 - w0)
	}
	return h0, h1, w0, w1, float64(size)
}

// AvgPool2d writes each window's average into dst (PyTorch's divisor rule;
// a window entirely in the padding gives zero).
func AvgPool2d[T Float](dst, src []T, g PoolGeom) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	parallelFor(g.Planes, ohw*g.KH*g.KW, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			plane := src[p*hw:][:hw]
			out := dst[p*ohw:][:ohw]
			for oh := range g.OH {
				for ow := range g.OW {
					h0, h1, w0, w1, div := avgWindow(&g, oh, ow)
					if h0 >= h1 || w0 >= w1 {
						out[oh*g.OW+ow] = 0
						continue
					}
					var s float64
					for ih := h0; ih < h1; ih++ {
						for _, v := range plane[ih*g.W+w0 : ih*g.W+w1] {
							s += float64(v)
						}
					}
					out[oh*g.OW+ow] = T(s / div)
				}
			}
		}
	})
}

// AvgPool2dBackward adds grad/divisor over each window into dst.
func AvgPool2dBackward[T Float](dst, grad []T, g PoolGeom) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	parallelFor(g.Planes, ohw*g.KH*g.KW, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			plane := dst[p*hw:][:hw]
			gr := grad[p*ohw:][:ohw]
			for oh := range g.OH {
				for ow := range g.OW {
					h0, h1, w0, w1, div := avgWindow(&g, oh, ow)
					if h0 >= h1 || w0 >= w1 {
						continue
					}
					v := T(float64(gr[oh*g.OW+ow]) / div)
					for ih := h0; ih < h1; ih++ {
						row := plane[ih*g.W+w0 : ih*g.W+w1]
						for i := range row {
							row[i] += v
						}
					}
				}
			}
		}
	})
}

// adaptiveRange returns PyTorch's adaptive pooling window for output i of n
// over an input of size size: [floor(i*size/n), ceil((i+1)*size/n)).
func adaptiveRange(i, size, n int) (lo, hi int) {
	return i * size / n, ((i+1)*size + n - 1) / n
}

// AdaptiveAvgPool2d averages [planes, h, w] src into [planes, oh, ow] dst.
func AdaptiveAvgPool2d[T Float](dst, src []T, planes, h, w, oh, ow int) {
	hw, ohw := h*w, oh*ow
	parallelFor(planes, hw, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			plane := src[p*hw:][:hw]
			out := dst[p*ohw:][:ohw]
			for i := range oh {
				h0, h1 := adaptiveRange(i, h, oh)
				for j := range ow {
					w0, w1 := adaptiveRange(j, w, ow)
					var s float64
					for ih := h0; ih < h1; ih++ {
						for _, v := range plane[ih*w+w0 : ih*w+w1] {
							s += float64(v)
						}
					}
					out[i*ow+j] = T(s / float64((h1-h0)*(w1-w0)))
				}
			}
		}
	})
}

// AdaptiveAvgPool2dBackward adds each output gradient, divided by its
// window size, over the window in dst.
func AdaptiveAvgPool2dBackward[T Float](dst, grad []T, planes, h, w, oh, ow int) {
	hw, ohw := h*w, oh*ow
	parallelFor(planes, hw, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			plane := dst[p*hw:][:hw]
			gr := grad[p*ohw:][:ohw]
			for i := range oh {
				h0, h1 := adaptiveRange(i, h, oh)
				for j := range ow {
					w0, w1 := adaptiveRange(j, w, ow)
					v := T(float64(gr[i*ow+j]) / float64((h1-h0)*(w1-w0)))
					for ih := h0; ih < h1; ih++ {
						row := plane[ih*w+w0 : ih*w+w1]
						for k := range row {
							row[k] += v
						}
					}
				}
			}
		}
	})
}

// Softmax writes the (log-)softmax along the middle axis of src laid out as
// [outer, n, inner], accumulating in float64.
func Softmax[T Float](log bool, dst, src []T, outer, n, inner int) {
	parallelFor(outer, n*inner, func(o0, o1 int) {
		var mx, sum []float64
		if inner > 1 {
			mx, sum = make([]float64, inner), make([]float64, inner)
		}
		for o := o0; o < o1; o++ {
			base := o * n * inner
			if inner == 1 {
				softmaxRow(log, dst[base:base+n], src[base:base+n])
				continue
			}
			// Strided lanes: reduce over k for all inner positions at once so
			// memory is read row by row.
			s := src[base : base+n*inner]
			d := dst[base : base+n*inner]
			for i := range mx {
				mx[i], sum[i] = math.Inf(-1), 0
			}
			for k := range n {
				for i, v := range s[k*inner : (k+1)*inner] {
					if f := float64(v); f > mx[i] || f != f {
						mx[i] = f
					}
				}
			}
			for k := range n {
				for i, v := range s[k*inner : (k+1)*inner] {
					sum[i] += math.Exp(float64(v) - mx[i])
				}
			}
			for k := range n {
				row := d[k*inner : (k+1)*inner]
				for i, v := range s[k*inner : (k+1)*inner] {
					if log {
						row[i] = T(float64(v) - mx[i] - math.Log(sum[i]))
					} else {
						row[i] = T(math.Exp(float64(v)-mx[i]) / sum[i])
					}
				}
			}
		}
	})
}

func softmaxRow[T Float](log bool, dst, src []T) {
	mx := math.Inf(-1)
	for _, v := range src {
		if f := float64(v); f > mx || f != f {
			mx = f
		}
	}
	var sum float64
	for _, v := range src {
		sum += math.Exp(float64(v) - mx)
	}
	if log {
		c := mx + math.Log(sum)
		for i, v := range src {
			dst[i] = T(float64(v) - c)
		}
		return
	}
	inv := 1 / sum
	for i, v := range src {
		dst[i] = T(math.Exp(float64(v)-mx) * inv)
	}
}

// Moments writes the mean and biased variance of src[:, j, :] (src laid out
// as [outer, n, inner]) into mean[j] and variance[j], in two passes with
// float64 accumulation.
func Moments[T Float](mean, variance, src []T, outer, n, inner int) {
	cnt := float64(outer * inner)
	parallelFor(n, outer*inner, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			var s float64
			for a := range outer {
				for _, v := range src[(a*n+j)*inner:][:inner] {
					s += float64(v)
				}
			}
			mu := s / cnt
			var q float64
			for a := range outer {
				for _, v := range src[(a*n+j)*inner:][:inner] {
					d := float64(v) - mu
					q += d * d
				}
			}
			mean[j] = T(mu)
			variance[j] = T(q / cnt)
		}
	})
}

// ScaleShift writes dst[a, j, c] = src[a, j, c]*scale[j] + shift[j]; nil
// scale means ones and nil shift zeros. dst may alias src. The rows (a, j)
// are shared among goroutines, so a batch of one image is split too.
func ScaleShift[T Float](dst, src, scale, shift []T, outer, n, inner int) {
	parallelFor(outer*n, inner, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			j := r % n
			off := r * inner
			s, d := src[off:off+inner], dst[off:off+inner]
			var k, b T = 1, 0
			if scale != nil {
				k = scale[j]
			}
			if shift != nil {
				b = shift[j]
			}
			// T(v*k) rounds the product before the sum, as the
			// vector kernels do: arm64 would otherwise fuse the two.
			for i, v := range s {
				d[i] = T(v*k) + b
			}
		}
	})
}

// NormBackward writes the per-index sums of grad and grad*xhat and,
// if dx is non-nil, the input gradient of a normalization by the
// statistics of x itself (see tensor.NNKernels). nil mean, rstd and scale
// mean 0, 1 and 1.
func NormBackward[T Float](dx, sumG, sumGX, grad, x, mean, rstd, scale []T, outer, n, inner int) {
	cnt := float64(outer * inner)
	parallelFor(n, outer*inner, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			m, r, k := 0.0, 1.0, 1.0
			if mean != nil {
				m = float64(mean[j])
			}
			if rstd != nil {
				r = float64(rstd[j])
			}
			if scale != nil {
				k = float64(scale[j])
			}
			var s1, s2 float64
			for a := range outer {
				off := (a*n + j) * inner
				xs := x[off : off+inner]
				for i, gv := range grad[off : off+inner] {
					g := float64(gv)
					s1 += g
					s2 += g * (float64(xs[i]) - m)
				}
			}
			s2 *= r
			sumG[j], sumGX[j] = T(s1), T(s2)
			if dx == nil {
				continue
			}
			kr := k * r
			m1, m2 := s1/cnt, s2/cnt
			for a := range outer {
				off := (a*n + j) * inner
				xs, gs := x[off:off+inner], grad[off:off+inner]
				d := dx[off : off+inner]
				for i := range d {
					xh := (float64(xs[i]) - m) * r
					d[i] = T(kr * (float64(gs[i]) - m1 - xh*m2))
				}
			}
		}
	})
}
