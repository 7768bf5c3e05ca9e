package cpu

import (
	"fmt"
	"sync"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/emberml/ember/tensor/internal/parallel"
	"github.com/emberml/ember/tensor/internal/pool"
	"github.com/emberml/ember/tensor/internal/vec"
)

// The float32 convolution driver: each image of the batch is lowered on its
// own into a [C/groups*KH*KW, OH*OW] column matrix laid out as the GEMM's
// right operand, and the product with the weight is written straight into
// that image's [O, OH*OW] slice of the NCHW output, so no transposes or
// batch-sized temporaries are needed. A batch of several images is spread
// across goroutines whole (one image after another per goroutine, each with
// a single-threaded GEMM and its own column buffer, which stays in cache);
// a single image uses all threads inside the GEMM and im2col instead. The
// GEMM's reduction order does not depend on how it is split, so forward and
// input-gradient results do not depend on the thread count.

// convScratch recycles column and partial-gradient buffers between calls,
// like the GEMM's packing buffers: scratch that never escapes a call.
var convScratch pool.Pool[float32]

// pointwise reports whether g is a 1x1, stride-1, unpadded convolution,
// whose column matrix is the input image itself.
func (g *ConvGeom) pointwise() bool {
	return g.KH == 1 && g.KW == 1 && g.StrideH == 1 && g.StrideW == 1 && g.PadH == 0 && g.PadW == 0
}

// imageGeom returns the geometry of one group of one image: N = 1 and
// C = channels.
func (g ConvGeom) imageGeom(channels int) ConvGeom {
	g.N, g.C = 1, channels
	return g
}

// forImages calls f(n, threads) for each of the n images: spread whole
// over up to threads goroutines (f then gets threads = 1) when there are
// several images, else on the calling goroutine with all the threads.
// worker numbers the goroutine, in [0, workers). Batches of less than
// parallelMinWork multiply-adds in all stay on the calling goroutine.
func forImages(n, imageWork, threads int, f func(worker, img, threads int)) (workers int) {
	workers = min(threads, n)
	if workers <= 1 || n*imageWork < parallelMinWork {
		for i := range n {
			f(0, i, max(threads, 1))
		}
		return min(n, 1)
	}
	per := (n + workers - 1) / workers
	workers = (n + per - 1) / per
	parallel.Run(workers, func(wk int) {
		for i := wk * per; i < min((wk+1)*per, n); i++ {
			f(wk, i, 1)
		}
	})
	return workers
}

// im2colImage lowers channels [c0, c0+gg.C) of one image into col using
// threads goroutines.
func im2colImage(col, img []float32, gg ConvGeom, threads int) {
	if threads <= 1 {
		im2colChannels(col, img, gg, 0, gg.C)
		return
	}
	Im2Col(col, img, gg)
}

// ConvForwardF32 computes dst ([N, O, OH, OW]) = the convolution of x
// ([N, C, H, W]) with w ([O, C/groups, KH, KW]) plus bias ([O], or nil),
// and then max(·, 0) when relu is set. All slices start at their first
// element and are dense. The weight is packed for the GEMM into scratch on
// every call; ConvForwardPackedF32 reuses a pack.
//
// A 3×3 unit-stride convolution with enough channels runs Winograd
// F(2×2, 3×3) (winogradForward) when its filter transform, made on every
// call here, pays for itself: see winogradPerCall.
func ConvForwardF32(dst, x, w, bias []float32, g ConvGeom, o, groups, threads int, relu bool) {
	if winogradGeom(g, groups) && winogradPerCall(g, o) {
		buf := convScratch.Get(winogradWeightsSize(o, g.C))
		ww := packWinogradWeights(*buf, w, o, g.C, true)
		winogradForward(dst, x, ww, bias, nil, g, threads, relu)
		convScratch.Put(buf)
		return
	}
	ck := g.C / groups * g.KH * g.KW
	og := o / groups
	buf := convScratch.Get(groups * gemm.PackedSize(og, ck))
	pw := packConvWeights(*buf, w, o, groups, ck)
	ConvForwardPackedF32(dst, x, pw, bias, nil, g, threads, relu)
	convScratch.Put(buf)
}

// PackedConvF32 is a float32 convolution weight ([O, C/groups, KH, KW])
// packed once, per group, into the GEMM's left-operand layout, for
// ConvForwardPackedF32, or for a 3×3 kernel that Winograd suits
// transformed for it. It is safe for concurrent use.
type PackedConvF32 struct {
	o, groups, ck int
	parts         []gemm.PackedA
	// A weight Winograd suits (winoOK) is packed on first use, for the
	// path a call takes: the direct pack (a strided call, or one of fewer
	// than winoMinTiles tiles), the Winograd transform (wino) or both.
	winoOK bool
	w      []float32
	// scale, when not nil, multiplies output channel i of w by scale[i]
	// as it is packed (a batch norm folded in), so w itself stays the
	// caller's weight and no scaled copy outlives packing.
	scale      []float32
	directOnce sync.Once
	winoOnce   sync.Once
	wino       *winogradWeights
}

// PackConvWeightsF32 packs the dense weight w ([o, cg, kh, kw]) of o
// output channels split into groups, each output channel reading cg
// input channels through a kh×kw kernel. A 3×3 kernel of one group with
// enough channels (winogradWorth) is kept as w and packed on first use,
// for Winograd (unit-stride, undilated calls with enough tiles) or the
// direct path, so that a weight only one path uses holds one pack; w
// must then stay unchanged while the pack is used.
func PackConvWeightsF32(w []float32, o, groups, cg, kh, kw int) *PackedConvF32 {
	return PackScaledConvWeightsF32(w, nil, o, groups, cg, kh, kw)
}

// PackScaledConvWeightsF32 is PackConvWeightsF32 for the weight whose
// output channel i is w's times scale[i] (scale nil: w as it is), without
// keeping a scaled copy of w: scaled rows exist only while a pack is made.
func PackScaledConvWeightsF32(w, scale []float32, o, groups, cg, kh, kw int) *PackedConvF32 {
	ck := cg * kh * kw
	if scale != nil && len(scale) != o {
		panic(fmt.Sprintf("cpu: PackScaledConvWeightsF32: %d scales for %d output channels", len(scale), o))
	}
	if groups == 1 && kh == 3 && kw == 3 && winogradWorth(cg, o) {
		return &PackedConvF32{o: o, groups: groups, ck: ck, winoOK: true, w: w, scale: scale}
	}
	return packConvWeightsFresh(scaleRows(w, scale, ck), o, groups, ck)
}

// scaleRows returns w with row i (ck values) multiplied by scale[i], in
// fresh memory, or w itself when scale is nil.
func scaleRows(w, scale []float32, ck int) []float32 {
	if scale == nil {
		return w
	}
	out := make([]float32, len(scale)*ck)
	for i, s := range scale {
		row, dst := w[i*ck:][:ck], out[i*ck:][:ck]
		for j, v := range row {
			dst[j] = v * s
		}
	}
	return out
}

// packConvWeightsFresh packs w for the direct path only, into fresh memory.
func packConvWeightsFresh(w []float32, o, groups, ck int) *PackedConvF32 {
	return packConvWeights(make([]float32, groups*gemm.PackedSize(o/groups, ck)), w, o, groups, ck)
}

// directParts returns the direct path's packed groups, packing them on
// first use for a weight Winograd suits.
func (pw *PackedConvF32) directParts() []gemm.PackedA {
	if pw.winoOK {
		pw.directOnce.Do(func() {
			pw.parts = packConvWeightsFresh(scaleRows(pw.w, pw.scale, pw.ck), pw.o, pw.groups, pw.ck).parts
		})
	}
	return pw.parts
}

// winograd returns the Winograd transform of a weight Winograd suits,
// made on first use.
func (pw *PackedConvF32) winograd() *winogradWeights {
	pw.winoOnce.Do(func() {
		cg := pw.ck / 9
		pw.wino = packWinogradWeights(make([]float32, winogradWeightsSize(pw.o, cg)), scaleRows(pw.w, pw.scale, pw.ck), pw.o, cg, false)
	})
	return pw.wino
}

// packConvWeights packs w into buf (groups·PackedSize(o/groups, ck)
// elements).
func packConvWeights(buf, w []float32, o, groups, ck int) *PackedConvF32 {
	og := o / groups
	size := gemm.PackedSize(og, ck)
	pw := &PackedConvF32{o: o, groups: groups, ck: ck, parts: make([]gemm.PackedA, groups)}
	for gi := range groups {
		pw.parts[gi] = gemm.PackAInto(buf[gi*size:][:size], false, og, ck, 1, w[gi*og*ck:], max(ck, 1))
	}
	return pw
}

// ConvForwardPackedF32 is ConvForwardF32 with the weight packed by
// PackConvWeightsF32, adding residual ([N, O, OH, OW], or nil) to the
// convolution before the ReLU: the output starts as residual plus bias and
// the matrix product accumulates onto it. The columns of each image's lowered matrix are built
// straight into the GEMM's packed panels from the image (a pointwise
// convolution reads the image as the matrix itself), so no column matrix
// is materialized. It panics if pw does not match g.
func ConvForwardPackedF32(dst, x []float32, pw *PackedConvF32, bias, residual []float32, g ConvGeom, threads int, relu bool) {
	o, groups := pw.o, pw.groups
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	if ck != pw.ck || g.C%groups != 0 {
		panic(fmt.Sprintf("cpu: ConvForwardPackedF32: weights packed for %d groups of %d values per output channel do not fit %d input channels with a %dx%d kernel", groups, pw.ck, g.C, g.KH, g.KW))
	}
	if pw.winoOK && winogradGeom(g, groups) && winogradFits(g, o) && winogradTiles(g) >= winoMinTiles {
		winogradForward(dst, x, pw.winograd(), bias, residual, g, threads, relu)
		return
	}
	parts := pw.directParts()
	pointwise := g.pointwise()
	forImages(g.N, o*ck*l, threads, func(_, n, th int) {
		out := dst[n*o*l:][:o*l]
		var res []float32
		if residual != nil {
			res = residual[n*o*l:][:o*l]
		}
		var phaseBuf *[]float32
		if !pointwise && (g.StrideH > 1 || g.StrideW > 1) {
			hp, wp := phaseDims(g)
			phaseBuf = convScratch.Get(g.StrideH * g.StrideW * cg * hp * wp)
		}
		for gi := range groups {
			img := x[(n*g.C+gi*cg)*hw:][:cg*hw]
			var packB gemm.BPacker
			if pointwise {
				packB = gemm.DenseB(false, img, hw)
			} else {
				gg := g.imageGeom(cg)
				src := img
				if phaseBuf != nil {
					src = *phaseBuf
					splitPhases(src, img, gg, th)
				}
				packB = im2colPacker(src, gg)
			}
			ep := gemm.Epilogue{Relu: relu}
			if bias != nil || res != nil {
				ep.Init = convInit(bias, res, gi*og, l)
			}
			gemm.SgemmPackedEpilogue(th, &parts[gi], l, packB, out[gi*og*l:], l, ep)
		}
		if phaseBuf != nil {
			convScratch.Put(phaseBuf)
		}
	})
}

// convInit returns the Epilogue.Init that starts a block of one group's
// output (channels from o0, l positions each) at residual plus bias (either
// may be nil).
func convInit(bias, res []float32, o0, l int) func(c []float32, ldc, i0, m, j0, n int) {
	return func(c []float32, ldc, i0, m, j0, n int) {
		for i := range m {
			ch := o0 + i0 + i
			row := c[i*ldc:][:n]
			switch {
			case res != nil && bias != nil:
				b := bias[ch]
				for j, v := range res[ch*l+j0:][:n] {
					row[j] = v + b
				}
			case res != nil:
				copy(row, res[ch*l+j0:][:n])
			default:
				b := bias[ch]
				for j := range row {
					row[j] = b
				}
			}
		}
	}
}

// phaseDims returns the height and width of the phase planes splitPhases
// makes: ceil(H / StrideH) and ceil(W / StrideW).
func phaseDims(g ConvGeom) (hp, wp int) {
	return (g.H + g.StrideH - 1) / g.StrideH, (g.W + g.StrideW - 1) / g.StrideW
}

// splitPhases writes the StrideH·StrideW phase planes of the single image
// img (g.N = 1) into dst ([StrideH·StrideW][C][hp][wp], see phaseDims):
// phase (rh, rw) holds rows rh, rh+StrideH, ... and of each the columns
// rw, rw+StrideW, ..., so that a strided convolution reads its column
// matrix as from a unit-stride image. Phases no tap reads, and cells past
// the image (a size not divisible by the stride), are never read and are
// left as they are. Large images are split over up to threads goroutines
// by channel.
func splitPhases(dst, img []float32, g ConvGeom, threads int) {
	if threads <= 1 || g.C < 2 || g.C*g.H*g.W < parallelMinWork {
		splitPhaseChannels(dst, img, g, 0, g.C)
		return
	}
	splitRange(g.C, threads, func(c0, c1 int) { splitPhaseChannels(dst, img, g, c0, c1) })
}

// phaseUsed reports whether some tap k of a kernel of size taps, dilation
// dil and padding pad reads phase r of a stride-s axis: the 1×1 stride-2
// downsampling convolutions of ResNet read one phase in four.
func phaseUsed(r, s, taps, dil, pad int) bool {
	for k := range taps {
		if off := k*dil - pad; (off%s+s)%s == r {
			return true
		}
	}
	return false
}

// splitPhaseChannels is splitPhases for channels [c0, c1). Phases no tap
// reads are skipped.
func splitPhaseChannels(dst, img []float32, g ConvGeom, c0, c1 int) {
	sh, sw := g.StrideH, g.StrideW
	hp, wp := phaseDims(g)
	size := g.C * hp * wp
	for rh := range sh {
		if !phaseUsed(rh, sh, g.KH, g.DilationH, g.PadH) {
			continue
		}
		for rw := range sw {
			if !phaseUsed(rw, sw, g.KW, g.DilationW, g.PadW) {
				continue
			}
			ph := dst[(rh*sw+rw)*size:][:size]
			for c := c0; c < c1; c++ {
				for i, ih := 0, rh; ih < g.H; i, ih = i+1, ih+sh {
					src := img[(c*g.H+ih)*g.W:][:g.W]
					d := ph[(c*hp+i)*wp:][:wp]
					for j, iw := 0, rw; iw < g.W; j, iw = j+1, iw+sw {
						d[j] = src[iw]
					}
				}
			}
		}
	}
}

// unitView is one row (c, kh, kw) of a column matrix seen through a
// unit-stride plane: output (oh, ow) reads plane[(oh+baseH)*wp + ow+baseW]
// when oh lies in [ohLo, ohHi) and ow in [owLo, owHi), and is zero
// otherwise.
type unitView struct {
	plane                  []float32
	wp, baseH, baseW       int
	ohLo, ohHi, owLo, owHi int
}

// im2colPacker returns the BPacker of the [C*KH*KW, OH*OW] column matrix
// of one image (g.N = 1): row (c, kh, kw), column (oh, ow) holds
// img[c][oh*SH+kh*DH-PH][ow*SW+kw*DW-PW], or zero in the padding. src is
// the image itself for a unit-stride convolution, else its phase planes
// (splitPhases), so every row reads a unit-stride plane. A row whose plane
// rows are as long as the output's is copied straight into the panels
// (im2colDirect); others are lowered into a scratch row first.
func im2colPacker(src []float32, g ConvGeom) gemm.BPacker {
	taps, sh, sw := g.KH*g.KW, g.StrideH, g.StrideW
	hp, wp := g.H, g.W
	if sh > 1 || sw > 1 {
		hp, wp = phaseDims(g)
	}
	planeSize := hp * wp
	return func(dst []float32, ps, pc, kb, jc, nb, nr int) {
		rowBuf := convScratch.Get(nb)
		defer convScratch.Put(rowBuf)
		row := *rowBuf
		q0 := jc
		for p := range kb {
			r := pc + p
			c, t := r/taps, r%taps
			kh, kw := t/g.KW, t%g.KW
			offH, offW := kh*g.DilationH-g.PadH, kw*g.DilationW-g.PadW
			rh, rw := (offH%sh+sh)%sh, (offW%sw+sw)%sw
			v := unitView{plane: src[((rh*sw+rw)*g.C+c)*planeSize:][:planeSize], wp: wp, baseH: (offH - rh) / sh, baseW: (offW - rw) / sw}
			v.ohLo, v.ohHi = validRange(offH, sh, g.H, g.OH)
			v.owLo, v.owHi = validRange(offW, sw, g.W, g.OW)
			if wp == g.OW && im2colDirect(dst, &v, g.OW, q0, ps, p, nb, nr) {
				continue
			}
			im2colRow(row, &v, g.OW, q0)
			gemm.PanelRow(dst, ps, p, nr, row)
		}
	}
}

// im2colDirect packs step p of the column-matrix row v (columns q0 to
// q0+nb, output rows ow1 = OW long) straight from the plane into the
// panels, without a scratch row; v's plane rows must be ow1 long, so that
// consecutive output rows read consecutive plane rows. The valid part is
// copied in one run; the columns before and after it (output rows whose
// input row is padding), the padding columns of each output row and the
// unused columns of the last panel are then zeroed in the panels. It
// reports false, doing nothing, when no column is valid.
func im2colDirect(dst []float32, v *unitView, ow1, q0, ps, p, nb, nr int) bool {
	shift := v.baseH*v.wp + v.baseW
	q1 := q0 + nb
	qa, qb := max(q0, v.ohLo*ow1, -shift), min(q1, v.ohHi*ow1, len(v.plane)-shift)
	if qa >= qb {
		return false
	}
	gemm.PanelRowPart(dst, ps, p, nr, qa-q0, v.plane[qa+shift:qb+shift])
	zero := func(lo, hi int) {
		lo, hi = max(lo, q0)-q0, min(hi, q1)-q0
		if lo >= hi {
			return
		}
		at, off := lo/nr*ps+p*nr, lo%nr
		for range hi - lo {
			dst[at+off] = 0
			if off++; off == nr {
				at, off = at+ps, 0
			}
		}
	}
	zero(q0, qa)
	zero(qb, q1)
	if v.owLo > 0 || v.owHi < ow1 {
		for rs := (qa / ow1) * ow1; rs < qb; rs += ow1 {
			zero(max(rs, qa), min(rs+v.owLo, qb))
			zero(max(rs+v.owHi, qa), min(rs+ow1, qb))
		}
	}
	if tail := nb % nr; tail != 0 {
		clear(dst[nb/nr*ps+p*nr+tail:][:nr-tail])
	}
	return true
}

// im2colRow writes into row the columns q0, q0+1, ... (column oh*ow1+ow
// being output position (oh, ow)) of the column-matrix row v, one run per
// output row.
func im2colRow(row []float32, v *unitView, ow1, q0 int) {
	oh, ow := q0/ow1, q0%ow1
	for q := 0; q < len(row); {
		seg := min(ow1-ow, len(row)-q)
		d := row[q : q+seg]
		lo, hi := max(ow, v.owLo), min(ow+seg, v.owHi)
		if oh < v.ohLo || oh >= v.ohHi || lo >= hi {
			clear(d)
		} else {
			clear(d[:lo-ow])
			clear(d[hi-ow:])
			at := (oh+v.baseH)*v.wp + v.baseW
			copy(d[lo-ow:hi-ow], v.plane[at+lo:at+hi])
		}
		q += seg
		ow, oh = 0, oh+1
	}
}

// ConvBackwardInputF32 computes dx ([N, C, H, W]) = the gradient of ConvForwardF32 with
// respect to x given grad ([N, O, OH, OW]) and w: per image and group, the
// column gradient wᵀ·grad folded back with Col2Im (or, for a pointwise
// convolution, written into dx directly). dx need not be zeroed.
func ConvBackwardInputF32(dx, grad, w []float32, g ConvGeom, o, groups, threads int) {
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	pw := g.pointwise()
	if !pw && g.StrideH == 1 && g.StrideW == 1 && g.PadH <= (g.KH-1)*g.DilationH && g.PadW <= (g.KW-1)*g.DilationW {
		convBackwardInputAsForward(dx, grad, w, g, o, groups, threads)
		return
	}
	forImages(g.N, o*ck*l, threads, func(_, n, th int) {
		img := dx[n*g.C*hw:][:g.C*hw]
		gy := grad[n*o*l:][:o*l]
		if pw {
			for gi := range groups {
				gemm.SgemmThreads(th, true, false, cg, l, og, 1, w[gi*og*ck:], ck, gy[gi*og*l:], l, 0, img[gi*cg*hw:], hw)
			}
			return
		}
		clear(img)
		colBuf := convScratch.Get(ck * l)
		col := *colBuf
		for gi := range groups {
			gemm.SgemmThreads(th, true, false, ck, l, og, 1, w[gi*og*ck:], ck, gy[gi*og*l:], l, 0, col, l)
			gg := g.imageGeom(cg)
			part := img[gi*cg*hw:]
			if th <= 1 {
				col2imChannels(part, col, gg, 0, cg)
			} else {
				Col2Im(part, col, gg)
			}
		}
		convScratch.Put(colBuf)
	})
}

// convBackwardInputAsForward computes the input gradient of a unit-stride
// convolution as a forward convolution of grad, which needs no column
// matrix and no Col2Im: dx[c][h][w] = Σ grad[o][h+PH-kh·DH][w+PW-kw·DW] ·
// w[o][c][kh][kw] is the convolution of grad (o channels, OH×OW) with the
// weight w'[c][o][KH-1-kh][KW-1-kw] (per group: channels and output
// channels swapped, taps reversed), padded by (KH-1)·DH-PH and
// (KW-1)·DW-PW, which both must be non-negative; its output is H×W.
func convBackwardInputAsForward(dx, grad, w []float32, g ConvGeom, o, groups, threads int) {
	cg, og := g.C/groups, o/groups
	taps := g.KH * g.KW
	ck, ckT := cg*taps, og*taps
	wtBuf := convScratch.Get(g.C * ckT)
	wt := *wtBuf
	for gi := range groups {
		for oi := range og {
			src := w[(gi*og+oi)*ck:][:ck]
			for c := range cg {
				row := wt[(gi*cg+c)*ckT+oi*taps:][:taps]
				for t, v := range src[c*taps:][:taps] {
					row[taps-1-t] = v
				}
			}
		}
	}
	gt := ConvGeom{
		N: g.N, C: o, H: g.OH, W: g.OW, KH: g.KH, KW: g.KW, StrideH: 1, StrideW: 1,
		PadH: (g.KH-1)*g.DilationH - g.PadH, PadW: (g.KW-1)*g.DilationW - g.PadW,
		DilationH: g.DilationH, DilationW: g.DilationW, OH: g.H, OW: g.W,
	}
	ConvForwardF32(dx, grad, wt, nil, gt, g.C, groups, threads, false)
	convScratch.Put(wtBuf)
}

// weightGradChunkMinCols is the least C·KH·KW (the product's columns) for
// which weightGradChunks pays: narrower products (a layer of one or three
// input channels) do better one image at a time.
const weightGradChunkMinCols = 64

// weightGradChunkElems bounds the lowered matrix of one chunk of images
// in weightGradChunks (1 MiB of float32: it stays in a core's L2).
const weightGradChunkElems = 1 << 18

// weightGradChunks is ConvBackwardWeightF32 for one group that is not
// pointwise: it lowers a chunk of images at once (as many as keep the
// matrix within weightGradChunkElems) and adds grad·colᵀ for the whole
// chunk in one product, whose depth is the chunk's positions. One image
// at a time, the products of a small layer (a 3×3 layer of 16 channels on
// 14×14 images: depth 196) spent more on packing and on loading and
// storing the output tiles than on arithmetic. dw must be zero.
func weightGradChunks(dw, x, grad []float32, g ConvGeom, o, threads int) {
	ck, l, chw := g.C*g.KH*g.KW, g.OH*g.OW, g.C*g.H*g.W
	nb := max(1, min(g.N, weightGradChunkElems/max(ck*l, 1)))
	chunks := (g.N + nb - 1) / nb
	workers := min(max(threads, 1), chunks)
	if chunks*o*ck*l*nb < parallelMinWork {
		workers = 1
	}
	th := max(threads, 1)
	if workers > 1 {
		th = 1
	}
	parts := make([]*[]float32, workers)
	run := func(wk int) {
		acc := dw
		if wk > 0 {
			parts[wk] = convScratch.Get(len(dw))
			acc = *parts[wk]
			clear(acc)
		}
		colBuf := convScratch.Get(ck * nb * l)
		// One image's gradient is already [O, L]; chunks of several are
		// gathered from grad's [N, O, L] into [O, chunk·L].
		var gyBuf *[]float32
		if nb > 1 {
			gyBuf = convScratch.Get(o * nb * l)
		}
		for c := wk; c < chunks; c += workers {
			n0, n1 := c*nb, min((c+1)*nb, g.N)
			k := (n1 - n0) * l
			cg := g
			cg.N = n1 - n0
			col, gy := (*colBuf)[:ck*k], grad[n0*o*l:][:o*k]
			im2colImage(col, x[n0*chw:n1*chw], cg, th)
			if n1-n0 > 1 {
				gy = (*gyBuf)[:o*k]
				for n := n0; n < n1; n++ {
					for i := range o {
						copy(gy[i*k+(n-n0)*l:][:l], grad[(n*o+i)*l:][:l])
					}
				}
			}
			gemm.SgemmThreads(th, false, true, o, ck, k, 1, gy, k, col, k, 1, acc, ck)
		}
		convScratch.Put(colBuf)
		if gyBuf != nil {
			convScratch.Put(gyBuf)
		}
	}
	if workers == 1 {
		run(0)
		return
	}
	parallel.Run(workers, run)
	addPartials(dw, parts)
}

// ConvBackwardWeightF32 computes dw ([O, C/groups, KH, KW]) = the gradient of
// Forward with respect to w given x and grad: the sum over images of
// grad·colᵀ. Each goroutine sums its images into its own buffer and the
// buffers are added at the end.
func ConvBackwardWeightF32(dw, x, grad []float32, g ConvGeom, o, groups, threads int) {
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	pw := g.pointwise()
	size := o * ck
	clear(dw[:size])
	if groups == 1 && !pw && ck >= weightGradChunkMinCols {
		weightGradChunks(dw[:size], x, grad, g, o, threads)
		return
	}
	parts := make([]*[]float32, min(max(threads, 1), g.N))
	forImages(g.N, o*ck*l, threads, func(wk, n, th int) {
		acc := dw[:size]
		if wk > 0 {
			if parts[wk] == nil {
				parts[wk] = convScratch.Get(size)
				clear(*parts[wk])
			}
			acc = (*parts[wk])[:size]
		}
		gy := grad[n*o*l:][:o*l]
		var colBuf *[]float32
		if !pw {
			colBuf = convScratch.Get(ck * l)
		}
		for gi := range groups {
			img := x[(n*g.C+gi*cg)*hw:]
			col := img
			if !pw {
				col = *colBuf
				im2colImage(col, img, g.imageGeom(cg), th)
			}
			gemm.SgemmThreads(th, false, true, og, ck, l, 1, gy[gi*og*l:], l, col, l, 1, acc[gi*og*ck:], ck)
		}
		if colBuf != nil {
			convScratch.Put(colBuf)
		}
	})
	addPartials(dw[:size], parts)
}

// addPartials adds the weight-gradient sums of workers 1 and up (parts,
// nil for a worker that summed nothing; worker 0 sums into dw itself) into
// dw and returns their buffers to convScratch.
func addPartials(dw []float32, parts []*[]float32) {
	for _, p := range parts[1:] {
		if p != nil {
			vec.Add(dw, dw, (*p)[:len(dw)])
			convScratch.Put(p)
		}
	}
}
