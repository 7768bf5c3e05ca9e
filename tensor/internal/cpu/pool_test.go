package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/emberml/ember/tensor/internal/parallel"
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
// the generic loop, in float32 (the vector kernel where the CPU has one)
// and float64, on plane sizes with odd rows and columns outside every
// window and rows of one to past two vectors of outputs, with NaNs, ties,
// infinities and signed zeros, and outputs and positions poisoned.
func TestMaxPool2x2MatchesGeneric(t *testing.T) {
	cases := []struct{ planes, h, w int }{
		{1, 2, 2}, {3, 5, 7}, {2, 8, 9}, {4, 11, 6}, {2, 28, 28}, {3, 14, 14},
		{2, 7, 64}, {2, 9, 70}, {3, 5, 33}, {1, 3, 67},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		g := PoolGeom{Planes: c.planes, H: c.h, W: c.w, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
			DilationH: 1, DilationW: 1, OH: c.h / 2, OW: c.w / 2}
		src := pool2x2Input(rng, c.planes*c.h*c.w)
		n := c.planes * g.OH * g.OW
		want, wantIdx := make([]float64, n), make([]int64, n)
		maxPool2dGeneric(want, wantIdx, src, g)
		got, gotIdx := make([]float64, n), make([]int64, n)
		for i := range got {
			got[i], gotIdx[i] = math.NaN(), -7
		}
		MaxPool2d(got, gotIdx, src, g)
		require.Equal(t, wantIdx, gotIdx, "float64 positions %+v", c)
		for i := range want {
			require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "float64 output %d of %+v", i, c)
		}

		src32 := make([]float32, len(src))
		for i, v := range src {
			src32[i] = float32(v)
		}
		got32 := make([]float32, n)
		for i := range got32 {
			got32[i], gotIdx[i] = float32(math.NaN()), -7
		}
		MaxPool2d(got32, gotIdx, src32, g)
		require.Equal(t, wantIdx, gotIdx, "float32 positions %+v", c)
		for i := range want {
			require.Equal(t, math.Float32bits(float32(want[i])), math.Float32bits(got32[i]), "float32 output %d of %+v", i, c)
		}
	}
}

// TestMaxPool2x2PlaneMatchesGo checks the float32 plane kernel (assembly
// where the CPU has it) against maxPool2x2Go on every width 2…67 and
// several heights, bits and positions, with the outputs poisoned with NaN
// and guard elements after them that must stay untouched.
func TestMaxPool2x2PlaneMatchesGo(t *testing.T) {
	const guard = 19
	rng := rand.New(rand.NewPCG(7, 8))
	for w := 2; w <= 67; w++ {
		for _, h := range []int{2, 3, 6, 9} {
			oh, ow := h/2, w/2
			src := pool2x2Input(rng, h*w)
			plane := make([]float32, len(src))
			for i, v := range src {
				plane[i] = float32(v)
			}
			want, wantIdx := make([]float32, oh*ow), make([]int64, oh*ow)
			maxPool2x2Go(want, wantIdx, plane, oh, ow, w)
			got, gotIdx := make([]float32, oh*ow+guard), make([]int64, oh*ow+guard)
			for i := range got {
				got[i], gotIdx[i] = float32(math.NaN()), -7
			}
			maxPool2x2Plane32(got[:oh*ow], gotIdx[:oh*ow], plane, oh, ow, w)
			require.Equal(t, wantIdx, gotIdx[:oh*ow], "positions, %d×%d", h, w)
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "output %d, %d×%d", i, h, w)
			}
			for i := oh * ow; i < len(got); i++ {
				require.True(t, math.IsNaN(float64(got[i])), "guard %d written, %d×%d", i, h, w)
				require.Equal(t, int64(-7), gotIdx[i], "guard position %d written, %d×%d", i, h, w)
			}
		}
	}
}

// pool2x2Input returns n values drawn from a few, so that windows hold
// ties, with NaNs (two payloads), infinities and both zeros among them.
func pool2x2Input(rng *rand.Rand, n int) []float64 {
	pool := []float64{-2, -1, 1, 2, 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1),
		math.NaN(), math.Float64frombits(0x7ffc000000000000)}
	src := make([]float64, n)
	for i := range src {
		if rng.IntN(3) == 0 {
			src[i] = pool[rng.IntN(len(pool))]
			continue
		}
		src[i] = float64(rng.IntN(5) - 2)
	}
	return src
}

// BenchmarkMaxPool2x2 times float32 2×2 stride-2 pooling with positions
// on examples/ddp's CNN shapes (batch 32: 16 planes of 28×28, 32 of
// 14×14) on one goroutine, MaxPool2d (the vector kernel where the CPU has
// one) against the Go loop, on ReLU-like inputs (half zeros, whose
// branches the Go loop predicts well) and on normal random ones.
func BenchmarkMaxPool2x2(b *testing.B) {
	parallel.SetThreads(1)
	defer parallel.SetThreads(0)
	shapes := []struct {
		name         string
		planes, h, w int
	}{{"28x28", 32 * 16, 28, 28}, {"14x14", 32 * 32, 14, 14}}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range shapes {
		g := PoolGeom{Planes: sh.planes, H: sh.h, W: sh.w, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
			DilationH: 1, DilationW: 1, OH: sh.h / 2, OW: sh.w / 2}
		hw, ohw := sh.h*sh.w, g.OH*g.OW
		dst, idx := make([]float32, sh.planes*ohw), make([]int64, sh.planes*ohw)
		for _, data := range []string{"relu", "random"} {
			src := make([]float32, sh.planes*hw)
			for i := range src {
				v := float32(rng.NormFloat64())
				if data == "relu" {
					v = max(v, 0)
				}
				src[i] = v
			}
			b.Run(sh.name+"/"+data+"/kernel", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					MaxPool2d(dst, idx, src, g)
				}
			})
			b.Run(sh.name+"/"+data+"/go", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					for p := range sh.planes {
						maxPool2x2Go(dst[p*ohw:][:ohw], idx[p*ohw:][:ohw], src[p*hw:][:hw], g.OH, g.OW, g.W)
					}
				}
			})
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
// has it, NEON on arm64) against its Go twin on every length 1…67 at odd
// offsets, with NaNs, infinities and zeros of both signs, and guards past
// the end.
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
