package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// refIm2Col is Im2Col by its definition: element (c·KH·KW + kh·KW + kw,
// n·OH·OW + oh·OW + ow) is the input pixel that kernel tap reads for that
// output position, zero in the padding.
func refIm2Col(src []float32, g ConvGeom) []float32 {
	l := g.OH * g.OW
	dst := make([]float32, g.C*g.KH*g.KW*g.N*l)
	for c := range g.C {
		for kh := range g.KH {
			for kw := range g.KW {
				r := (c*g.KH+kh)*g.KW + kw
				for n := range g.N {
					for oh := range g.OH {
						for ow := range g.OW {
							ih := oh*g.StrideH + kh*g.DilationH - g.PadH
							iw := ow*g.StrideW + kw*g.DilationW - g.PadW
							if ih < 0 || ih >= g.H || iw < 0 || iw >= g.W {
								continue
							}
							dst[r*g.N*l+n*l+oh*g.OW+ow] = src[((n*g.C+c)*g.H+ih)*g.W+iw]
						}
					}
				}
			}
		}
	}
	return dst
}

// TestIm2ColMatchesDefinition covers the one-copy path for stride-1 taps
// that keep the width (every padding and dilation that gives OW == W, with
// OH equal, smaller or larger than H) and the per-row path beside it.
func TestIm2ColMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct{ h, w, k, stride, pad, dil, padH int }{
		{14, 14, 3, 1, 1, 1, 1}, // "same" 3×3: the ddp CNN's layers
		{1, 1, 3, 1, 1, 1, 1},   // every tap but the centre in the padding
		{5, 7, 5, 1, 2, 1, 2},   // "same" 5×5
		{6, 9, 3, 1, 2, 2, 2},   // dilated "same"
		{7, 5, 3, 1, 1, 1, 0},   // OW == W, OH = H-2
		{7, 5, 3, 1, 1, 1, 3},   // OW == W, OH = H+4: whole rows of padding
		{4, 3, 1, 1, 0, 1, 0},   // pointwise
		{9, 8, 3, 1, 0, 1, 0},   // valid: OW < W, per-row path
		{9, 11, 3, 2, 1, 1, 1},  // stride 2
		{2, 3, 3, 1, 3, 1, 1},   // padding wider than the kernel reaches: OW > W
	}
	for _, tc := range cases {
		g := ConvGeom{N: 2, C: 3, H: tc.h, W: tc.w, KH: tc.k, KW: tc.k,
			StrideH: tc.stride, StrideW: tc.stride, PadH: tc.padH, PadW: tc.pad,
			DilationH: tc.dil, DilationW: tc.dil}
		g.OH = (g.H+2*g.PadH-g.DilationH*(g.KH-1)-1)/g.StrideH + 1
		g.OW = (g.W+2*g.PadW-g.DilationW*(g.KW-1)-1)/g.StrideW + 1
		t.Run(fmt.Sprintf("%dx%d_k%d_s%d_p%d,%d_d%d", tc.h, tc.w, tc.k, tc.stride, tc.padH, tc.pad, tc.dil), func(t *testing.T) {
			src := toF32(randSlice(r, g.N*g.C*g.H*g.W))
			want := refIm2Col(src, g)
			got := poisoned[float32](len(want))
			Im2Col(got, src, g)
			require.Equal(t, want, got)
		})
	}
}

// BenchmarkIm2Col times the lowering of one image for the ddp CNN's second
// layer (16 channels, 14×14, 3×3 "same"), which its weight gradient does
// for every image of a batch. Run with
//
//	go test ./tensor/internal/cpu -run '^$' -bench Im2Col
func BenchmarkIm2Col(b *testing.B) {
	g := ConvGeom{N: 1, C: 16, H: 14, W: 14, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 14, OW: 14}
	src := make([]float32, g.C*g.H*g.W)
	dst := make([]float32, g.C*g.KH*g.KW*g.OH*g.OW)
	b.SetBytes(int64(4 * len(dst)))
	for b.Loop() {
		Im2Col(dst, src, g)
	}
}
