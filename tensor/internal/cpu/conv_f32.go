package cpu

import (
	"sync"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/emberml/ember/tensor/internal/pool"
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
	var wg sync.WaitGroup
	w := 0
	for lo := 0; lo < n; lo += per {
		hi, wk := min(lo+per, n), w
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				f(wk, i, 1)
			}
		})
		w++
	}
	wg.Wait()
	return w
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
// element and are dense.
func ConvForwardF32(dst, x, w, bias []float32, g ConvGeom, o, groups, threads int, relu bool) {
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	pw := g.pointwise()
	forImages(g.N, o*ck*l, threads, func(_, n, th int) {
		out := dst[n*o*l:][:o*l]
		var beta float32
		if bias != nil {
			for i, b := range bias {
				r := out[i*l:][:l]
				for j := range r {
					r[j] = b
				}
			}
			beta = 1
		}
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
			gemm.SgemmThreads(th, false, false, og, l, ck, 1, w[gi*og*ck:], ck, col, l, beta, out[gi*og*l:], l)
		}
		if colBuf != nil {
			convScratch.Put(colBuf)
		}
		if relu {
			for i, v := range out {
				if v < 0 || v != v {
					out[i] = max(v, 0)
				}
			}
		}
	})
}

// ConvBackwardInputF32 computes dx ([N, C, H, W]) = the gradient of ConvForwardF32 with
// respect to x given grad ([N, O, OH, OW]) and w: per image and group, the
// column gradient wᵀ·grad folded back with Col2Im (or, for a pointwise
// convolution, written into dx directly). dx need not be zeroed.
func ConvBackwardInputF32(dx, grad, w []float32, g ConvGeom, o, groups, threads int) {
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	pw := g.pointwise()
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

// ConvBackwardWeightF32 computes dw ([O, C/groups, KH, KW]) = the gradient of
// Forward with respect to w given x and grad: the sum over images of
// grad·colᵀ. Each goroutine sums its images into its own buffer and the
// buffers are added at the end.
func ConvBackwardWeightF32(dw, x, grad []float32, g ConvGeom, o, groups, threads int) {
	cg, og := g.C/groups, o/groups
	ck, l, hw := cg*g.KH*g.KW, g.OH*g.OW, g.H*g.W
	pw := g.pointwise()
	size := o * ck
	workers := min(max(threads, 1), g.N)
	parts := make([]*[]float32, workers)
	for i := 1; i < workers; i++ {
		parts[i] = convScratch.Get(size)
	}
	seen := make([]bool, workers)
	clear(dw[:size])
	forImages(g.N, o*ck*l, threads, func(wk, n, th int) {
		acc := dw[:size]
		if wk > 0 {
			acc = *parts[wk]
			if !seen[wk] {
				clear(acc)
				seen[wk] = true
			}
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
	for i := 1; i < workers; i++ {
		if seen[i] {
			for j, v := range (*parts[i])[:size] {
				dw[j] += v
			}
		}
		convScratch.Put(parts[i])
	}
}
