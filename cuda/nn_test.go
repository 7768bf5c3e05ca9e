//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestNNPTX(t *testing.T) {
	ktCheckPTX(t, "nn.ptx", nnKernels)
}

// ktCStructFields returns the field names of a C struct in a .cu source, in
// order.
func ktCStructFields(t *testing.T, file, name string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("internal", "kernels", file))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)struct ` + name + ` \{(.*?)\};`).FindSubmatch(src)
	require.NotNil(t, m, "struct %s in %s", name, file)
	var fields []string
	for _, decl := range regexp.MustCompile(`long long ([^;]+);`).FindAllSubmatch(m[1], -1) {
		for _, f := range regexp.MustCompile(`\w+`).FindAll(decl[1], -1) {
			fields = append(fields, string(f))
		}
	}
	return fields
}

func TestNNGeometryStructsMatchKernels(t *testing.T) {
	cases := []struct {
		cName   string
		goVal   any
		cFields []string
	}{
		{"ConvGeom", convGeom{}, []string{"n", "c", "h", "w", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "oh", "ow"}},
		{"PoolGeom", poolGeom{}, []string{"planes", "h", "w", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "oh", "ow", "count_include_pad"}},
	}
	for _, c := range cases {
		t.Run(c.cName, func(t *testing.T) {
			require.Equal(t, c.cFields, ktCStructFields(t, "nn.cu", c.cName))
			typ := reflect.TypeOf(c.goVal)
			require.Equal(t, len(c.cFields), typ.NumField())
			for i := range typ.NumField() {
				assert.Equal(t, reflect.Int64, typ.Field(i).Type.Kind(), typ.Field(i).Name)
			}
			assert.Equal(t, uintptr(8*len(c.cFields)), typ.Size())
		})
	}
	g := makeConvGeom(tensor.ConvGeom{N: 1, C: 2, H: 3, W: 4, KH: 5, KW: 6, StrideH: 7, StrideW: 8, PadH: 9, PadW: 10, DilationH: 11, DilationW: 12, OH: 13, OW: 14})
	assert.Equal(t, convGeom{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, g)
	p := makePoolGeom(tensor.PoolGeom{Planes: 1, H: 2, W: 3, KH: 4, KW: 5, StrideH: 6, StrideW: 7, PadH: 8, PadW: 9, DilationH: 10, DilationW: 11, OH: 12, OW: 13, CountIncludePad: true})
	assert.Equal(t, poolGeom{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1}, p)
	assert.Equal(t, nnThreads, ktDefines(t, "nn.cu")["NN_THREADS"])
}

func TestNNKernelDTypes(t *testing.T) {
	assert.Equal(t, "im2col_f32", nnFloatKernel("im2col", ktCPUBuffer(tensor.Float32)))
	assert.Equal(t, "moments_f64", nnFloatKernel("moments", ktCPUBuffer(tensor.Float64)))
	assert.PanicsWithValue(t, "tensor: softmax_rows kernel on int64 data; want float32 or float64", func() {
		nnFloatKernel("softmax_rows", ktCPUBuffer(tensor.Int64))
	})
	assert.Len(t, nnKernels, 2*len(nnKernelBases))
}

// ktCPUBuffer is a one-element CPU buffer of dt (for dtype dispatch tests).
func ktCPUBuffer(dt tensor.DType) tensor.Buffer {
	cpu, _ := tensor.BackendFor(tensor.CPU)
	return cpu.Alloc(dt, 1)
}

var ktFloatDTypes = []tensor.DType{tensor.Float32, tensor.Float64}

// ktConvOut is the output size of a convolution or pooling axis.
func ktConvOut(size, k, stride, pad, dil int) int {
	return (size+2*pad-dil*(k-1)-1)/stride + 1
}

func ktConvGeom(n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw int) tensor.ConvGeom {
	return tensor.ConvGeom{N: n, C: c, H: h, W: w, KH: kh, KW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw,
		DilationH: dh, DilationW: dw, OH: ktConvOut(h, kh, sh, ph, dh), OW: ktConvOut(w, kw, sw, pw, dw)}
}

func TestIm2ColCol2ImMatchCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(11, 12))
	geoms := []tensor.ConvGeom{
		ktConvGeom(2, 3, 7, 6, 3, 2, 1, 1, 1, 0, 1, 1),
		ktConvGeom(1, 2, 9, 11, 3, 3, 2, 3, 2, 1, 2, 1),
		ktConvGeom(3, 1, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1),
		ktConvGeom(1, 2, 4, 3, 5, 4, 3, 2, 3, 2, 1, 2), // rows wholly in the padding
		ktConvGeom(2, 4, 13, 10, 3, 3, 2, 2, 1, 1, 1, 1),
	}
	for _, g := range geoms {
		for _, dt := range ktFloatDTypes {
			name := fmt.Sprintf("%+v/%s", g, dt)
			t.Run(name, func(t *testing.T) {
				const off = 5
				rows, cols := g.C*g.KH*g.KW, g.N*g.OH*g.OW
				src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+g.N*g.C*g.H*g.W))
				col := ktAlloc(gpu, cpu, dt, rows*cols)
				cpu.Im2Col(col.cpu, src.cpu, off, g)
				gpu.Im2Col(col.gpu, src.gpu, off, g)
				ktEqual(t, ktHost(cpu, col.cpu), ktHost(gpu, col.gpu), "Im2Col")

				m := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, rows*cols))
				img := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, g.N*g.C*g.H*g.W)) // Col2Im accumulates
				cpu.Col2Im(img.cpu, m.cpu, g)
				gpu.Col2Im(img.gpu, m.gpu, g)
				ktEqual(t, ktHost(cpu, img.cpu), ktHost(gpu, img.gpu), "Col2Im")
			})
		}
	}
}

func ktPoolGeom(planes, h, w, kh, kw, sh, sw, ph, pw, dh, dw int, ceil, includePad bool) tensor.PoolGeom {
	g := tensor.PoolGeom{Planes: planes, H: h, W: w, KH: kh, KW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw,
		DilationH: dh, DilationW: dw, OH: ktConvOut(h, kh, sh, ph, dh), OW: ktConvOut(w, kw, sw, pw, dw), CountIncludePad: includePad}
	if ceil { // PyTorch's ceil_mode: one more window where it still starts inside the input or left padding
		if (g.OH)*sh < h+ph {
			g.OH++
		}
		if (g.OW)*sw < w+pw {
			g.OW++
		}
	}
	return g
}

// ktPoolData returns pooling input with frequent ties, infinities and NaNs.
func ktPoolData(rng *rand.Rand, dt tensor.DType, n int, special bool) any {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(rng.IntN(7)) - 3
		if special {
			switch rng.IntN(25) {
			case 0:
				v[i] = math.NaN()
			case 1:
				v[i] = math.Inf(-1)
			case 2:
				v[i] = math.Inf(1)
			}
		}
	}
	if dt == tensor.Float64 {
		return v
	}
	f := make([]float32, n)
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

func TestPoolingMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(13, 14))
	maxGeoms := []tensor.PoolGeom{
		ktPoolGeom(3, 7, 6, 2, 2, 2, 2, 0, 0, 1, 1, false, false),
		ktPoolGeom(2, 9, 11, 3, 3, 2, 1, 1, 1, 1, 1, true, false),
		ktPoolGeom(4, 10, 9, 3, 2, 1, 2, 1, 1, 2, 3, false, false),
		ktPoolGeom(1, 5, 5, 5, 5, 1, 1, 2, 2, 1, 1, false, false),
		ktPoolGeom(2, 8, 8, 3, 3, 3, 3, 1, 1, 2, 2, true, false),
	}
	avgGeoms := []tensor.PoolGeom{
		ktPoolGeom(3, 7, 6, 2, 2, 2, 2, 0, 0, 1, 1, false, false),
		ktPoolGeom(2, 9, 11, 3, 3, 2, 1, 1, 1, 1, 1, true, false),
		ktPoolGeom(2, 9, 11, 3, 3, 2, 1, 1, 1, 1, 1, true, true),
		ktPoolGeom(4, 10, 9, 4, 3, 3, 2, 2, 1, 1, 1, false, true),
		ktPoolGeom(1, 5, 6, 5, 6, 2, 2, 2, 3, 1, 1, true, false),
		ktPoolGeom(2, 6, 7, 3, 2, 3, 3, 1, 1, 1, 1, true, true),
	}
	for _, dt := range ktFloatDTypes {
		for _, g := range maxGeoms {
			for _, special := range []bool{false, true} {
				name := fmt.Sprintf("max/%+v/special=%v/%s", g, special, dt)
				t.Run(name, func(t *testing.T) {
					const off = 3
					src := ktUpload(gpu, cpu, dt, ktPoolData(rng, dt, off+g.Planes*g.H*g.W, special))
					n := g.Planes * g.OH * g.OW
					dst := ktAlloc(gpu, cpu, dt, n)
					idx := ktAlloc(gpu, cpu, tensor.Int64, n)
					cpu.MaxPool2d(dst.cpu, idx.cpu, src.cpu, off, g)
					gpu.MaxPool2d(dst.gpu, idx.gpu, src.gpu, off, g)
					ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), "MaxPool2d values")
					ktEqual(t, ktHost(cpu, idx.cpu), ktHost(gpu, idx.gpu), "MaxPool2d indices")

					// Max pooling's backward pass and its adjoint.
					hw, m := g.H*g.W, g.OH*g.OW
					grad := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+n))
					acc := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, g.Planes*hw))
					cpu.PlaneScatterAdd(acc.cpu, grad.cpu, off, idx.cpu, g.Planes, hw, m)
					gpu.PlaneScatterAdd(acc.gpu, grad.gpu, off, idx.gpu, g.Planes, hw, m)
					ktClose(t, ktHost(cpu, acc.cpu), ktHost(gpu, acc.gpu), ktTol(dt), "PlaneScatterAdd")
					back := ktAlloc(gpu, cpu, dt, n)
					cpu.PlaneGather(back.cpu, acc.cpu, 0, idx.cpu, g.Planes, hw, m)
					gpu.PlaneGather(back.gpu, acc.gpu, 0, idx.gpu, g.Planes, hw, m)
					ktClose(t, ktHost(cpu, back.cpu), ktHost(gpu, back.gpu), ktTol(dt), "PlaneGather")
				})
			}
		}
		for _, g := range avgGeoms {
			name := fmt.Sprintf("avg/%+v/%s", g, dt)
			t.Run(name, func(t *testing.T) {
				const off = 2
				src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+g.Planes*g.H*g.W))
				n := g.Planes * g.OH * g.OW
				dst := ktAlloc(gpu, cpu, dt, n)
				cpu.AvgPool2d(dst.cpu, src.cpu, off, g)
				gpu.AvgPool2d(dst.gpu, src.gpu, off, g)
				ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), "AvgPool2d")

				grad := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+n))
				acc := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, g.Planes*g.H*g.W))
				cpu.AvgPool2dBackward(acc.cpu, grad.cpu, off, g)
				gpu.AvgPool2dBackward(acc.gpu, grad.gpu, off, g)
				ktEqual(t, ktHost(cpu, acc.cpu), ktHost(gpu, acc.gpu), "AvgPool2dBackward")
			})
		}
	}
}

func TestPlaneGatherIdentity(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, dt := range ktFloatDTypes {
		t.Run(dt.String(), func(t *testing.T) {
			planes, n, m := 5, 17, 40
			idxData := make([]int64, planes*m)
			for i := range idxData {
				idxData[i] = rng.Int64N(int64(n))
			}
			idx := ktUpload(gpu, cpu, tensor.Int64, idxData)
			src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, 1+planes*n))
			dst := ktAlloc(gpu, cpu, dt, planes*m)
			cpu.PlaneGather(dst.cpu, src.cpu, 1, idx.cpu, planes, n, m)
			gpu.PlaneGather(dst.gpu, src.gpu, 1, idx.gpu, planes, n, m)
			ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), "PlaneGather")
		})
	}
}

func TestAdaptiveAvgPoolMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(17, 18))
	cases := [][5]int{ // planes, h, w, oh, ow
		{3, 7, 5, 3, 2},
		{2, 5, 5, 5, 5},
		{2, 4, 9, 7, 4}, // more outputs than inputs along h
		{4, 10, 3, 1, 1},
		{1, 13, 11, 6, 5},
	}
	for _, c := range cases {
		for _, dt := range ktFloatDTypes {
			t.Run(fmt.Sprint(c, dt), func(t *testing.T) {
				planes, h, w, oh, ow := c[0], c[1], c[2], c[3], c[4]
				const off = 4
				src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+planes*h*w))
				dst := ktAlloc(gpu, cpu, dt, planes*oh*ow)
				cpu.AdaptiveAvgPool2d(dst.cpu, src.cpu, off, planes, h, w, oh, ow)
				gpu.AdaptiveAvgPool2d(dst.gpu, src.gpu, off, planes, h, w, oh, ow)
				ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), "AdaptiveAvgPool2d")

				grad := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+planes*oh*ow))
				acc := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, planes*h*w))
				cpu.AdaptiveAvgPool2dBackward(acc.cpu, grad.cpu, off, planes, h, w, oh, ow)
				gpu.AdaptiveAvgPool2dBackward(acc.gpu, grad.gpu, off, planes, h, w, oh, ow)
				ktEqual(t, ktHost(cpu, acc.cpu), ktHost(gpu, acc.gpu), "AdaptiveAvgPool2dBackward")
			})
		}
	}
}

// ktScaled returns n random values of dt of magnitude up to scale, with
// the given specials at the start.
func ktScaled(rng *rand.Rand, dt tensor.DType, n int, scale float64, specials ...float64) any {
	v := make([]float64, n)
	for i := range v {
		v[i] = (rng.Float64()*2 - 1) * scale
	}
	copy(v, specials)
	if dt == tensor.Float64 {
		return v
	}
	f := make([]float32, n)
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

func TestSoftmaxMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(19, 20))
	cases := []struct {
		outer, n, inner int
		scale           float64
		specials        []float64
	}{
		{3, 7, 1, 3, nil},
		{2, 1000, 1, 20, nil},
		{4, 5, 3, 3, nil},
		{1, 3000, 2, 50, nil},
		{5, 1, 1, 1, nil},
		{2, 9, 1, 5, []float64{math.Inf(-1), 1e30}},
		{3, 4, 5, 2, []float64{math.NaN()}},
		{2, 3, 1, 1, []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}},
	}
	for _, c := range cases {
		for _, dt := range ktFloatDTypes {
			for _, log := range []bool{false, true} {
				name := fmt.Sprintf("%d,%d,%d/log=%v/%s", c.outer, c.n, c.inner, log, dt)
				t.Run(name, func(t *testing.T) {
					const off = 7
					total := c.outer * c.n * c.inner
					src := ktUpload(gpu, cpu, dt, ktScaled(rng, dt, off+total, c.scale, append(make([]float64, off), c.specials...)...))
					dst := ktAlloc(gpu, cpu, dt, total)
					cpu.Softmax(log, dst.cpu, src.cpu, off, c.outer, c.n, c.inner)
					gpu.Softmax(log, dst.gpu, src.gpu, off, c.outer, c.n, c.inner)
					tol := 1e-12
					if dt == tensor.Float32 {
						tol = 2e-5 // the CPU's float32 rows use a vectorised float32 exp
					}
					ktClose(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), tol, name)
				})
			}
		}
	}
}

func TestMomentsScaleShiftNormBackwardMatchCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(21, 22))
	shapes := [][3]int{{4, 3, 5}, {1, 7, 1000}, {64, 2, 1}, {2, 3, 0}, {300, 5, 7}}
	for _, s := range shapes {
		for _, dt := range ktFloatDTypes {
			outer, n, inner := s[0], s[1], s[2]
			total := outer * n * inner
			t.Run(fmt.Sprint(s, dt), func(t *testing.T) {
				const off = 3
				x := ktUpload(gpu, cpu, dt, ktScaled(rng, dt, off+total, 4))
				mean, variance := ktAlloc(gpu, cpu, dt, n), ktAlloc(gpu, cpu, dt, n)
				cpu.Moments(mean.cpu, variance.cpu, x.cpu, off, outer, n, inner)
				gpu.Moments(mean.gpu, variance.gpu, x.gpu, off, outer, n, inner)
				ktClose(t, ktHost(cpu, mean.cpu), ktHost(gpu, mean.gpu), ktTol(dt), "Moments mean")
				ktClose(t, ktHost(cpu, variance.cpu), ktHost(gpu, variance.gpu), ktTol(dt), "Moments variance")

				scale := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, n))
				shift := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, n))
				for _, opt := range []struct {
					name         string
					scale, shift *ktPair
				}{{"both", &scale, &shift}, {"scale", &scale, nil}, {"shift", nil, &shift}, {"neither", nil, nil}} {
					pick := func(p *ktPair, gpuSide bool) tensor.Buffer {
						switch {
						case p == nil:
							return nil
						case gpuSide:
							return p.gpu
						default:
							return p.cpu
						}
					}
					dst := ktAlloc(gpu, cpu, dt, total)
					cpu.ScaleShift(dst.cpu, x.cpu, off, pick(opt.scale, false), pick(opt.shift, false), outer, n, inner)
					gpu.ScaleShift(dst.gpu, x.gpu, off, pick(opt.scale, true), pick(opt.shift, true), outer, n, inner)
					ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), "ScaleShift "+opt.name)
				}
				// In place, as batch norm's inference path runs it.
				y := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, total))
				cpu.ScaleShift(y.cpu, y.cpu, 0, scale.cpu, shift.cpu, outer, n, inner)
				gpu.ScaleShift(y.gpu, y.gpu, 0, scale.gpu, shift.gpu, outer, n, inner)
				ktEqual(t, ktHost(cpu, y.cpu), ktHost(gpu, y.gpu), "ScaleShift in place")

				rstdData := ktScaled(rng, dt, n, 1)
				rstd := ktUpload(gpu, cpu, dt, rstdData)
				grad := ktUpload(gpu, cpu, dt, ktScaled(rng, dt, off+total, 2))
				for _, withStats := range []bool{false, true} {
					for _, withDX := range []bool{false, true} {
						sumG, sumGX := ktAlloc(gpu, cpu, dt, n), ktAlloc(gpu, cpu, dt, n)
						dx := ktAlloc(gpu, cpu, dt, total)
						var cdx, gdx, cm, gm, cr, gr, cs, gs tensor.Buffer
						if withDX {
							cdx, gdx = dx.cpu, dx.gpu
						}
						if withStats {
							cm, gm, cr, gr, cs, gs = mean.cpu, mean.gpu, rstd.cpu, rstd.gpu, scale.cpu, scale.gpu
						}
						cpu.NormBackward(cdx, sumG.cpu, sumGX.cpu, grad.cpu, off, x.cpu, off, cm, cr, cs, outer, n, inner)
						gpu.NormBackward(gdx, sumG.gpu, sumGX.gpu, grad.gpu, off, x.gpu, off, gm, gr, gs, outer, n, inner)
						what := fmt.Sprintf("NormBackward stats=%v dx=%v", withStats, withDX)
						ktClose(t, ktHost(cpu, sumG.cpu), ktHost(gpu, sumG.gpu), 100*ktTol(dt), what+" sumG")
						ktClose(t, ktHost(cpu, sumGX.cpu), ktHost(gpu, sumGX.gpu), 100*ktTol(dt), what+" sumGX")
						ktClose(t, ktHost(cpu, dx.cpu), ktHost(gpu, dx.gpu), 100*ktTol(dt), what+" dx")
					}
				}
			})
		}
	}
}
