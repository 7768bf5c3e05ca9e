//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
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

// TestWinogradOutputAVX2MatchesGo runs the AVX2 output transform against
// its Go twin, bit for bit (NaN guards included: an output outside the
// image must stay unwritten), with and without a residual and ReLU, on
// every tile group, wherever the CPU has AVX2.
func TestWinogradOutputAVX2MatchesGo(t *testing.T) {
	if !isa.Supports(isa.AVX2) {
		t.Skip("this CPU or build has no AVX2")
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct{ n, c, k, h, w, pad int }{
		{1, 1, 1, 1, 1, 1}, {2, 3, 5, 7, 9, 1}, {1, 5, 3, 67, 13, 0}, {3, 2, 7, 11, 67, 2}, {1, 7, 9, 33, 31, 1}, {2, 1, 2, 2, 3, 2},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			g := ConvGeom{N: c.n, C: c.c, H: c.h, W: c.w, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
				PadH: c.pad, PadW: c.pad, DilationH: 1, DilationW: 1, OH: c.h + 2*c.pad - 2, OW: c.w + 2*c.pad - 2}
			x := toF32(randSlice(r, c.n*c.c*c.h*c.w))
			ww := packWinogradWeights(make([]float32, winogradWeightsSize(c.k, c.c)), toF32(randSlice(r, c.k*c.c*9)), c.k, c.c, false)
			l := c.n * c.k * g.OH * g.OW
			res := toF32(randSlice(r, l))
			res[0] = float32(math.NaN()) // NaN stays NaN through the ReLU
			p := newWinoPlan(nil, x, ww, toF32(randSlice(r, c.k)), nil, g, false)
			gs := p.groups(nil, 0, p.tiles)
			m := toF32(randSlice(r, winoPositions*c.k*len(gs)*winoLanes))
			mk := len(gs) * winoLanes
			for gi := range gs {
				for _, relu := range []bool{false, true} {
					for _, rs := range [][]float32{nil, res} {
						got, want := poisoned[float32](l), poisoned[float32](l)
						var rp *float32
						if rs != nil {
							rp = &rs[0]
						}
						winoOutputAVX2(&m[gi*winoLanes], c.k*mk, mk, &got[0], g.OH*g.OW, g.OW, &gs[gi], &p.bias[0], rp, b2i(relu), c.k)
						winoOutputGo(m[gi*winoLanes:], c.k*mk, mk, want, g.OH*g.OW, g.OW, &gs[gi], p.bias, rs, relu, c.k)
						requireSameFloats(t, want, got, "output transform")
					}
				}
			}
		})
	}
}
