package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// dwGeom returns the geometry of a depthwise convolution of n images of c
// channels h×w with a k×k kernel, or false when no output fits.
func dwGeom(n, c, h, w, k, stride, pad, dil int) (ConvGeom, bool) {
	g := ConvGeom{N: n, C: c, H: h, W: w, KH: k, KW: k, StrideH: stride, StrideW: stride,
		PadH: pad, PadW: pad, DilationH: dil, DilationW: dil}
	g.OH = (h+2*pad-dil*(k-1)-1)/stride + 1
	g.OW = (w+2*pad-dil*(k-1)-1)/stride + 1
	return g, h+2*pad >= dil*(k-1)+1 && w+2*pad >= dil*(k-1)+1
}

// dwGuard is how many poisoned elements follow each output of the
// kernels under test, within its capacity: a whole 64-lane step stored
// where the last one should be masked overwrites them.
const dwGuard = 64

// guardedOut returns n NaN-poisoned elements followed by dwGuard more.
func guardedOut(n int) []float32 { return poisoned[float32](n + dwGuard)[:n] }

// requireDWClose checks got against the Go kernels' want: NaN where want is
// NaN, the same infinity where it is infinite, else within tol·(1+|want|)
// (the assembly fuses multiply-adds and orders sums differently); and that
// nothing past got's end (up to its capacity) was written.
func requireDWClose(t *testing.T, want, got []float32, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i, v := range got[len(got):cap(got)] {
		require.True(t, math.IsNaN(float64(v)), "%s: element %d past the end written (%v)", what, i, v)
	}
	for i, v := range want {
		if math.IsNaN(float64(v)) {
			require.True(t, math.IsNaN(float64(got[i])), "%s[%d]: got %v, want NaN", what, i, got[i])
			continue
		}
		if math.IsInf(float64(v), 0) {
			require.Equal(t, v, got[i], "%s[%d]", what, i)
			continue
		}
		require.InDelta(t, float64(v), float64(got[i]), tol*(1+math.Abs(float64(v))), "%s[%d]", what, i)
	}
}

// TestDepthwiseMatchesGo runs the float32 depthwise kernels (assembly where
// the CPU has it) against their Go loops on random planes of widths 1…127,
// strides 1 to 3, paddings 0…2, kernels 3 and 5, dilations 1 and 2, one
// and two outputs per channel, with every output buffer poisoned with NaN.
func TestDepthwiseMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	widths := []int{1, 2, 3, 5, 7, 13, 15, 16, 17, 31, 33, 47, 63, 64, 65, 67, 127}
	for _, w := range widths {
		for _, stride := range []int{1, 2, 3} {
			for _, k := range []int{3, 5} {
				for _, pad := range []int{0, 1, 2} {
					dil := 1 + r.IntN(2)
					h := 1 + r.IntN(9)
					mult := 1 + r.IntN(2)
					g, ok := dwGeom(1+r.IntN(2), 1+r.IntN(3), h, w, k, stride, pad, dil)
					if !ok {
						continue
					}
					name := fmt.Sprintf("w%d_h%d_s%d_k%d_p%d_d%d_m%d", w, h, stride, k, pad, dil, mult)
					t.Run(name, func(t *testing.T) { checkDepthwise(t, r, g, g.C*mult) })
				}
			}
		}
	}
	// Planes of one or two rows or columns, where phases and shifted rows
	// run out, a dilation that leaves a stride-2 phase without taps, and
	// padding wider than the kernel's reach.
	edges := []struct{ h, w, k, stride, pad, dil int }{
		{1, 1, 3, 2, 1, 1}, {1, 9, 3, 2, 1, 1}, {9, 1, 3, 2, 1, 1}, {2, 2, 3, 2, 1, 1},
		{1, 17, 3, 1, 1, 1}, {17, 1, 3, 1, 1, 1}, {7, 9, 3, 2, 2, 2}, {1, 3, 5, 1, 2, 1},
		{5, 6, 3, 1, 3, 1}, {6, 7, 3, 2, 3, 1}, {4, 70, 3, 1, 4, 1},
	}
	for _, e := range edges {
		g, ok := dwGeom(2, 3, e.h, e.w, e.k, e.stride, e.pad, e.dil)
		require.True(t, ok)
		name := fmt.Sprintf("edge_h%d_w%d_s%d_k%d_p%d_d%d", e.h, e.w, e.stride, e.k, e.pad, e.dil)
		t.Run(name, func(t *testing.T) { checkDepthwise(t, r, g, 6) })
	}
	// Kernels, strides, paddings and dilations that differ between rows
	// and columns (even kernels among them), which only the padded-copy
	// routes take.
	rects := []ConvGeom{
		{N: 2, C: 3, H: 9, W: 70, KH: 3, KW: 5, StrideH: 1, StrideW: 2, PadH: 1, PadW: 2, DilationH: 2, DilationW: 1},
		{N: 1, C: 2, H: 11, W: 8, KH: 5, KW: 1, StrideH: 2, StrideW: 1, PadH: 2, PadW: 0, DilationH: 1, DilationW: 1},
		{N: 2, C: 2, H: 7, W: 33, KH: 1, KW: 3, StrideH: 3, StrideW: 1, PadH: 0, PadW: 1, DilationH: 1, DilationW: 2},
		{N: 1, C: 3, H: 6, W: 17, KH: 2, KW: 4, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2, DilationH: 1, DilationW: 1},
	}
	for _, g := range rects {
		g.OH = (g.H+2*g.PadH-g.DilationH*(g.KH-1)-1)/g.StrideH + 1
		g.OW = (g.W+2*g.PadW-g.DilationW*(g.KW-1)-1)/g.StrideW + 1
		name := fmt.Sprintf("rect_%dx%d_k%dx%d_s%dx%d", g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW)
		t.Run(name, func(t *testing.T) { checkDepthwise(t, r, g, 2*g.C) })
	}
	// Enough work for the planes to be shared among goroutines.
	for _, stride := range []int{1, 2} {
		g, ok := dwGeom(2, 8, 40, 45, 3, stride, 1, 1)
		require.True(t, ok)
		t.Run(fmt.Sprintf("parallel_s%d", stride), func(t *testing.T) { checkDepthwise(t, r, g, 8) })
	}
}

// checkDepthwise compares DepthwiseForward (with and without bias and
// relu, a NaN among the inputs), DepthwiseBackwardInput and
// DepthwiseBackwardWeight on float32 with the Go loops for g and o outputs.
func checkDepthwise(t *testing.T, r *rand.Rand, g ConvGeom, o int) {
	taps, l := g.KH*g.KW, g.OH*g.OW
	x := toF32(randSlice(r, g.N*g.C*g.H*g.W))
	w := toF32(randSlice(r, o*taps))
	bias := toF32(randSlice(r, o))
	gy := toF32(randSlice(r, g.N*o*l))
	for _, relu := range []bool{false, true} {
		for _, b := range [][]float32{nil, bias} {
			want := poisoned[float32](g.N * o * l)
			depthwiseForwardGo(want, x, w, b, g, o, 1, relu)
			got := guardedOut(len(want))
			DepthwiseForward(got, x, w, b, g, o, 2, relu)
			requireDWClose(t, want, got, 1e-5, fmt.Sprintf("forward relu=%v bias=%v", relu, b != nil))
		}
	}
	nan := append([]float32(nil), x...)
	nan[r.IntN(len(nan))] = float32(math.NaN())
	want := poisoned[float32](g.N * o * l)
	depthwiseForwardGo(want, nan, w, bias, g, o, 1, true)
	got := guardedOut(len(want))
	DepthwiseForward(got, nan, w, bias, g, o, 1, true)
	requireDWClose(t, want, got, 1e-5, "forward with NaN")

	// Taps over the padding are skipped, on every route, so an infinite
	// weight reaches only the outputs whose window it meets inside the
	// plane.
	wInf := append([]float32(nil), w...)
	wInf[r.IntN(len(wInf))] = float32(math.Inf(-1))
	depthwiseForwardGo(want, x, wInf, bias, g, o, 1, false)
	got = guardedOut(len(want))
	DepthwiseForward(got, x, wInf, bias, g, o, 2, false)
	requireDWClose(t, want, got, 1e-5, "forward with an infinite weight")
	wantDx := poisoned[float32](len(x))
	depthwiseBackwardInputGo(wantDx, gy, wInf, g, o, 1)
	gotDx := guardedOut(len(x))
	DepthwiseBackwardInput(gotDx, gy, wInf, g, o, 2)
	requireDWClose(t, wantDx, gotDx, 1e-5, "dx with an infinite weight")

	wantDx = poisoned[float32](len(x))
	depthwiseBackwardInputGo(wantDx, gy, w, g, o, 1)
	gotDx = guardedOut(len(x))
	DepthwiseBackwardInput(gotDx, gy, w, g, o, 2)
	requireDWClose(t, wantDx, gotDx, 1e-5, "dx")

	wantDw := poisoned[float32](len(w))
	depthwiseBackwardWeightGo(wantDw, x, gy, g, o, 1)
	gotDw := guardedOut(len(w))
	DepthwiseBackwardWeight(gotDw, x, gy, g, o, 2)
	requireDWClose(t, wantDw, gotDw, 1e-5*math.Sqrt(float64(g.N*l)), "dw")

	// An infinity must reach only the taps that see it.
	inf := append([]float32(nil), x...)
	inf[r.IntN(len(inf))] = float32(math.Inf(1))
	depthwiseBackwardWeightGo(wantDw, inf, gy, g, o, 1)
	gotDw = guardedOut(len(w))
	DepthwiseBackwardWeight(gotDw, inf, gy, g, o, 2)
	requireDWClose(t, wantDw, gotDw, 1e-5*math.Sqrt(float64(g.N*l)), "dw with Inf")

	// Nor may an infinite output gradient meet the padding.
	gyInf := append([]float32(nil), gy...)
	gyInf[r.IntN(len(gyInf))] = float32(math.Inf(-1))
	depthwiseBackwardWeightGo(wantDw, x, gyInf, g, o, 1)
	gotDw = guardedOut(len(w))
	DepthwiseBackwardWeight(gotDw, x, gyInf, g, o, 2)
	requireDWClose(t, wantDw, gotDw, 1e-5*math.Sqrt(float64(g.N*l)), "dw with an infinite gradient")
}

// BenchmarkDepthwise times the float32 depthwise kernels on the 3×3,
// padding-1 layers of MobileNetV2 (batch 1, one thread), the Go loops
// ("go") beside DepthwiseForward and its gradients ("new"), in GMAC/s of
// wall time and of process CPU time (steadier on a busy machine).
func BenchmarkDepthwise(b *testing.B) {
	shapes := []struct{ c, hw, stride int }{
		{32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {192, 28, 1}, {576, 14, 1}, {960, 7, 1},
	}
	type pass struct {
		name     string
		go_, new func(x, w, gy, y []float32, g ConvGeom)
	}
	passes := []pass{
		{"fwd",
			func(x, w, _, y []float32, g ConvGeom) { depthwiseForwardGo(y, x, w, nil, g, g.C, 1, false) },
			func(x, w, _, y []float32, g ConvGeom) { DepthwiseForward(y, x, w, nil, g, g.C, 1, false) }},
		{"dx",
			func(x, w, gy, _ []float32, g ConvGeom) { depthwiseBackwardInputGo(x, gy, w, g, g.C, 1) },
			func(x, w, gy, _ []float32, g ConvGeom) { DepthwiseBackwardInput(x, gy, w, g, g.C, 1) }},
		{"dw",
			func(x, w, gy, _ []float32, g ConvGeom) { depthwiseBackwardWeightGo(w, x, gy, g, g.C, 1) },
			func(x, w, gy, _ []float32, g ConvGeom) { DepthwiseBackwardWeight(w, x, gy, g, g.C, 1) }},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range shapes {
		g, _ := dwGeom(1, s.c, s.hw, s.hw, 3, s.stride, 1, 1)
		x := toF32(randSlice(r, s.c*s.hw*s.hw))
		w := toF32(randSlice(r, s.c*9))
		gy := toF32(randSlice(r, s.c*g.OH*g.OW))
		y := make([]float32, len(gy))
		macs := float64(s.c * 9 * g.OH * g.OW)
		for _, p := range passes {
			for _, v := range []struct {
				name string
				f    func(x, w, gy, y []float32, g ConvGeom)
			}{{"go", p.go_}, {"new", p.new}} {
				b.Run(fmt.Sprintf("%s/c%d_%d_s%d/%s", p.name, s.c, s.hw, s.stride, v.name), func(b *testing.B) {
					t0 := cpuSeconds()
					for b.Loop() {
						v.f(x, w, gy, y, g)
					}
					b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
					b.ReportMetric(macs*float64(b.N)/(cpuSeconds()-t0)/1e9, "GMAC/cpu-s")
				})
			}
		}
	}
}
