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
		for b.Loop() {
			MaxPool2d(dst, idx, src, g)
		}
	})
	b.Run("values", func(b *testing.B) {
		for b.Loop() {
			MaxPool2dValues(dst, src, g)
		}
	})
}
