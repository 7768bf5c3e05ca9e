package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxPool2dValuesMatchesIndexed checks the index-free max pooling
// against MaxPool2d on odd sizes, padding, dilation, ceil-mode-like
// clipped windows and NaNs, with dst poisoned beforehand.
func TestMaxPool2dValuesMatchesIndexed(t *testing.T) {
	cases := []struct {
		name                           string
		planes, h, w, kh, kw, sh, sw   int
		ph, pw, dh, dw, extraH, extraW int
	}{
		{"resnet stem", 3, 13, 11, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},
		{"2x2", 2, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0},
		{"rect stride 1", 4, 7, 9, 2, 3, 1, 1, 1, 1, 1, 1, 0, 0},
		{"dilated", 2, 11, 10, 3, 2, 2, 1, 1, 1, 2, 3, 0, 0},
		{"ceil clipped", 3, 9, 7, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
		{"window is plane", 5, 4, 6, 4, 6, 1, 1, 0, 0, 1, 1, 0, 0},
		{"wide pad stride 3", 2, 10, 17, 3, 5, 3, 3, 1, 2, 1, 1, 0, 0},
		{"one column", 2, 6, 1, 3, 1, 2, 1, 1, 0, 1, 1, 0, 0},
		// Rows and columns of windows past the plane (never made by
		// tensor.MaxPool2d's geometry, but the kernels agree on -Inf).
		{"past the end", 2, 5, 5, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := PoolGeom{Planes: c.planes, H: c.h, W: c.w, KH: c.kh, KW: c.kw, StrideH: c.sh, StrideW: c.sw,
				PadH: c.ph, PadW: c.pw, DilationH: c.dh, DilationW: c.dw}
			g.OH = (c.h+2*c.ph-c.dh*(c.kh-1)-1)/c.sh + 1 + c.extraH
			g.OW = (c.w+2*c.pw-c.dw*(c.kw-1)-1)/c.sw + 1 + c.extraW
			src := make([]float64, c.planes*c.h*c.w)
			for i := range src {
				src[i] = rng.NormFloat64()
			}
			src[5] = math.NaN()
			src[len(src)-3] = math.Inf(1)
			n := c.planes * g.OH * g.OW
			want, idx := make([]float64, n), make([]int64, n)
			MaxPool2d(want, idx, src, g)
			got := make([]float64, n)
			for i := range got {
				got[i] = 12345
			}
			MaxPool2dValues(got, src, g)
			for i := range want {
				if math.IsNaN(want[i]) {
					require.True(t, math.IsNaN(got[i]), "output %d: got %v, want NaN", i, got[i])
					continue
				}
				require.Equal(t, want[i], got[i], "output %d", i)
			}
			src32 := make([]float32, len(src))
			for i, v := range src {
				src32[i] = float32(v)
			}
			got32 := make([]float32, n)
			MaxPool2dValues(got32, src32, g)
			for i := range want {
				if math.IsNaN(want[i]) {
					require.True(t, math.IsNaN(float64(got32[i])))
					continue
				}
				require.Equal(t, float32(want[i]), got32[i], "float32 output %d", i)
			}
		})
	}
}

// TestMaxPool2x2MatchesGeneric checks MaxPool2d's 2×2 stride-2 path against
// the generic loop on odd plane sizes (a last row and column outside every
// window), with NaNs, ties and -Inf, and outputs and positions poisoned.
func TestMaxPool2x2MatchesGeneric(t *testing.T) {
	cases := []struct{ planes, h, w int }{{1, 2, 2}, {3, 5, 7}, {2, 8, 9}, {4, 11, 6}}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		g := PoolGeom{Planes: c.planes, H: c.h, W: c.w, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
			DilationH: 1, DilationW: 1, OH: c.h / 2, OW: c.w / 2}
		src := make([]float32, c.planes*c.h*c.w)
		for i := range src {
			// Few distinct values, so windows hold ties.
			src[i] = float32(rng.IntN(5) - 2)
		}
		src[1] = float32(math.NaN())
		src[c.w] = float32(math.NaN())
		src[len(src)-1] = float32(math.Inf(-1))
		src[len(src)/2] = float32(math.Inf(-1))
		n := c.planes * g.OH * g.OW
		want, wantIdx := make([]float32, n), make([]int64, n)
		maxPool2dGeneric(want, wantIdx, src, g)
		got, gotIdx := make([]float32, n), make([]int64, n)
		for i := range got {
			got[i], gotIdx[i] = 12345, -7
		}
		MaxPool2d(got, gotIdx, src, g)
		require.Equal(t, wantIdx, gotIdx, "positions %+v", c)
		for i := range want {
			if math.IsNaN(float64(want[i])) {
				require.True(t, math.IsNaN(float64(got[i])), "output %d of %+v: got %v, want NaN", i, c, got[i])
				continue
			}
			require.Equal(t, want[i], got[i], "output %d of %+v", i, c)
		}
	}
}

// BenchmarkMaxPool2d times ResNet's stem pooling (3×3 windows, stride 2,
// padding 1, 64 planes of 112×112) with and without the argmax positions,
// on one goroutine.
func BenchmarkMaxPool2d(b *testing.B) {
	g := PoolGeom{Planes: 64, H: 112, W: 112, KH: 3, KW: 3, StrideH: 2, StrideW: 2,
		PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 56, OW: 56}
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, g.Planes*g.H*g.W)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	n := g.Planes * g.OH * g.OW
	dst, idx := make([]float32, n), make([]int64, n)
	b.Run("indices", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			MaxPool2d(dst, idx, src, g)
		}
	})
	b.Run("reference", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			maxPool2dGeneric(dst, idx, src, g)
		}
	})
	b.Run("values", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			MaxPool2dValues(dst, src, g)
		}
	})
}

// maxPool2dGeneric is the reference MaxPool2d: one compare per input
// of each window, in row-major order.
func maxPool2dGeneric[T Float](dst []T, idx []int64, src []T, g PoolGeom) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	w, ow, dh, dw := g.W, g.OW, g.DilationH, g.DilationW
	h0, h1 := maxWindows(g.OH, g.StrideH, g.PadH, g.KH, dh, g.H)
	w0, w1 := maxWindows(g.OW, g.StrideW, g.PadW, g.KW, dw, g.W)
	parallelFor(g.Planes, ohw*g.KH*g.KW, func(p0, p1 int) {
		negInf := T(math.Inf(-1))
		for p := p0; p < p1; p++ {
			plane := src[p*hw:][:hw]
			out := dst[p*ohw:][:ohw]
			oidx := idx[p*ohw:][:ohw]
			for oh, ih0 := range h0 {
				ih1 := h1[oh]
				o, oi := out[oh*ow:][:ow], oidx[oh*ow:][:ow]
				for j, iw0 := range w0 {
					iw1 := w1[j]
					best, bi := negInf, ih0*w+iw0
					for ih := ih0; ih < ih1; ih += dh {
						row := plane[ih*w:][:w]
						for iw := iw0; iw < iw1; iw += dw {
							if v := row[iw]; v > best || v != v {
								best, bi = v, ih*w+iw
							}
						}
					}
					o[j] = best
					oi[j] = int64(bi)
				}
			}
		}
	})
}

// TestMaxPool2dMatchesGeneric checks MaxPool2d (values, then the scan for
// positions) against the one-compare-per-input reference, positions and
// value bits, on odd geometries with padding, dilation, clipped windows,
// NaNs, signed zeros, ties and -Inf, outputs and positions poisoned.
func TestMaxPool2dMatchesGeneric(t *testing.T) {
	cases := []struct {
		name                         string
		planes, h, w, kh, kw, sh, sw int
		ph, pw, dh, dw               int
	}{
		{"resnet stem", 3, 13, 11, 3, 3, 2, 2, 1, 1, 1, 1},
		{"stride 1", 2, 9, 67, 3, 2, 1, 1, 1, 0, 1, 1},
		{"dilated", 2, 11, 10, 3, 2, 2, 1, 1, 1, 2, 3},
		{"wide kernel", 1, 7, 33, 2, 5, 1, 3, 0, 2, 1, 1},
		{"window is plane", 5, 4, 6, 4, 6, 1, 1, 0, 0, 1, 1},
		{"1x1", 2, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float64{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 0}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := PoolGeom{Planes: c.planes, H: c.h, W: c.w, KH: c.kh, KW: c.kw, StrideH: c.sh, StrideW: c.sw,
				PadH: c.ph, PadW: c.pw, DilationH: c.dh, DilationW: c.dw}
			g.OH = (c.h+2*c.ph-c.dh*(c.kh-1)-1)/c.sh + 1
			g.OW = (c.w+2*c.pw-c.dw*(c.kw-1)-1)/c.sw + 1
			src := make([]float64, c.planes*c.h*c.w)
			for i := range src {
				// Few distinct values, so windows hold ties; a few specials.
				src[i] = float64(rng.IntN(5) - 2)
				if rng.IntN(12) == 0 {
					src[i] = specials[rng.IntN(len(specials))]
				}
			}
			n := c.planes * g.OH * g.OW
			check := func(want, got []float64, wantIdx, gotIdx []int64) {
				require.Equal(t, wantIdx, gotIdx, "positions")
				for i := range want {
					if math.IsNaN(want[i]) {
						require.True(t, math.IsNaN(got[i]), "output %d: got %v, want NaN", i, got[i])
						continue
					}
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "output %d: got %v, want %v", i, got[i], want[i])
				}
			}
			want, wantIdx := make([]float64, n), make([]int64, n)
			maxPool2dGeneric(want, wantIdx, src, g)
			got, gotIdx := poisoned[float64](n), make([]int64, n)
			for i := range gotIdx {
				gotIdx[i] = -7
			}
			MaxPool2d(got, gotIdx, src, g)
			check(want, got, wantIdx, gotIdx)
			src32 := make([]float32, len(src))
			for i, v := range src {
				src32[i] = float32(v)
			}
			got32, gotIdx32 := poisoned[float32](n), make([]int64, n)
			MaxPool2d(got32, gotIdx32, src32, g)
			got64 := make([]float64, n)
			for i, v := range got32 {
				got64[i] = float64(v)
			}
			check(want, got64, wantIdx, gotIdx32)
		})
	}
}

// TestMaxIntoAsmMatchesGo checks maxInto32 (the AVX2 kernel where the CPU
// has it) against its Go twin on every length 1…67 at odd offsets, with
// NaNs, infinities and zeros of both signs, and guards past the end.
func TestMaxIntoAsmMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0}
	draw := func() float32 {
		if rng.IntN(4) == 0 {
			return specials[rng.IntN(len(specials))]
		}
		return float32(rng.NormFloat64())
	}
	for n := 1; n <= 67; n++ {
		off := n % 3
		dst, src := make([]float32, off+n+4), make([]float32, off+n)
		for i := range dst {
			dst[i] = draw()
		}
		for i := range src {
			src[i] = draw()
		}
		want := append([]float32(nil), dst...)
		maxIntoGo(want[off:off+n], src[off:])
		maxInto32(dst[off:off+n], src[off:])
		for i := range want {
			if math.IsNaN(float64(want[i])) {
				require.True(t, math.IsNaN(float64(dst[i])), "n=%d element %d: got %v, want NaN", n, i, dst[i])
				continue
			}
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(dst[i]), "n=%d element %d: got %v, want %v", n, i, dst[i], want[i])
		}
	}
}
