package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/stretchr/testify/require"
)

// winoTolerance bounds |Winograd − exact| / Σ|terms| (the products x·w,
// the bias and the residual of each output); see the error note in
// winograd.go for the measured figure.
const winoTolerance = 2e-6

type winoCase struct {
	n, c, k, h, w, pad, threads int
	bias, res, relu             bool
}

// winoCases covers every channel count in {1, 3, 8, 17, 64} for C and K,
// every height and width in {1, 2, 3, 5, 7, 8, 14, 15}, paddings 0 to 2,
// batches 1 to 3 and 1 to 3 threads, cycling the epilogue options.
func winoCases() []winoCase {
	chans := []int{1, 3, 8, 17, 64}
	sizes := []int{1, 2, 3, 5, 7, 8, 14, 15}
	var cases []winoCase
	i := 0
	add := func(c winoCase) {
		if c.h+2*c.pad < 3 || c.w+2*c.pad < 3 {
			c.pad = 2
		}
		c.bias, c.res, c.relu = i%2 == 0, i%3 != 1, i%4 < 2
		cases = append(cases, c)
		i++
	}
	for _, c := range chans {
		for _, k := range chans {
			add(winoCase{n: 1 + i%3, c: c, k: k, h: sizes[i%8], w: sizes[(i*3+1)%8], pad: i % 3, threads: 1 + i%3})
		}
	}
	for _, h := range sizes {
		for _, w := range sizes {
			add(winoCase{n: 1 + i%3, c: chans[i%5], k: chans[(i+2)%5], h: h, w: w, pad: i % 3, threads: 1 + i%3})
		}
	}
	// Many blocks of tiles, shared by goroutines whole, and a block
	// starting mid tile row.
	add(winoCase{n: 3, c: 40, k: 24, h: 29, w: 31, pad: 1, threads: 2})
	add(winoCase{n: 1, c: 96, k: 64, h: 30, w: 27, pad: 1, threads: 3})
	return cases
}

func TestWinogradMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst, worstDirect := 0.0, 0.0
	for _, c := range winoCases() {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			g := ConvGeom{N: c.n, C: c.c, H: c.h, W: c.w, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
				PadH: c.pad, PadW: c.pad, DilationH: 1, DilationW: 1, OH: c.h + 2*c.pad - 2, OW: c.w + 2*c.pad - 2}
			x, w := randSlice(r, c.n*c.c*c.h*c.w), randSlice(r, c.k*c.c*9)
			var bias, res []float64
			if c.bias {
				bias = randSlice(r, c.k)
			}
			l := c.n * c.k * g.OH * g.OW
			if c.res {
				res = randSlice(r, l)
			}
			want, scale := winoReference(x, w, bias, res, g, c.k, c.relu)
			got := poisoned[float32](l)
			ww := packWinogradWeights(make([]float32, winogradWeightsSize(c.k, c.c)), toF32(w), c.k, c.c, false)
			winogradForward(got, toF32(x), ww, toF32(bias), toF32(res), g, c.threads, c.relu)
			for i := range want {
				e := math.Abs(float64(got[i])-want[i]) / scale[i]
				worst = max(worst, e)
				require.LessOrEqual(t, e, winoTolerance, "output %d: got %v, want %v", i, got[i], want[i])
			}
			// The packed entry point takes the Winograd path when the
			// channels are many enough, and the direct one otherwise.
			direct := poisoned[float32](l)
			pw := packConvWeightsFresh(toF32(w), c.k, 1, c.c*9)
			require.False(t, pw.winoOK)
			ConvForwardPackedF32(direct, toF32(x), pw, toF32(bias), toF32(res), g, c.threads, c.relu)
			for i := range want {
				e := math.Abs(float64(direct[i])-want[i]) / scale[i]
				worstDirect = max(worstDirect, e)
				require.LessOrEqual(t, e, winoTolerance, "direct output %d", i)
			}
			viaPack := poisoned[float32](l)
			pw = PackConvWeightsF32(toF32(w), c.k, 1, c.c, 3, 3)
			require.Equal(t, winogradWorth(c.c, c.k), pw.winoOK)
			ConvForwardPackedF32(viaPack, toF32(x), pw, toF32(bias), toF32(res), g, c.threads, c.relu)
			if pw.winoOK && winogradTiles(g) >= winoMinTiles {
				require.Equal(t, got, viaPack)
			} else {
				require.Equal(t, direct, viaPack)
			}
		})
	}
	t.Logf("largest error relative to the sum of magnitudes: Winograd %.3g, direct %.3g", worst, worstDirect)
}

// winoReference returns the convolution with bias and residual (then the
// ReLU) in float64, and for each output the sum of the magnitudes of its
// terms (at least the smallest normal float32).
func winoReference(x, w, bias, res []float64, g ConvGeom, k int, relu bool) (y, scale []float64) {
	abs := func(s []float64) []float64 {
		if s == nil {
			return nil
		}
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = math.Abs(v)
		}
		return out
	}
	gy := make([]float64, g.N*k*g.OH*g.OW)
	y, _, _ = refConv(x, w, bias, gy, g, k, 1)
	scale, _, _ = refConv(abs(x), abs(w), abs(bias), gy, g, k, 1)
	for i := range y {
		if res != nil {
			y[i] += res[i]
			scale[i] += math.Abs(res[i])
		}
		if relu {
			y[i] = max(y[i], 0)
		}
		scale[i] = max(scale[i], math.SmallestNonzeroFloat32*(1<<23))
	}
	return y, scale
}

func TestWinogradTrainingPathDispatch(t *testing.T) {
	// ConvForwardF32 and the input gradient (a forward convolution of the
	// output gradient) take Winograd for these shapes.
	r := rand.New(rand.NewPCG(5, 6))
	g := ConvGeom{N: 3, C: 32, H: 16, W: 15, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
		PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 16, OW: 15}
	const k = 40
	require.True(t, winogradPerCall(g, k))
	x, w, bias := randSlice(r, g.N*g.C*g.H*g.W), randSlice(r, k*g.C*9), randSlice(r, k)
	gy := randSlice(r, g.N*k*g.OH*g.OW)
	y, dx, _ := refConv(x, w, bias, gy, g, k, 1)
	got := poisoned[float32](len(y))
	ConvForwardF32(got, toF32(x), toF32(w), toF32(bias), g, k, 1, 2, false)
	requireClose(t, y, got, 1e-4, "forward")
	gotDx := poisoned[float32](len(dx))
	ConvBackwardInputF32(gotDx, toF32(gy), toF32(w), g, k, 1, 2)
	requireClose(t, dx, gotDx, 1e-4, "input grad")
}

// BenchmarkWinograd compares the direct (packed GEMM) and Winograd paths on
// the 3×3 layers of ResNet-18, with pre-packed weights as in inference.
func BenchmarkWinograd(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range []struct{ n, c, hw int }{
		{1, 64, 56}, {1, 128, 28}, {1, 256, 14}, {1, 512, 7},
		{16, 64, 56}, {16, 128, 28}, {16, 256, 14}, {16, 512, 7},
	} {
		g := ConvGeom{N: s.n, C: s.c, H: s.hw, W: s.hw, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
			PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: s.hw, OW: s.hw}
		x, w := toF32(randSlice(r, s.n*s.c*s.hw*s.hw)), toF32(randSlice(r, s.c*s.c*9))
		bias := toF32(randSlice(r, s.c))
		dst := make([]float32, len(x))
		direct := packConvWeightsFresh(w, s.c, 1, s.c*9)
		ww := packWinogradWeights(make([]float32, winogradWeightsSize(s.c, s.c)), w, s.c, s.c, false)
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("n=%d/c=%d/hw=%d/threads=%d", s.n, s.c, s.hw, threads)
			b.Run(name+"/direct", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					ConvForwardPackedF32(dst, x, direct, bias, nil, g, threads, true)
				}
			})
			b.Run(name+"/winograd", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					winogradForward(dst, x, ww, bias, nil, g, threads, true)
				}
			})
		}
	}
}

func TestWinogradKernelsAsmMatchGo(t *testing.T) {
	if !winoVector() {
		t.Skip("no vector transform kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(11, 12))
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
			p := newWinoPlan(nil, x, ww, toF32(randSlice(r, c.k)), nil, g, false)
			gs := p.groups(nil, 0, p.tiles)
			const rowStride, vs = 16, 16 * 16 * 8
			m := toF32(randSlice(r, winoPositions*c.k*len(gs)*winoLanes))
			for gi := range gs {
				gotIn, wantIn := poisoned[float32](winoPositions*vs), poisoned[float32](winoPositions*vs)
				winoInput(x, c.h*c.w, c.w, &gs[gi], gotIn, rowStride, vs, c.c)
				winoInputGo(x, c.h*c.w, c.w, &gs[gi], wantIn, rowStride, vs, c.c)
				requireSameFloats(t, wantIn, gotIn, "input transform")
				for _, relu := range []bool{false, true} {
					for _, rs := range [][]float32{nil, res} {
						gotOut, wantOut := poisoned[float32](l), poisoned[float32](l)
						mk := len(gs) * winoLanes
						winoOutput(m[gi*winoLanes:], c.k*mk, mk, gotOut, g.OH*g.OW, g.OW, &gs[gi], p.bias, rs, relu, c.k)
						winoOutputGo(m[gi*winoLanes:], c.k*mk, mk, wantOut, g.OH*g.OW, g.OW, &gs[gi], p.bias, rs, relu, c.k)
						requireSameFloats(t, wantOut, gotOut, "output transform")
					}
				}
			}
		})
	}
}

// requireSameFloats requires equal bits, NaN included (an unwritten NaN
// must stay unwritten in both).
func requireSameFloats(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "values differ", "%s[%d]: want %v, got %v", what, i, want[i], got[i])
		}
	}
}

// BenchmarkWinogradPerCall compares the two paths with the weight packed
// (direct) or transformed (Winograd) on every call, as ConvForwardF32 does
// in training, on the cnn workload's layers (batch 64) and smaller
// channel counts.
func BenchmarkWinogradPerCall(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range []struct{ n, c, k, hw int }{
		{64, 50, 50, 32}, {64, 50, 100, 16}, {64, 100, 100, 16}, {64, 100, 50, 16},
		{8, 16, 16, 32}, {8, 32, 32, 32}, {1, 32, 32, 56}, {1, 16, 32, 56},
		{8, 8, 8, 32}, {8, 8, 32, 32}, {8, 32, 8, 32}, {1, 16, 16, 7},
	} {
		g := ConvGeom{N: s.n, C: s.c, H: s.hw, W: s.hw, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
			PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: s.hw, OW: s.hw}
		x, w := toF32(randSlice(r, s.n*s.c*s.hw*s.hw)), toF32(randSlice(r, s.k*s.c*9))
		bias := toF32(randSlice(r, s.k))
		dst := make([]float32, s.n*s.k*s.hw*s.hw)
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("n=%d/c=%d/k=%d/hw=%d/threads=%d", s.n, s.c, s.k, s.hw, threads)
			b.Run(name+"/direct", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					buf := convScratch.Get(gemm.PackedSize(s.k, s.c*9))
					ConvForwardPackedF32(dst, x, packConvWeights(*buf, w, s.k, 1, s.c*9), bias, nil, g, threads, false)
					convScratch.Put(buf)
				}
			})
			b.Run(name+"/winograd", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					buf := convScratch.Get(winogradWeightsSize(s.k, s.c))
					winogradForward(dst, x, packWinogradWeights(*buf, w, s.k, s.c, true), bias, nil, g, threads, false)
					convScratch.Put(buf)
				}
			})
		}
	}
}

// reportCPU starts counting CPU time and returns the function that
// reports it per operation (cpu-ms/op), all goroutines together.
func reportCPU(b *testing.B) func() {
	t0 := cpuSeconds()
	return func() { b.ReportMetric((cpuSeconds()-t0)*1e3/float64(b.N), "cpu-ms/op") }
}

func TestPackedConvF32PacksEachPathOnFirstUse(t *testing.T) {
	// One weight Winograd suits, used concurrently by calls that take
	// Winograd (many tiles) and the direct path (few tiles, stride 2).
	r := rand.New(rand.NewPCG(15, 16))
	const c, k = 16, 24
	w := randSlice(r, k*c*9)
	pw := PackConvWeightsF32(toF32(w), k, 1, c, 3, 3)
	require.True(t, pw.winoOK)
	geoms := []ConvGeom{
		{N: 2, C: c, H: 12, W: 11, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 12, OW: 11},
		{N: 1, C: c, H: 5, W: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 5, OW: 6},
		{N: 2, C: c, H: 12, W: 11, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 6, OW: 6},
	}
	wants, gots := make([][]float64, len(geoms)), make([][]float32, len(geoms))
	var wg sync.WaitGroup
	for i, g := range geoms {
		x := randSlice(r, g.N*c*g.H*g.W)
		wants[i], _, _ = refConv(x, w, nil, make([]float64, g.N*k*g.OH*g.OW), g, k, 1)
		gots[i] = poisoned[float32](len(wants[i]))
		wg.Go(func() { ConvForwardPackedF32(gots[i], toF32(x), pw, nil, nil, g, 1+i%2, false) })
	}
	wg.Wait()
	for i := range geoms {
		requireClose(t, wants[i], gots[i], 1e-4, fmt.Sprintf("geometry %d", i))
	}
	require.NotNil(t, pw.wino)
	require.NotNil(t, pw.parts)
}

// TestWinogradSameBitsAtAnyThreadCount checks that the split of the work
// (by tiles, or each block shared by channels) does not change a bit of
// the result, on ResNet's batch-1 shapes and odd ones, with NaN-poisoned
// outputs, and that both splits occur.
func TestWinogradSameBitsAtAnyThreadCount(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	modes := map[bool]bool{}
	for _, c := range []struct{ n, c, k, h, w int }{
		{1, 64, 64, 56, 56}, {1, 128, 128, 28, 28}, {1, 256, 256, 14, 14}, {1, 512, 512, 7, 7},
		{1, 67, 41, 7, 9}, {2, 33, 20, 9, 11}, {3, 17, 67, 13, 5}, {1, 40, 24, 29, 31},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			g := ConvGeom{N: c.n, C: c.c, H: c.h, W: c.w, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
				PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: c.h, OW: c.w}
			x, w := toF32(randSlice(r, c.n*c.c*c.h*c.w)), toF32(randSlice(r, c.k*c.c*9))
			bias, res := toF32(randSlice(r, c.k)), toF32(randSlice(r, c.n*c.k*c.h*c.w))
			ww := packWinogradWeights(make([]float32, winogradWeightsSize(c.k, c.c)), w, c.k, c.c, false)
			want := poisoned[float32](len(res))
			winogradForward(want, x, ww, bias, res, g, 1, true)
			for threads := 2; threads <= 4; threads++ {
				byTiles, _ := newWinoPlan(nil, x, ww, bias, res, g, true).split(threads)
				modes[byTiles] = true
				got := poisoned[float32](len(res))
				winogradForward(got, x, ww, bias, res, g, threads, true)
				requireSameFloats(t, want, got, fmt.Sprintf("%d threads", threads))
			}
		})
	}
	require.Len(t, modes, 2, "both splits exercised")
}

func TestBalancedBounds(t *testing.T) {
	for _, c := range []struct {
		n, parts, unit int
		want           []int
	}{
		{784, 2, 32, []int{0, 384, 784}},
		{196, 2, 32, []int{0, 96, 196}},
		{16, 2, 32, []int{0, 16}},
		{512, 3, 12, []int{0, 168, 336, 512}},
		{0, 2, 12, []int{0, 0}},
	} {
		require.Equal(t, c.want, balancedBounds(c.n, c.parts, c.unit), "%+v", c)
	}
}

// TestWinogradTileGroupsFollowGeometry runs one packed weight on
// geometries that alternate, so that the tile groups it caches must be
// made again at each change, and compares every result with that of a
// weight packed afresh.
func TestWinogradTileGroupsFollowGeometry(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const c, k = 16, 24
	w := toF32(randSlice(r, k*c*9))
	bias := toF32(randSlice(r, k))
	shared := PackConvWeightsF32(w, k, 1, c, 3, 3)
	for _, hw := range [][2]int{{13, 9}, {8, 8}, {13, 9}, {21, 5}} {
		for _, threads := range []int{1, 2} {
			g := ConvGeom{N: 1, C: c, H: hw[0], W: hw[1], KH: 3, KW: 3, StrideH: 1, StrideW: 1,
				PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: hw[0], OW: hw[1]}
			x := toF32(randSlice(r, c*hw[0]*hw[1]))
			got, want := poisoned[float32](k*hw[0]*hw[1]), poisoned[float32](k*hw[0]*hw[1])
			ConvForwardPackedF32(got, x, shared, bias, nil, g, threads, true)
			ConvForwardPackedF32(want, x, PackConvWeightsF32(w, k, 1, c, 3, 3), bias, nil, g, threads, true)
			requireSameFloats(t, want, got, fmt.Sprintf("%v at %d threads", hw, threads))
		}
	}
}
