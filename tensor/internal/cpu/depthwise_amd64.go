//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// The float32 depthwise kernels vectorise along the output rows, 16
// outputs per register, and take the first route that fits:
//   - stride 1 with outputs as wide as the input (MobileNet's 3×3,
//     padding 1): every tap is a fixed shift of the flattened plane, read
//     in place under per-tap lane masks that stand for the padding
//     (dwShifts);
//   - stride 2 with outputs half as wide: the same over the plane's four
//     row/column parity phases (dwPhases), split and merged with
//     VPERMT2PS;
//   - anything else: zero-padded copies of the planes with their columns
//     split by phase (dwLayout), read row by row, or as one long row when
//     rows are narrow, and for the input gradient a copy of the output
//     gradient spread out by the stride; a plane whose weights (or weight
//     gradient sums) are not finite runs the Go loops instead, so that no
//     infinity meets the padding's zeros.

// dwRowsAVX512 computes rows output rows of n columns: row r (from
// dst+r·dstStride) is bias (or its old value when flags&2 is set) plus the
// sum over taps t of w[t]·src[r·srcStride+offs[t]+column], then max(·, 0)
// when flags&1 is set. Needs AVX-512F and BW (64-bit masks).
//
//go:noescape
func dwRowsAVX512(dst, src *float32, offs *int64, w *float32, taps, rows, n, dstStride, srcStride int, bias float32, flags int)

// dwDotTapsAVX512 sets sums[t], t < taps, to the sum over rows r and
// columns i < n of a[offs[t]+r·aStride+i]·b[r·bStride+i].
//
//go:noescape
func dwDotTapsAVX512(sums, a *float32, offs *int64, taps int, b *float32, rows, n, aStride, bStride int)

// dwShiftAVX512 sets dst[q], q < n, to bias (or its old value when
// flags&2 is set) plus the sum over taps t of w[t]·src[q+offs[t]] over
// the lanes masks[t·chunks + q/16] enables, then max(·, 0) when flags&1
// is set.
//
//go:noescape
func dwShiftAVX512(dst, src *float32, offs *int64, w *float32, masks *uint16, taps, n, chunks int, bias float32, flags int)

// dwShiftDotAVX512 sets sums[t], t < taps, to the sum over q < n of
// a[q+offs[t]]·b[q] over the lanes masks[t·chunks + q/16] enables.
//
//go:noescape
func dwShiftDotAVX512(sums, a *float32, offs *int64, masks *uint16, taps int, b *float32, n, chunks int)

// Flags of dwRowsAVX512 and dwShiftAVX512.
const (
	dwRelu       = 1
	dwAccumulate = 2
)

// dwRows runs dwRowsAVX512 on slices, checking once the nearest and
// furthest element each side reads or writes.
func dwRows(dst, src []float32, offs []int64, w []float32, rows, n, dstStride, srcStride int, bias float32, flags int) {
	_ = dst[(rows-1)*dstStride+n-1]
	_ = w[len(offs)-1]
	lo, hi := offsetRange(offs)
	_ = src[lo]
	_ = src[int(hi)+(rows-1)*srcStride+n-1]
	dwRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), unsafe.SliceData(offs), unsafe.SliceData(w),
		len(offs), rows, n, dstStride, srcStride, bias, flags)
}

// dwDotTaps runs dwDotTapsAVX512 on slices, checking once the nearest and
// furthest element it reads.
func dwDotTaps(sums, a []float32, offs []int64, b []float32, rows, n, aStride, bStride int) {
	_ = sums[len(offs)-1]
	_ = b[(rows-1)*bStride+n-1]
	lo, hi := offsetRange(offs)
	_ = a[lo]
	_ = a[int(hi)+(rows-1)*aStride+n-1]
	dwDotTapsAVX512(unsafe.SliceData(sums), unsafe.SliceData(a), unsafe.SliceData(offs), len(offs),
		unsafe.SliceData(b), rows, n, aStride, bStride)
}

// offsetRange returns the least and greatest of the non-empty offs.
func offsetRange(offs []int64) (lo, hi int64) {
	lo, hi = offs[0], offs[0]
	for _, v := range offs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// dwSplit2AVX512 writes even[i] = src[2i] and odd[i] = src[2i+1], i < n.
//
//go:noescape
func dwSplit2AVX512(even, odd, src *float32, n int)

// dwMerge2AVX512 writes dst[2i] = even[i] and dst[2i+1] = odd[i], i < n.
//
//go:noescape
func dwMerge2AVX512(dst, even, odd *float32, n int)

// dwInterleave splits interleaved (2·len(even) elements) into its even and
// odd elements, or with merge puts them back.
func dwInterleave(interleaved, even, odd []float32, merge bool) {
	n := len(even)
	_ = odd[n-1]
	_ = interleaved[2*n-1]
	if merge {
		dwMerge2AVX512(unsafe.SliceData(interleaved), unsafe.SliceData(even), unsafe.SliceData(odd), n)
		return
	}
	dwSplit2AVX512(unsafe.SliceData(even), unsafe.SliceData(odd), unsafe.SliceData(interleaved), n)
}

// compactRows copies rows of n elements, wq apart in flat, into dst.
func compactRows(dst, flat []float32, rows, n, wq int) {
	for r := range rows {
		copy(dst[r*n:][:n], flat[r*wq:][:n])
	}
}

// dwFlat reports whether a stride-1 plane of outputs n wide runs as one
// long row over the padded width (outputs between rows computed and
// dropped) rather than row by row: the masked last step of each narrow row
// would otherwise cost as much as a full one.
func dwFlat(n int) bool { return n < 64 }

// dwShifts is a depthwise pass whose output rows are as wide as the rows
// of the planes it reads (w): output q = row·w + column reads input
// q+offs[t] for tap t, where that lies inside the plane the tap reads, so
// planes are read and written in place, with no padded copies. The tap's
// masks say where: bit i of masks[t·chunks + c] enables output 16c+i.
type dwShifts struct {
	offs      []int64
	masks     []uint16
	chunks    int // masks per tap: 4 per 64 outputs, covering n
	n, extent int // outputs, elements of the input read
}

// dwTap is a tap of a dwShifts: it reads the plane of rows×cols elements
// (rows w apart) that starts base elements into the input, dy rows and dx
// columns off the output position.
type dwTap struct{ base, dy, dx, rows, cols int }

// newDWShifts describes rows output rows of width w reading extent input
// elements through taps.
func newDWShifts(rows, w, extent int, taps []dwTap) dwShifts {
	n := rows * w
	sh := dwShifts{offs: make([]int64, len(taps)), chunks: (n + 63) / 64 * 4, n: n, extent: extent}
	sh.masks = make([]uint16, len(taps)*sh.chunks)
	for t, tp := range taps {
		sh.offs[t] = int64(tp.base + tp.dy*w + tp.dx)
		m := sh.masks[t*sh.chunks:][:sh.chunks]
		lo, hi := max(0, -tp.dx), min(w, tp.cols-tp.dx)
		for r := max(0, -tp.dy); r < min(rows, tp.rows-tp.dy) && lo < hi; r++ {
			setLanes(m, r*w+lo, r*w+hi)
		}
	}
	return sh
}

// setLanes sets bits [lo, hi) of the bit string m (16 bits a word).
func setLanes(m []uint16, lo, hi int) {
	for q := lo; q < hi; {
		b := q % 16
		k := min(16-b, hi-q)
		m[q/16] |= uint16((uint32(1)<<k - 1) << b)
		q += k
	}
}

// shift runs dwShiftAVX512 on a plane: the masks enable only inputs inside
// src, so checking its extent once covers every read.
func (sh dwShifts) shift(dst, src, w []float32, bias float32, flags int) {
	_ = dst[sh.n-1]
	_ = src[sh.extent-1]
	_ = w[len(sh.offs)-1]
	dwShiftAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), unsafe.SliceData(sh.offs), unsafe.SliceData(w),
		unsafe.SliceData(sh.masks), len(sh.offs), sh.n, sh.chunks, bias, flags)
}

// dot runs dwShiftDotAVX512 on a plane a and output-shaped b.
func (sh dwShifts) dot(sums, a, b []float32) {
	_ = sums[len(sh.offs)-1]
	_ = a[sh.extent-1]
	_ = b[sh.n-1]
	dwShiftDotAVX512(unsafe.SliceData(sums), unsafe.SliceData(a), unsafe.SliceData(sh.offs), unsafe.SliceData(sh.masks),
		len(sh.offs), unsafe.SliceData(b), sh.n, sh.chunks)
}

// dwForwardShifts returns g's forward pass as dwShifts, or false when it
// has another stride than 1 or output rows narrower than its input rows.
// With flip, the shifts are those of the input gradient: the output
// gradient read at the opposite shifts.
func dwForwardShifts(g ConvGeom, flip bool) (dwShifts, bool) {
	if g.StrideH != 1 || g.StrideW != 1 || g.OW != g.W {
		return dwShifts{}, false
	}
	var taps []dwTap
	for kh := range g.KH {
		for kw := range g.KW {
			tp := dwTap{dy: kh*g.DilationH - g.PadH, dx: kw*g.DilationW - g.PadW, rows: g.H, cols: g.W}
			if flip {
				tp.dy, tp.dx, tp.rows = -tp.dy, -tp.dx, g.OH
			}
			taps = append(taps, tp)
		}
	}
	if flip {
		return newDWShifts(g.H, g.W, g.OH*g.W, taps), true
	}
	return newDWShifts(g.OH, g.W, g.H*g.W, taps), true
}

// dwPhases is an input plane of a stride-2 pass split into its four
// phases, the rows and columns of each parity, each phase a plane of
// ph×pw elements (pw = the output width): output (r, c) of a tap reading
// input (2r+y, 2c+x) reads phase (y&1, x&1) at (r + y>>1, c + x>>1), a
// fixed shift, so stride 2 runs as dwShifts too.
type dwPhases struct{ h, w, ph, pw int }

// dwStride2Phases returns g's forward pass over the phases of its input
// planes, or false when g has other strides than 2 or output rows of
// another width than half the input's (rounded up).
func dwStride2Phases(g ConvGeom) (dwShifts, dwPhases, bool) {
	ps := dwPhases{h: g.H, w: g.W, ph: (g.H + 1) / 2, pw: (g.W + 1) / 2}
	if g.StrideH != 2 || g.StrideW != 2 || g.OW != ps.pw {
		return dwShifts{}, ps, false
	}
	var taps []dwTap
	for kh := range g.KH {
		for kw := range g.KW {
			y, x := kh*g.DilationH-g.PadH, kw*g.DilationW-g.PadW
			py, px := y&1, x&1
			taps = append(taps, dwTap{base: (py*2 + px) * ps.ph * ps.pw, dy: y >> 1, dx: x >> 1,
				rows: (g.H - py + 1) / 2, cols: (g.W - px + 1) / 2})
		}
	}
	return newDWShifts(g.OH, ps.pw, 4*ps.ph*ps.pw, taps), ps, true
}

// dwPhaseGrad is the input gradient of a stride-2 pass, phase by phase:
// phase k = 2·(row parity) + column parity takes the taps tap[k] whose
// input offsets have those parities, reading the output gradient at the
// opposite shifts (sh[k]).
type dwPhaseGrad struct {
	ps  dwPhases
	sh  [4]dwShifts
	tap [4][]int
}

// dwStride2Grad returns the input gradient of g by phases, or false when
// g's forward pass does not run over phases (dwStride2Phases).
func dwStride2Grad(g ConvGeom) (dwPhaseGrad, bool) {
	_, ps, ok := dwStride2Phases(g)
	if !ok {
		return dwPhaseGrad{}, false
	}
	pg := dwPhaseGrad{ps: ps}
	var taps [4][]dwTap
	for kh := range g.KH {
		for kw := range g.KW {
			y, x := kh*g.DilationH-g.PadH, kw*g.DilationW-g.PadW
			k := (y&1)*2 + x&1
			pg.tap[k] = append(pg.tap[k], kh*g.KW+kw)
			taps[k] = append(taps[k], dwTap{dy: -(y >> 1), dx: -(x >> 1), rows: g.OH, cols: g.OW})
		}
	}
	for k := range 4 {
		rows := (g.H - k>>1 + 1) / 2
		pg.sh[k] = newDWShifts(rows, ps.pw, g.OH*g.OW, taps[k])
	}
	return pg, true
}

// dwInPlace returns g's forward pass as dwShifts when it has one: stride 1
// over the input planes themselves (ps nil), or stride 2 over their phases.
func dwInPlace(g ConvGeom) (sh dwShifts, ps *dwPhases, ok bool) {
	if sh, ok := dwForwardShifts(g, false); ok {
		return sh, nil, true
	}
	sh, phases, ok := dwStride2Phases(g)
	return sh, &phases, ok
}

// buffer returns room for the phases of one plane (nil when ps is nil:
// planes are read as they are).
func (ps *dwPhases) buffer() []float32 {
	if ps == nil {
		return nil
	}
	return make([]float32, 4*ps.ph*ps.pw)
}

// view returns what a dwShifts pass reads for plane: plane itself when ps
// is nil, else its phases, split into buf.
func (ps *dwPhases) view(buf, plane []float32) []float32 {
	if ps == nil {
		return plane
	}
	ps.interleave(plane, buf, false)
	return buf
}

// interleave writes the four phases of plane into buf (4·ph·pw elements),
// or with merge writes them back into plane. The odd columns of an
// odd-width plane have one element fewer: the last of their phase rows is
// never read.
func (ps dwPhases) interleave(plane, buf []float32, merge bool) {
	pairs := ps.w / 2
	for r := range ps.h {
		row := plane[r*ps.w:][:ps.w]
		even := buf[((r&1)*2*ps.ph+r>>1)*ps.pw:][:ps.pw]
		odd := buf[(((r&1)*2+1)*ps.ph+r>>1)*ps.pw:][:ps.pw]
		if pairs > 0 {
			dwInterleave(row, even[:pairs], odd[:pairs], merge)
		}
		switch {
		case ps.w&1 == 0:
		case merge:
			row[ps.w-1] = even[pairs]
		default:
			even[pairs] = row[ps.w-1]
		}
	}
}

// dwAsm reports whether the depthwise kernels can run in assembly for g.
func dwAsm(g ConvGeom) bool {
	return isa.Has(isa.AVX512) && g.N > 0 && g.C > 0 && g.OH > 0 && g.OW > 0 && g.H > 0 && g.W > 0
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

// scratch returns room, zeroed, for the padded copy and for one padded
// row that fill splits into its phases.
func (l dwLayout) scratch() (s, row []float32) {
	n := l.rows * l.sw * l.wq
	s = make([]float32, n+l.sw*l.wq)
	return s[:n], s[n:]
}

// fill writes the padded copy of plane into s, using tmp (one padded row)
// when there are several phases. It writes only where the plane lands:
// the padding stays as scratch made it, zero.
func (l dwLayout) fill(s, plane, tmp []float32) {
	rowLen := l.sw * l.wq
	lo, hi := min(max(l.left, 0), rowLen), min(max(l.left+l.w, 0), rowLen)
	for r := max(l.top, 0); r < min(l.rows, l.top+l.h); r++ {
		row := s[r*rowLen:][:rowLen]
		src := plane[(r-l.top)*l.w+lo-l.left:][:hi-lo]
		switch l.sw {
		case 1:
			copy(row[lo:hi], src)
		case 2:
			copy(tmp[lo:hi], src)
			dwInterleave(tmp, row[:l.wq], row[l.wq:2*l.wq], false)
		default:
			copy(tmp[lo:hi], src)
			for ph := range l.sw {
				for i := range l.wq {
					row[ph*l.wq+i] = tmp[i*l.sw+ph]
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
	flags := 0
	if relu {
		flags = dwRelu
	}
	if sh, ps, ok := dwInPlace(g); ok {
		parallelUnits(g.N*o, taps*l, threads, func(p0, p1 int) {
			buf, filled := ps.buffer(), -1
			var src []float32
			for p := p0; p < p1; p++ {
				n, oc := p/o, p%o
				if in := n*g.C + oc/mult; in != filled {
					src, filled = ps.view(buf, x[in*hw:][:hw]), in
				}
				var b float32
				if bias != nil {
					b = bias[oc]
				}
				sh.shift(dst[p*l:][:l], src, w[oc*taps:][:taps], b, flags)
			}
		})
		return true
	}
	lay, offs, rowStride := dwInputLayout(g)
	flat := g.StrideH == 1 && g.StrideW == 1 && dwFlat(g.OW)
	parallelUnits(g.N*o, taps*l, threads, func(p0, p1 int) {
		s, tmp := lay.scratch()
		var out []float32
		if flat {
			out = make([]float32, (g.OH-1)*lay.wq+g.OW)
		}
		filled := -1
		for p := p0; p < p1; p++ {
			n, oc := p/o, p%o
			if in := n*g.C + oc/mult; in != filled {
				lay.fill(s, x[in*hw:][:hw], tmp)
				filled = in
			}
			var b float32
			if bias != nil {
				b = bias[oc]
			}
			wt, y := w[oc*taps:][:taps], dst[p*l:][:l]
			if !allFinite(wt) { // an infinite weight must not meet the padding's zeros
				var bs []float32
				if bias != nil {
					bs = bias[oc:][:1]
				}
				depthwiseForwardGo(y, x[filled*hw:][:hw], wt, bs, dwOnePlane(g), 1, 1, relu)
				continue
			}
			if !flat {
				dwRows(y, s, offs, wt, g.OH, g.OW, g.OW, rowStride, b, flags)
				continue
			}
			dwRows(out, s, offs, wt, 1, len(out), 0, 0, b, flags)
			compactRows(y, out, g.OH, g.OW, lay.wq)
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
	if sh, ok := dwForwardShifts(g, true); ok {
		parallelUnits(g.N*g.C, mult*taps*l, threads, func(p0, p1 int) {
			for p := p0; p < p1; p++ {
				n, c := p/g.C, p%g.C
				for j := range mult {
					oc := c*mult + j
					flags := 0
					if j > 0 {
						flags = dwAccumulate
					}
					sh.shift(dx[p*hw:][:hw], grad[(n*o+oc)*l:][:l], w[oc*taps:][:taps], 0, flags)
				}
			}
		})
		return true
	}
	if pg, ok := dwStride2Grad(g); ok {
		parallelUnits(g.N*g.C, mult*taps*l, threads, func(p0, p1 int) {
			buf, wk := pg.ps.buffer(), make([]float32, taps)
			for p := p0; p < p1; p++ {
				n, c := p/g.C, p%g.C
				for j := range mult {
					oc := c*mult + j
					for k, tk := range pg.tap {
						out := buf[k*pg.ps.ph*pg.ps.pw:][:pg.ps.ph*pg.ps.pw]
						if pg.sh[k].n == 0 { // a one-row plane has no odd rows
							continue
						}
						if len(tk) == 0 { // no tap reaches this phase
							clear(out)
							continue
						}
						for i, t := range tk {
							wk[i] = w[oc*taps+t]
						}
						flags := 0
						if j > 0 {
							flags = dwAccumulate
						}
						pg.sh[k].shift(out, grad[(n*o+oc)*l:][:l], wk[:len(tk)], 0, flags)
					}
				}
				pg.ps.interleave(dx[p*hw:][:hw], buf, true)
			}
		})
		return true
	}
	top, left := (g.KH-1)*g.DilationH-g.PadH, (g.KW-1)*g.DilationW-g.PadW
	dense := dwLayout{h: g.OH, w: g.OW, rows: g.H + (g.KH-1)*g.DilationH, wq: g.W + (g.KW-1)*g.DilationW,
		sw: 1, top: top, left: left}
	offs := make([]int64, 0, taps)
	for kh := range g.KH {
		for kw := range g.KW {
			offs = append(offs, int64(kh*g.DilationH*dense.wq+kw*g.DilationW))
		}
	}
	flat := dwFlat(g.W)
	parallelUnits(g.N*g.C, mult*taps*l, threads, func(p0, p1 int) {
		s, _ := dense.scratch()
		flipped := make([]float32, taps)
		var out []float32
		if flat {
			out = make([]float32, (g.H-1)*dense.wq+g.W)
		}
		for p := p0; p < p1; p++ {
			n, c := p/g.C, p%g.C
			plane, wc := dx[p*hw:][:hw], w[c*mult*taps:][:mult*taps]
			if !allFinite(wc) { // an infinite weight must not meet the padding's zeros
				depthwiseBackwardInputGo(plane, grad[(n*o+c*mult)*l:][:mult*l], wc, dwOnePlane(g), mult, 1)
				continue
			}
			for j := range mult {
				oc := c*mult + j
				gy := grad[(n*o+oc)*l:][:l]
				if g.StrideH == 1 && g.StrideW == 1 {
					dense.fill(s, gy, nil)
				} else {
					spread(s, gy, g, dense.wq, top, left)
				}
				for t, v := range w[oc*taps:][:taps] {
					flipped[taps-1-t] = v
				}
				flags := 0
				if j > 0 {
					flags = dwAccumulate
				}
				if flat {
					dwRows(out, s, offs, flipped, 1, len(out), 0, 0, 0, flags)
				} else {
					dwRows(plane, s, offs, flipped, g.H, g.W, g.W, dense.wq, 0, flags)
				}
			}
			if flat {
				compactRows(plane, out, g.H, g.W, dense.wq)
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
// product of the output gradient with the padded input seen from that tap,
// summed per plane in float32 and over the batch in float64. Narrow
// stride-1 planes run as one long row against the gradient laid out at the
// padded width with zeros between rows. On the padded-copy routes, should
// a plane's sums come out infinite or NaN they are taken again by the Go
// loops, as a zero of the padding (or between rows) times an infinity
// would leak NaN into taps that never see it.
func depthwiseBackwardWeight32(dw, x, grad []float32, g ConvGeom, o, threads int) bool {
	if !dwAsm(g) {
		return false
	}
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	lay, offs, rowStride := dwInputLayout(g)
	sh, ps, shifted := dwInPlace(g)
	flat := g.StrideH == 1 && g.StrideW == 1 && dwFlat(g.OW)
	parallelUnits(o, g.N*taps*l, threads, func(o0, o1 int) {
		var s, tmp, gq, buf []float32
		if shifted {
			buf = ps.buffer()
		} else {
			s, tmp = lay.scratch()
		}
		if flat && !shifted {
			gq = make([]float32, (g.OH-1)*lay.wq+g.OW)
		}
		sums, part := make([]float64, taps), make([]float32, taps)
		for oc := o0; oc < o1; oc++ {
			clear(sums)
			for n := range g.N {
				plane, gy := x[(n*g.C+oc/mult)*hw:][:hw], grad[(n*o+oc)*l:][:l]
				switch {
				case shifted:
					sh.dot(part, ps.view(buf, plane), gy)
				case flat:
					lay.fill(s, plane, tmp)
					for oh := range g.OH {
						copy(gq[oh*lay.wq:][:g.OW], gy[oh*g.OW:])
					}
					dwDotTaps(part, s, offs, gq, 1, len(gq), 0, 0)
				default:
					lay.fill(s, plane, tmp)
					dwDotTaps(part, s, offs, gy, g.OH, g.OW, rowStride, g.OW)
				}
				if !shifted && !allFinite(part) {
					depthwiseBackwardWeightGo(part, plane, gy, dwOnePlane(g), 1, 1)
				}
				for t, v := range part {
					sums[t] += float64(v)
				}
			}
			for t, v := range sums {
				dw[oc*taps+t] = float32(v)
			}
		}
	})
	return true
}

// dwOnePlane returns g for one image of one channel: the Go loops run on
// it for a single plane that the padded-copy routes cannot take exactly.
func dwOnePlane(g ConvGeom) ConvGeom {
	g.N, g.C = 1, 1
	return g
}

// allFinite reports whether s holds neither infinities nor NaNs.
func allFinite(s []float32) bool {
	for _, v := range s {
		if v-v != 0 {
			return false
		}
	}
	return true
}
