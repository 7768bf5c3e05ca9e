//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// dwRowsAVX512 computes rows output rows of n columns: row r (from
// dst+r·dstStride) is bias (or its old value when flags&2 is set) plus the
// sum over taps t of w[t]·src[r·srcStride+offs[t]+column], then max(·, 0)
// when flags&1 is set. Needs AVX-512F and BW (64-bit masks).
//
//go:noescape
func dwRowsAVX512(dst, src *float32, offs *int64, w *float32, taps, rows, n, dstStride, srcStride int, bias float32, flags int)

// dwDotAVX512 writes 16 partial sums of the sum over rows r and columns
// i < n of a[r·aStride+i]·b[r·bStride+i].
//
//go:noescape
func dwDotAVX512(sum *[16]float32, a, b *float32, rows, n, aStride, bStride int)

// Flags of dwRowsAVX512.
const (
	dwRelu       = 1
	dwAccumulate = 2
)

// dwRows runs dwRowsAVX512 on slices, checking once the nearest and
// furthest element each side reads or writes.
func dwRows(dst, src []float32, offs []int64, w []float32, rows, n, dstStride, srcStride int, bias float32, flags int) {
	_ = dst[(rows-1)*dstStride+n-1]
	_ = w[len(offs)-1]
	lo, hi := offs[0], offs[0]
	for _, v := range offs {
		lo, hi = min(lo, v), max(hi, v)
	}
	_ = src[lo]
	_ = src[int(hi)+(rows-1)*srcStride+n-1]
	dwRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), unsafe.SliceData(offs), unsafe.SliceData(w),
		len(offs), rows, n, dstStride, srcStride, bias, flags)
}

// dwDot returns the sum over rows r and columns i < n of
// a[r·aStride+i]·b[r·bStride+i], its 16 float32 partial sums added in
// float64.
func dwDot(a, b []float32, rows, n, aStride, bStride int) float64 {
	_ = a[(rows-1)*aStride+n-1]
	_ = b[(rows-1)*bStride+n-1]
	var lanes [16]float32
	dwDotAVX512(&lanes, unsafe.SliceData(a), unsafe.SliceData(b), rows, n, aStride, bStride)
	var s float64
	for _, v := range lanes {
		s += float64(v)
	}
	return s
}

// dwAsm reports whether the depthwise kernels can run in assembly for g.
func dwAsm(g ConvGeom) bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && g.N > 0 && g.C > 0 && g.OH > 0 && g.OW > 0 && g.H > 0 && g.W > 0
}

// dwLayout is a zero-padded copy of one plane whose columns are split by
// their phase modulo the column stride, so that a strided output row reads
// each kernel column's inputs contiguously: padded element (r, c) lies at
// (r·sw + c%sw)·wq + c/sw and holds plane[r-top][c-left], or 0 outside.
type dwLayout struct {
	h, w      int // the plane
	rows, wq  int // padded rows, columns per phase
	sw        int // column stride: the number of phases
	top, left int // padding before the plane (negative crops it)
}

// size is the number of elements of the padded copy.
func (l dwLayout) size() int { return l.rows * l.sw * l.wq }

// fill writes the padded copy of plane into s.
func (l dwLayout) fill(s, plane []float32) {
	rowLen := l.sw * l.wq
	for r := range l.rows {
		row := s[r*rowLen:][:rowLen]
		ir := r - l.top
		if ir < 0 || ir >= l.h {
			clear(row)
			continue
		}
		src := plane[ir*l.w:][:l.w]
		if l.sw == 1 {
			lo, hi := min(max(l.left, 0), rowLen), min(max(l.left+l.w, 0), rowLen)
			clear(row[:lo])
			copy(row[lo:hi], src[lo-l.left:])
			clear(row[hi:])
			continue
		}
		for ph := range l.sw {
			pr := row[ph*l.wq:][:l.wq]
			for i := range pr {
				ic := i*l.sw + ph - l.left
				if uint(ic) < uint(l.w) {
					pr[i] = src[ic]
				} else {
					pr[i] = 0
				}
			}
		}
	}
}

// dwInputLayout is the padded copy of an input plane that the forward and
// weight-gradient kernels read, with the offset of each tap (row-major) from
// the start of an output row's inputs and the distance between output rows.
func dwInputLayout(g ConvGeom) (l dwLayout, offs []int64, rowStride int) {
	cols := (g.OW-1)*g.StrideW + (g.KW-1)*g.DilationW + 1
	l = dwLayout{h: g.H, w: g.W, rows: (g.OH-1)*g.StrideH + (g.KH-1)*g.DilationH + 1,
		wq: (cols + g.StrideW - 1) / g.StrideW, sw: g.StrideW, top: g.PadH, left: g.PadW}
	offs = make([]int64, 0, g.KH*g.KW)
	for kh := range g.KH {
		for kw := range g.KW {
			c := kw * g.DilationW
			offs = append(offs, int64((kh*g.DilationH*g.StrideW+c%g.StrideW)*l.wq+c/g.StrideW))
		}
	}
	return l, offs, g.StrideH * g.StrideW * l.wq
}

// depthwiseForward32 runs DepthwiseForward for float32 in assembly and
// reports whether it could.
func depthwiseForward32(dst, x, w, bias []float32, g ConvGeom, o, threads int, relu bool) bool {
	if !dwAsm(g) {
		return false
	}
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	lay, offs, rowStride := dwInputLayout(g)
	flags := 0
	if relu {
		flags = dwRelu
	}
	parallelUnits(g.N*o, taps*l, threads, func(p0, p1 int) {
		s := make([]float32, lay.size())
		filled := -1
		for p := p0; p < p1; p++ {
			n, oc := p/o, p%o
			if in := n*g.C + oc/mult; in != filled {
				lay.fill(s, x[in*hw:][:hw])
				filled = in
			}
			var b float32
			if bias != nil {
				b = bias[oc]
			}
			dwRows(dst[p*l:][:l], s, offs, w[oc*taps:][:taps], g.OH, g.OW, g.OW, rowStride, b, flags)
		}
	})
	return true
}

// depthwiseBackwardInput32 runs DepthwiseBackwardInput for float32 in
// assembly and reports whether it could. The gradient of a plane is the
// stride-1 correlation, with the kernel flipped, of the output gradient
// spread out by the stride (zeros between) and padded by the kernel's
// extent less the forward padding.
func depthwiseBackwardInput32(dx, grad, w []float32, g ConvGeom, o, threads int) bool {
	if !dwAsm(g) {
		return false
	}
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	top, left := (g.KH-1)*g.DilationH-g.PadH, (g.KW-1)*g.DilationW-g.PadW
	wq := g.W + (g.KW-1)*g.DilationW
	rows := g.H + (g.KH-1)*g.DilationH
	offs := make([]int64, 0, taps)
	for kh := range g.KH {
		for kw := range g.KW {
			offs = append(offs, int64(kh*g.DilationH*wq+kw*g.DilationW))
		}
	}
	dense := dwLayout{h: g.OH, w: g.OW, rows: rows, wq: wq, sw: 1, top: top, left: left}
	parallelUnits(g.N*g.C, mult*taps*l, threads, func(p0, p1 int) {
		s := make([]float32, rows*wq)
		flipped := make([]float32, taps)
		for p := p0; p < p1; p++ {
			n, c := p/g.C, p%g.C
			for j := range mult {
				oc := c*mult + j
				gy := grad[(n*o+oc)*l:][:l]
				if g.StrideH == 1 && g.StrideW == 1 {
					dense.fill(s, gy)
				} else {
					spread(s, gy, g, wq, top, left)
				}
				for t, v := range w[oc*taps:][:taps] {
					flipped[taps-1-t] = v
				}
				flags := 0
				if j > 0 {
					flags = dwAccumulate
				}
				dwRows(dx[p*hw:][:hw], s, offs, flipped, g.H, g.W, g.W, wq, 0, flags)
			}
		}
	})
	return true
}

// spread writes into s (rows of wq) the output gradient gy spread out by
// the strides of g and shifted by (top, left), zeros elsewhere.
func spread(s, gy []float32, g ConvGeom, wq, top, left int) {
	clear(s)
	rows := len(s) / wq
	for oh := range g.OH {
		r := oh*g.StrideH + top
		if r < 0 || r >= rows {
			continue
		}
		row := s[r*wq:][:wq]
		for ow, v := range gy[oh*g.OW:][:g.OW] {
			if c := ow*g.StrideW + left; uint(c) < uint(wq) {
				row[c] = v
			}
		}
	}
}

// depthwiseBackwardWeight32 runs DepthwiseBackwardWeight for float32 in
// assembly and reports whether it could: each tap's gradient is the dot
// product of the output gradient with the padded input seen from that tap.
func depthwiseBackwardWeight32(dw, x, grad []float32, g ConvGeom, o, threads int) bool {
	if !dwAsm(g) {
		return false
	}
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	lay, offs, rowStride := dwInputLayout(g)
	parallelUnits(o, g.N*taps*l, threads, func(o0, o1 int) {
		s := make([]float32, lay.size())
		sums := make([]float64, taps)
		for oc := o0; oc < o1; oc++ {
			clear(sums)
			for n := range g.N {
				lay.fill(s, x[(n*g.C+oc/mult)*hw:][:hw])
				gy := grad[(n*o+oc)*l:][:l]
				for t, off := range offs {
					sums[t] += dwDot(s[off:], gy, g.OH, g.OW, rowStride, g.OW)
				}
			}
			for t, v := range sums {
				dw[oc*taps+t] = float32(v)
			}
		}
	})
	return true
}
