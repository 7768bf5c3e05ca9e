//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/emberml/ember/tensor/internal/isa"
)

// TestWinogradInputAVX2MatchesGo runs the AVX2 input transform against its
// Go twin, bit for bit, on every tile group of images with padding, edge
// tiles and groups padded with empty lanes, wherever the CPU has AVX2
// (whichever path is in force), with positions vs apart and channels
// rowStride apart as the packed layout and the one-channel scratch use
// them.
func TestWinogradInputAVX2MatchesGo(t *testing.T) {
	if !isa.Supports(isa.AVX2) {
		t.Skip("this CPU or build has no AVX2")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ n, c, h, w, pad int }{
		{1, 1, 1, 1, 1}, {2, 3, 7, 9, 1}, {1, 5, 67, 13, 0}, {3, 2, 11, 67, 2}, {1, 7, 33, 31, 1}, {2, 1, 2, 3, 2},
	} {
		for _, layout := range []struct{ rowStride, vs int }{{16, 16 * 16 * 8}, {0, winoLanes}} {
			t.Run(fmt.Sprintf("%+v/%+v", c, layout), func(t *testing.T) {
				g := ConvGeom{N: c.n, C: c.c, H: c.h, W: c.w, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
					PadH: c.pad, PadW: c.pad, DilationH: 1, DilationW: 1, OH: c.h + 2*c.pad - 2, OW: c.w + 2*c.pad - 2}
				x := toF32(randSlice(r, c.n*c.c*c.h*c.w))
				ww := packWinogradWeights(make([]float32, winogradWeightsSize(1, c.c)), toF32(randSlice(r, c.c*9)), 1, c.c, false)
				p := newWinoPlan(nil, x, ww, toF32(randSlice(r, 1)), nil, g, false)
				channels := c.c
				if layout.rowStride == 0 {
					channels = 1
				}
				size := winoPositions*layout.vs + (channels-1)*layout.rowStride
				for _, gr := range p.groups(nil, 0, p.tiles) {
					got, want := poisoned[float32](size), poisoned[float32](size)
					winoInputAVX2(&x[0], c.h*c.w, c.w, &gr, &got[0], layout.rowStride, layout.vs, channels)
					winoInputGo(x, c.h*c.w, c.w, &gr, want, layout.rowStride, layout.vs, channels)
					requireSameFloats(t, want, got, "input transform")
				}
			})
		}
	}
}
