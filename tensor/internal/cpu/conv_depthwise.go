package cpu

import "github.com/emberml/ember/tensor/internal/parallel"

// Depthwise convolutions (groups == C, so every output channel reads one
// input channel: output channel oc reads input channel oc/(O/C)) run as
// direct loops over the kernel taps: their column matrix would have only
// KH*KW rows, too few for a matrix product to pay off.

// parallelUnits calls f on contiguous ranges covering [0, n) on up to
// threads goroutines when the n units of unitWork elements are worth it.
func parallelUnits(n, unitWork, threads int, f func(lo, hi int)) {
	workers := min(threads, n)
	if workers <= 1 || n*unitWork < parallelMinWork {
		f(0, n)
		return
	}
	per := (n + workers - 1) / workers
	parallel.Run((n+per-1)/per, func(i int) { f(i*per, min((i+1)*per, n)) })
}

// DepthwiseForward computes dst ([N, O, OH, OW]) = the depthwise
// convolution of x ([N, C, H, W]) with w ([O, 1, KH, KW], O a multiple of
// C) plus bias ([O], or nil), then max(·, 0) when relu is set. Taps that
// fall on the padding are skipped. float32 runs in assembly where the CPU
// allows: fused multiply-adds, so the last bits may differ from
// depthwiseForwardGo.
func DepthwiseForward[T Float](dst, x, w, bias []T, g ConvGeom, o, threads int, relu bool) {
	if d, ok := any(dst).([]float32); ok && depthwiseForward32(d, any(x).([]float32), any(w).([]float32), any(bias).([]float32), g, o, threads, relu) {
		return
	}
	depthwiseForwardGo(dst, x, w, bias, g, o, threads, relu)
}

// depthwiseForwardGo is DepthwiseForward in Go: for every output plane, each
// kernel tap adds its weight times the shifted input rows.
func depthwiseForwardGo[T Float](dst, x, w, bias []T, g ConvGeom, o, threads int, relu bool) {
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	parallelUnits(g.N*o, taps*l, threads, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			n, oc := p/o, p%o
			out := dst[p*l:][:l]
			var b T
			if bias != nil {
				b = bias[oc]
			}
			for i := range out {
				out[i] = b
			}
			plane := x[(n*g.C+oc/mult)*hw:][:hw]
			for kh := range g.KH {
				offH := kh*g.DilationH - g.PadH
				ohLo, ohHi := validRange(offH, g.StrideH, g.H, g.OH)
				for kw := range g.KW {
					offW := kw*g.DilationW - g.PadW
					owLo, owHi := validRange(offW, g.StrideW, g.W, g.OW)
					if owLo >= owHi {
						continue
					}
					wv := w[oc*taps+kh*g.KW+kw]
					for oh := ohLo; oh < ohHi; oh++ {
						srow := plane[(oh*g.StrideH+offH)*g.W:][:g.W]
						orow := out[oh*g.OW:][:g.OW]
						if g.StrideW == 1 {
							s := srow[owLo+offW : owHi+offW]
							d := orow[owLo:owHi]
							for i := range d {
								d[i] += wv * s[i]
							}
							continue
						}
						iw := owLo*g.StrideW + offW
						for ow := owLo; ow < owHi; ow++ {
							orow[ow] += wv * srow[iw]
							iw += g.StrideW
						}
					}
				}
			}
			if relu {
				for i, v := range out {
					if v < 0 || v != v {
						out[i] = max(v, 0)
					}
				}
			}
		}
	})
}

// DepthwiseBackwardInput computes dx ([N, C, H, W]), the gradient of
// DepthwiseForward with respect to x, from grad ([N, O, OH, OW]) and w;
// float32 in assembly where the CPU allows.
func DepthwiseBackwardInput[T Float](dx, grad, w []T, g ConvGeom, o, threads int) {
	if d, ok := any(dx).([]float32); ok && depthwiseBackwardInput32(d, any(grad).([]float32), any(w).([]float32), g, o, threads) {
		return
	}
	depthwiseBackwardInputGo(dx, grad, w, g, o, threads)
}

// depthwiseBackwardInputGo is DepthwiseBackwardInput in Go.
func depthwiseBackwardInputGo[T Float](dx, grad, w []T, g ConvGeom, o, threads int) {
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	parallelUnits(g.N*g.C, mult*taps*l, threads, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			n, c := p/g.C, p%g.C
			plane := dx[p*hw:][:hw]
			clear(plane)
			for oc := c * mult; oc < (c+1)*mult; oc++ {
				gy := grad[(n*o+oc)*l:][:l]
				for kh := range g.KH {
					offH := kh*g.DilationH - g.PadH
					ohLo, ohHi := validRange(offH, g.StrideH, g.H, g.OH)
					for kw := range g.KW {
						offW := kw*g.DilationW - g.PadW
						owLo, owHi := validRange(offW, g.StrideW, g.W, g.OW)
						if owLo >= owHi {
							continue
						}
						wv := w[oc*taps+kh*g.KW+kw]
						for oh := ohLo; oh < ohHi; oh++ {
							drow := plane[(oh*g.StrideH+offH)*g.W:][:g.W]
							grow := gy[oh*g.OW:][:g.OW]
							if g.StrideW == 1 {
								d := drow[owLo+offW : owHi+offW]
								s := grow[owLo:owHi]
								for i := range d {
									d[i] += wv * s[i]
								}
								continue
							}
							iw := owLo*g.StrideW + offW
							for ow := owLo; ow < owHi; ow++ {
								drow[iw] += wv * grow[ow]
								iw += g.StrideW
							}
						}
					}
				}
			}
		}
	})
}

// DepthwiseBackwardWeight computes dw ([O, 1, KH, KW]), the gradient of
// DepthwiseForward with respect to w, from x and grad. Each tap's sum over
// the batch and the output positions is accumulated in float64 (float32
// runs in assembly where the CPU allows, with float32 partial sums).
func DepthwiseBackwardWeight[T Float](dw, x, grad []T, g ConvGeom, o, threads int) {
	if d, ok := any(dw).([]float32); ok && depthwiseBackwardWeight32(d, any(x).([]float32), any(grad).([]float32), g, o, threads) {
		return
	}
	depthwiseBackwardWeightGo(dw, x, grad, g, o, threads)
}

// depthwiseBackwardWeightGo is DepthwiseBackwardWeight in Go.
func depthwiseBackwardWeightGo[T Float](dw, x, grad []T, g ConvGeom, o, threads int) {
	mult, taps, l, hw := o/g.C, g.KH*g.KW, g.OH*g.OW, g.H*g.W
	parallelUnits(o, g.N*taps*l, threads, func(o0, o1 int) {
		for oc := o0; oc < o1; oc++ {
			for kh := range g.KH {
				offH := kh*g.DilationH - g.PadH
				ohLo, ohHi := validRange(offH, g.StrideH, g.H, g.OH)
				for kw := range g.KW {
					offW := kw*g.DilationW - g.PadW
					owLo, owHi := validRange(offW, g.StrideW, g.W, g.OW)
					var sum float64
					for n := 0; n < g.N && owLo < owHi; n++ {
						plane := x[(n*g.C+oc/mult)*hw:][:hw]
						gy := grad[(n*o+oc)*l:][:l]
						for oh := ohLo; oh < ohHi; oh++ {
							srow := plane[(oh*g.StrideH+offH)*g.W:][:g.W]
							grow := gy[oh*g.OW:][:g.OW]
							var s T
							if g.StrideW == 1 {
								a, b := srow[owLo+offW:owHi+offW], grow[owLo:owHi]
								for i := range b {
									s += a[i] * b[i]
								}
							} else {
								iw := owLo*g.StrideW + offW
								for ow := owLo; ow < owHi; ow++ {
									s += srow[iw] * grow[ow]
									iw += g.StrideW
								}
							}
							sum += float64(s)
						}
					}
					dw[oc*taps+kh*g.KW+kw] = T(sum)
				}
			}
		}
	})
}
