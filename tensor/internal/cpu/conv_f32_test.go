package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// refConv computes the convolution, its input gradient and its weight
// gradient by the definition, in float64.
func refConv(x, w, bias, gy []float64, g ConvGeom, o, groups int) (y, dx, dw []float64) {
	cg, og := g.C/groups, o/groups
	y = make([]float64, g.N*o*g.OH*g.OW)
	dx = make([]float64, g.N*g.C*g.H*g.W)
	dw = make([]float64, o*cg*g.KH*g.KW)
	for n := range g.N {
		for oc := range o {
			for oh := range g.OH {
				for ow := range g.OW {
					yi := ((n*o+oc)*g.OH+oh)*g.OW + ow
					s := 0.0
					if bias != nil {
						s = bias[oc]
					}
					for ci := range cg {
						c := oc/og*cg + ci
						for kh := range g.KH {
							ih := oh*g.StrideH + kh*g.DilationH - g.PadH
							for kw := range g.KW {
								iw := ow*g.StrideW + kw*g.DilationW - g.PadW
								if ih < 0 || ih >= g.H || iw < 0 || iw >= g.W {
									continue
								}
								xi := ((n*g.C+c)*g.H+ih)*g.W + iw
								wi := ((oc*cg+ci)*g.KH+kh)*g.KW + kw
								s += x[xi] * w[wi]
								dx[xi] += gy[yi] * w[wi]
								dw[wi] += gy[yi] * x[xi]
							}
						}
					}
					y[yi] = s
				}
			}
		}
	}
	return y, dx, dw
}

func randSlice(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.Float64()*2 - 1
	}
	return s
}

func toF32(s []float64) []float32 {
	if s == nil {
		return nil
	}
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = float32(v)
	}
	return out
}

// poisoned returns n NaNs: kernels must overwrite every element.
func poisoned[T Float](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(math.NaN())
	}
	return s
}

func requireClose[T Float](t *testing.T, want []float64, got []T, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), tol*(1+math.Abs(want[i])), "%s[%d]", what, i)
	}
}

func TestConvKernelsMatchDefinition(t *testing.T) {
	type tc struct {
		n, c, o, h, w, kh, kw, sh, sw, ph, pw, dh, dw, groups int
		bias                                                  bool
	}
	cases := []tc{
		{n: 3, c: 5, o: 7, h: 9, w: 11, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 1, c: 4, o: 6, h: 8, w: 7, kh: 3, kw: 2, sh: 2, sw: 3, ph: 1, pw: 2, dh: 1, dw: 2, groups: 2, bias: true},
		{n: 2, c: 6, o: 5, h: 7, w: 7, kh: 1, kw: 1, sh: 1, sw: 1, ph: 0, pw: 0, dh: 1, dw: 1, groups: 1, bias: false},
		{n: 5, c: 4, o: 8, h: 6, w: 5, kh: 1, kw: 1, sh: 1, sw: 1, ph: 0, pw: 0, dh: 1, dw: 1, groups: 4, bias: true},
		{n: 2, c: 3, o: 4, h: 7, w: 6, kh: 1, kw: 1, sh: 2, sw: 2, ph: 0, pw: 0, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 4, c: 6, o: 6, h: 9, w: 10, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 6, bias: true},
		{n: 2, c: 3, o: 6, h: 8, w: 9, kh: 3, kw: 5, sh: 2, sw: 1, ph: 2, pw: 0, dh: 2, dw: 1, groups: 3, bias: false},
		{n: 3, c: 2, o: 3, h: 4, w: 4, kh: 4, kw: 4, sh: 1, sw: 1, ph: 0, pw: 0, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 2, c: 4, o: 6, h: 9, w: 8, kh: 3, kw: 2, sh: 1, sw: 1, ph: 1, pw: 2, dh: 2, dw: 3, groups: 2, bias: true},
		{n: 2, c: 3, o: 5, h: 6, w: 7, kh: 3, kw: 3, sh: 1, sw: 1, ph: 3, pw: 0, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 1, c: 17, o: 33, h: 13, w: 15, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		// More than one GEMM depth block (ck > 384) and column block
		// (OH*OW > 2048, the second block starting mid-row), lowered
		// straight into the packed panels.
		{n: 1, c: 45, o: 13, h: 50, w: 50, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 2, c: 44, o: 14, h: 99, w: 97, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 1, dh: 1, dw: 1, groups: 2, bias: false},
		// Horizontal stride with unit vertical stride: the phase planes
		// are read as one run per column-matrix row (odd widths leave
		// unread cells at the phase rows' ends), across a column block.
		{n: 1, c: 3, o: 5, h: 6, w: 7, kh: 3, kw: 3, sh: 1, sw: 2, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 2, c: 4, o: 3, h: 5, w: 8, kh: 2, kw: 3, sh: 1, sw: 2, ph: 0, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 1, c: 5, o: 7, h: 30, w: 150, kh: 3, kw: 3, sh: 1, sw: 2, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: false},
		{n: 1, c: 3, o: 13, h: 40, w: 70, kh: 7, kw: 7, sh: 2, sw: 2, ph: 3, pw: 3, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 1, c: 2, o: 4, h: 9, w: 11, kh: 3, kw: 3, sh: 1, sw: 3, ph: 2, pw: 2, dh: 2, dw: 2, groups: 1, bias: true},
		// Weight gradients lowered a chunk of images at a time (C·KH·KW ≥
		// 64): several chunks, the last one short, spread over threads.
		{n: 11, c: 8, o: 5, h: 20, w: 22, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		{n: 30, c: 9, o: 4, h: 31, w: 29, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 2, dh: 1, dw: 2, groups: 1, bias: false},
		// Images too large to share a chunk: one image per product.
		{n: 3, c: 30, o: 4, h: 40, w: 40, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
		// One image large enough to split its phase planes over threads.
		{n: 1, c: 12, o: 6, h: 60, w: 61, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 1, dh: 1, dw: 1, groups: 1, bias: true},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		g := ConvGeom{N: c.n, C: c.c, H: c.h, W: c.w, KH: c.kh, KW: c.kw, StrideH: c.sh, StrideW: c.sw,
			PadH: c.ph, PadW: c.pw, DilationH: c.dh, DilationW: c.dw}
		g.OH = (c.h+2*c.ph-c.dh*(c.kh-1)-1)/c.sh + 1
		g.OW = (c.w+2*c.pw-c.dw*(c.kw-1)-1)/c.sw + 1
		x := randSlice(r, c.n*c.c*c.h*c.w)
		w := randSlice(r, c.o*c.c/c.groups*c.kh*c.kw)
		var bias []float64
		if c.bias {
			bias = randSlice(r, c.o)
		}
		gy := randSlice(r, c.n*c.o*g.OH*g.OW)
		y, dx, dw := refConv(x, w, bias, gy, g, c.o, c.groups)
		relu := make([]float64, len(y))
		for i, v := range y {
			relu[i] = max(v, 0)
		}
		for _, threads := range []int{1, 2, 3} {
			name := fmt.Sprintf("%+v/threads=%d", c, threads)
			t.Run(name, func(t *testing.T) {
				got := poisoned[float32](len(y))
				ConvForwardF32(got, toF32(x), toF32(w), toF32(bias), g, c.o, c.groups, threads, false)
				requireClose(t, y, got, 1e-4, "forward")
				ConvForwardF32(got, toF32(x), toF32(w), toF32(bias), g, c.o, c.groups, threads, true)
				requireClose(t, relu, got, 1e-4, "forward+relu")
				packed := poisoned[float32](len(y))
				pw := PackConvWeightsF32(toF32(w), c.o, c.groups, c.c/c.groups, c.kh, c.kw)
				ConvForwardPackedF32(packed, toF32(x), pw, toF32(bias), nil, g, threads, true)
				// The packed weight may take Winograd where the per-call
				// path does not (fewer tiles pay back a transform made once).
				requireClose(t, relu, packed, 1e-4, "pre-packed forward+relu")
				res := randSlice(r, len(y))
				withRes := make([]float64, len(y))
				for i := range y {
					withRes[i] = max(y[i]+res[i], 0)
				}
				ConvForwardPackedF32(packed, toF32(x), pw, toF32(bias), toF32(res), g, threads, true)
				requireClose(t, withRes, packed, 1e-4, "pre-packed forward+residual+relu")
				gotDx := poisoned[float32](len(dx))
				ConvBackwardInputF32(gotDx, toF32(gy), toF32(w), g, c.o, c.groups, threads)
				requireClose(t, dx, gotDx, 1e-4, "input grad")
				gotDw := poisoned[float32](len(dw))
				ConvBackwardWeightF32(gotDw, toF32(x), toF32(gy), g, c.o, c.groups, threads)
				requireClose(t, dw, gotDw, 1e-4, "weight grad")
				if c.groups != c.c {
					return
				}
				for _, fuse := range []bool{false, true} {
					want := y
					if fuse {
						want = relu64(y)
					}
					got64 := poisoned[float64](len(y))
					DepthwiseForward(got64, x, w, bias, g, c.o, threads, fuse)
					requireClose(t, want, got64, 1e-12, "depthwise forward")
				}
				dx64 := poisoned[float64](len(dx))
				DepthwiseBackwardInput(dx64, gy, w, g, c.o, threads)
				requireClose(t, dx, dx64, 1e-12, "depthwise input grad")
				dw64 := poisoned[float64](len(dw))
				DepthwiseBackwardWeight(dw64, x, gy, g, c.o, threads)
				requireClose(t, dw, dw64, 1e-12, "depthwise weight grad")
				dw32 := poisoned[float32](len(dw))
				DepthwiseBackwardWeight(dw32, toF32(x), toF32(gy), g, c.o, threads)
				requireClose(t, dw, dw32, 1e-4, "depthwise float32 weight grad")
			})
		}
	}
}

func relu64(y []float64) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = max(v, 0)
	}
	return out
}

// resnet18Convs lists the convolutions of ResNet-18 on one 224×224 image
// (input channels, output channels, kernel, stride, input size) with how
// often each occurs.
var resnet18Convs = []struct{ c, k, kernel, stride, hw, count int }{
	{3, 64, 7, 2, 224, 1},
	{64, 64, 3, 1, 56, 4},
	{64, 128, 3, 2, 56, 1}, {64, 128, 1, 2, 56, 1}, {128, 128, 3, 1, 28, 3},
	{128, 256, 3, 2, 28, 1}, {128, 256, 1, 2, 28, 1}, {256, 256, 3, 1, 14, 3},
	{256, 512, 3, 2, 14, 1}, {256, 512, 1, 2, 14, 1}, {512, 512, 3, 1, 7, 3},
}

// BenchmarkResNet18Convs times each convolution of ResNet-18 at batch 1
// with the weight packed once, as inference runs them, at 1 and 2
// threads, and all of them in sequence ("all"): wall time per op and CPU
// time (cpu-ms/op) show how each layer scales.
func BenchmarkResNet18Convs(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 18))
	type layer struct {
		name   string
		g      ConvGeom
		pw     *PackedConvF32
		x, dst []float32
		bias   []float32
		count  int
	}
	var layers []layer
	for _, s := range resnet18Convs {
		pad := s.kernel / 2
		oh := (s.hw+2*pad-s.kernel)/s.stride + 1
		g := ConvGeom{N: 1, C: s.c, H: s.hw, W: s.hw, KH: s.kernel, KW: s.kernel, StrideH: s.stride, StrideW: s.stride,
			PadH: pad, PadW: pad, DilationH: 1, DilationW: 1, OH: oh, OW: oh}
		layers = append(layers, layer{
			name: fmt.Sprintf("c%d_k%d_%dx%d_s%d_hw%d", s.c, s.k, s.kernel, s.kernel, s.stride, s.hw), g: g,
			pw: PackConvWeightsF32(toF32(randSlice(r, s.k*s.c*s.kernel*s.kernel)), s.k, 1, s.c, s.kernel, s.kernel),
			x:  toF32(randSlice(r, s.c*s.hw*s.hw)), dst: make([]float32, s.k*oh*oh), bias: toF32(randSlice(r, s.k)), count: s.count,
		})
	}
	for _, threads := range []int{1, 2} {
		for _, l := range layers {
			b.Run(fmt.Sprintf("%s/threads=%d", l.name, threads), func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					ConvForwardPackedF32(l.dst, l.x, l.pw, l.bias, nil, l.g, threads, true)
				}
			})
		}
		b.Run(fmt.Sprintf("all/threads=%d", threads), func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				for _, l := range layers {
					for range l.count {
						ConvForwardPackedF32(l.dst, l.x, l.pw, l.bias, nil, l.g, threads, true)
					}
				}
			}
		})
	}
}

func TestPhaseUsed(t *testing.T) {
	cases := []struct {
		name              string
		s, taps, dil, pad int
		want              []bool
	}{
		{"1x1 stride 2", 2, 1, 1, 0, []bool{true, false}},
		{"3x3 stride 2 pad 1", 2, 3, 1, 1, []bool{true, true}},
		{"7x7 stride 2 pad 3", 2, 7, 1, 3, []bool{true, true}},
		{"1 tap stride 3 pad 1", 3, 1, 1, 1, []bool{false, false, true}},
		{"2 taps dilation 3 stride 3", 3, 2, 3, 0, []bool{true, false, false}},
		{"3 taps dilation 2 stride 2 pad 1", 2, 3, 2, 1, []bool{false, true}},
	}
	for _, c := range cases {
		for r, want := range c.want {
			require.Equal(t, want, phaseUsed(r, c.s, c.taps, c.dil, c.pad), "%s: phase %d", c.name, r)
		}
	}
}
