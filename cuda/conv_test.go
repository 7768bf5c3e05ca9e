//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/cuda/internal/cudnn"
	"github.com/emberml/ember/cuda/internal/driver"
	"github.com/emberml/ember/internal/dl"
	"github.com/emberml/ember/tensor"
)

func TestCudnnConvMapping(t *testing.T) {
	g := tensor.ConvGeom{N: 1, C: 2, H: 3, W: 4, KH: 5, KW: 6, StrideH: 7, StrideW: 8, PadH: 9, PadW: 10, DilationH: 11, DilationW: 12, OH: 13, OW: 14}
	assert.Equal(t, cudnn.Conv{N: 1, C: 2, H: 3, W: 4, O: 15, KH: 5, KW: 6, StrideH: 7, StrideW: 8, PadH: 9, PadW: 10,
		DilationH: 11, DilationW: 12, OH: 13, OW: 14, Groups: 16}, cudnnConv(g, 15, 16))
}

func TestConvKey(t *testing.T) {
	g := ktConvGeom(2, 4, 9, 7, 3, 3, 2, 1, 1, 1, 1, 2)
	outPad := g
	outPad.OH++ // a transposed convolution with output padding beyond the stride
	empty := g
	empty.N = 0
	f32, f64, i64 := tensor.Float32, tensor.Float64, tensor.Int64
	cases := []struct {
		name     string
		dir      cudnn.Direction
		dtA, dtB tensor.DType
		g        tensor.ConvGeom
		o, gr    int
		tf32     bool
		ok       bool
		typ      cudnn.DataType
		math     cudnn.MathType
	}{
		{"float32 exact", cudnn.Forward, f32, f32, g, 6, 2, false, true, cudnn.DataFloat, cudnn.FMAMath},
		{"float32 TF32", cudnn.BackwardData, f32, f32, g, 6, 2, true, true, cudnn.DataFloat, cudnn.DefaultMath},
		{"float64", cudnn.BackwardFilter, f64, f64, g, 4, 4, true, true, cudnn.DataDouble, cudnn.DefaultMath},
		{"int64", cudnn.Forward, i64, i64, g, 6, 2, false, false, 0, 0},
		{"mixed dtypes", cudnn.Forward, f32, f64, g, 6, 2, false, false, 0, 0},
		{"output padding", cudnn.BackwardData, f32, f32, outPad, 6, 2, false, false, 0, 0},
		{"empty", cudnn.Forward, f32, f32, empty, 6, 2, false, false, 0, 0},
		{"groups not dividing O", cudnn.Forward, f32, f32, g, 5, 2, false, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, ok := convKey(c.dir, c.dtA, c.dtB, c.g, c.o, c.gr, c.tf32)
			require.Equal(t, c.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, cudnn.Key{Conv: cudnnConv(c.g, c.o, c.gr), Type: c.typ, Math: c.math, Dir: c.dir}, k)
		})
	}
}

// TestConvDeclinesWithoutCuDNN checks, on a machine without cuDNN, that a
// backend declines every convolution (so tensor falls back to
// Im2Col+MatMul) and says why.
func TestConvDeclinesWithoutCuDNN(t *testing.T) {
	if _, err := cudnn.Load(driver.Opener(), dl.OSEnv()); err == nil {
		t.Skip("cuDNN is installed here; the GPU tests cover the backend")
	}
	b := &Backend{} // never reaches the device: cuDNN fails to load first
	g := ktConvGeom(1, 2, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1)
	x, w := &buffer{dt: tensor.Float32, n: 50}, &buffer{dt: tensor.Float32, n: 36}
	buf, ok := b.ConvForward(x, w, 0, 0, g, 2, 1)
	assert.False(t, ok)
	assert.Nil(t, buf)
	_, ok = b.ConvBackwardInput(&buffer{dt: tensor.Float32, n: 50}, w, 0, 0, g, 2, 1)
	assert.False(t, ok)
	_, ok = b.ConvBackwardWeight(x, &buffer{dt: tensor.Float32, n: 50}, 0, 0, g, 2, 1)
	assert.False(t, ok)
	_, err := b.cudnnInfo()
	require.ErrorIs(t, err, dl.ErrNotFound)
	assert.Contains(t, err.Error(), "libcudnn.so.9")
	assert.Equal(t, [3]int64{}, b.convRuns())
}

// ---- GPU tests (skipped without a device, cuDNN checks without cuDNN) ----

// convCase is a convolution geometry with its channel and group counts.
type convCase struct {
	name   string
	g      tensor.ConvGeom
	o, grp int
}

func convCases() []convCase {
	return []convCase{
		{"3x3 pad 1", ktConvGeom(2, 3, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1), 5, 1},
		{"odd sizes stride 2x3", ktConvGeom(3, 5, 13, 11, 3, 2, 2, 3, 1, 0, 1, 1), 7, 1},
		{"dilation 2x1 wide padding", ktConvGeom(1, 2, 9, 11, 3, 3, 2, 1, 2, 3, 2, 1), 4, 1},
		{"groups 2", ktConvGeom(2, 6, 8, 9, 3, 3, 1, 2, 1, 1, 1, 1), 4, 2},
		{"groups 3 with 1x1", ktConvGeom(2, 9, 5, 7, 1, 1, 1, 1, 0, 0, 1, 1), 6, 3},
		{"depthwise", ktConvGeom(2, 8, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1), 8, 8},
		{"depthwise multiplier 2", ktConvGeom(1, 4, 7, 7, 5, 5, 1, 1, 2, 2, 1, 1), 8, 4},
		{"stem 7x7 stride 2", ktConvGeom(2, 3, 32, 30, 7, 7, 2, 2, 3, 3, 1, 1), 16, 1},
		{"1x1 stride 2", ktConvGeom(2, 16, 14, 14, 1, 1, 2, 2, 0, 0, 1, 1), 32, 1},
		{"kernel larger than input", ktConvGeom(1, 2, 3, 4, 5, 4, 3, 2, 3, 2, 1, 2), 3, 1},
	}
}

// gpuCudnn returns the backend of cuda:0, skipping the test without a
// device or without cuDNN.
func gpuCudnn(t *testing.T) *Backend {
	t.Helper()
	b := gpu(t)
	info, err := CuDNN(0)
	if err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	t.Logf("cuDNN %s", info)
	return b
}

// convRef holds the operands of a case on the host, in float64, and the
// CPU backend's results computed from them in float64.
type convRef struct {
	x, w, dy    []float64
	y, dx, dw   []float64
	xs, ws, ys  []int
	rFwd, rData int // reduction lengths: C/g*KH*KW, O/g*KH*KW
	rFilter     int // N*OH*OW
	geom        tensor.ConvGeom
	o, groups   int
	name        string
}

func newConvRef(c convCase, seed uint64) convRef {
	rng := rand.New(rand.NewPCG(seed, 99))
	g := c.g
	r := convRef{
		xs: []int{g.N, g.C, g.H, g.W}, ws: []int{c.o, g.C / c.grp, g.KH, g.KW}, ys: []int{g.N, c.o, g.OH, g.OW},
		rFwd: g.C / c.grp * g.KH * g.KW, rData: c.o / c.grp * g.KH * g.KW, rFilter: g.N * g.OH * g.OW,
		geom: g, o: c.o, groups: c.grp, name: c.name,
	}
	fill := func(shape []int) []float64 {
		n := 1
		for _, s := range shape {
			n *= s
		}
		return randomHost(tensor.Float64, n, rng).([]float64)
	}
	r.x, r.w, r.dy = fill(r.xs), fill(r.ws), fill(r.ys)
	xt, wt, dyt := tensor.FromSlice(r.x, r.xs...), tensor.FromSlice(r.w, r.ws...), tensor.FromSlice(r.dy, r.ys...)
	r.y = tensor.ConvForward(xt, wt, g, c.grp).Float64s()
	r.dx = tensor.ConvBackwardInput(dyt, wt, g, c.grp).Float64s()
	r.dw = tensor.ConvBackwardWeight(xt, dyt, g, c.grp).Float64s()
	return r
}

// upload copies v (as dt) into a device buffer at element offset off.
func upload(b *Backend, dt tensor.DType, v []float64, off int) tensor.Buffer {
	if dt == tensor.Float64 {
		return b.FromHost(dt, append(make([]float64, off), v...))
	}
	f := make([]float32, off+len(v))
	for i, x := range v {
		f[off+i] = float32(x)
	}
	return b.FromHost(dt, f)
}

// download returns a contiguous device buffer as float64s.
func download(b *Backend, buf tensor.Buffer) []float64 {
	h := b.ToHost(buf, tensor.Layout{Shape: []int{buf.Len()}, Strides: []int{1}})
	if f, ok := h.([]float32); ok {
		return toF64(f)
	}
	return h.([]float64)
}

// convTol is the absolute tolerance of a result reduced over r products
// of values in [-1, 1].
func convTol(dt tensor.DType, tf32 bool, r int) float64 {
	switch {
	case dt == tensor.Float64:
		return 1e-12 * float64(r+1)
	case tf32:
		return 4e-3*math.Sqrt(float64(r)) + 1e-3 // 10-bit mantissas in the products
	}
	return 2e-6*float64(r) + 1e-5
}

// requireClose compares got with want within tol, naming the first
// element that differs.
func requireClose(t *testing.T, want, got []float64, tol float64, what string) float64 {
	t.Helper()
	require.Len(t, got, len(want), what)
	var worst float64
	for i := range want {
		d := math.Abs(got[i] - want[i])
		worst = max(worst, d)
		require.LessOrEqual(t, d, tol, "%s: element %d is %v, want %v", what, i, got[i], want[i])
	}
	return worst
}

// TestGPUConvCuDNN compares the three cuDNN convolutions with the CPU
// backend for every case, in Float64, Float32 with TF32 off (FMA math,
// float32 accuracy) and on, with operands at an element offset, and
// checks that cuDNN (not a fallback) computed each.
func TestGPUConvCuDNN(t *testing.T) {
	b := gpuCudnn(t)
	t.Cleanup(func() { require.NoError(t, SetAllowTF32(0, false)) })
	modes := []struct {
		dt   tensor.DType
		tf32 bool
	}{{tensor.Float64, false}, {tensor.Float32, false}, {tensor.Float32, true}}
	for ci, c := range convCases() {
		ref := newConvRef(c, uint64(ci))
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/%s/tf32=%v", c.name, m.dt, m.tf32), func(t *testing.T) {
				require.NoError(t, SetAllowTF32(0, m.tf32))
				const off = 64
				x, w, dy := upload(b, m.dt, ref.x, off), upload(b, m.dt, ref.w, off), upload(b, m.dt, ref.dy, off)
				before := b.convRuns()

				y, ok := b.ConvForward(x, w, off, off, c.g, c.o, c.grp)
				require.True(t, ok, "cuDNN declined the forward convolution")
				ey := requireClose(t, ref.y, download(b, y), convTol(m.dt, m.tf32, ref.rFwd), "forward")

				dx, ok := b.ConvBackwardInput(dy, w, off, off, c.g, c.o, c.grp)
				require.True(t, ok, "cuDNN declined the backward-data convolution")
				edx := requireClose(t, ref.dx, download(b, dx), convTol(m.dt, m.tf32, ref.rData), "backward input")

				dw, ok := b.ConvBackwardWeight(x, dy, off, off, c.g, c.o, c.grp)
				require.True(t, ok, "cuDNN declined the backward-filter convolution")
				edw := requireClose(t, ref.dw, download(b, dw), convTol(m.dt, m.tf32, ref.rFilter), "backward weight")

				after := b.convRuns()
				for d := range after {
					assert.Equal(t, before[d]+1, after[d], "cuDNN ran direction %d once", d)
				}
				t.Logf("max abs error: forward %.2e, input %.2e, weight %.2e", ey, edx, edw)
			})
		}
	}
}

// TestGPUConvThroughTensor runs convolutions of cuda:0 tensors through the
// tensor package (Conv2d with bias, the gradients, ConvTranspose2d), which
// dispatch to cuDNN; a transposed convolution whose output padding cuDNN
// cannot express falls back to Im2Col+MatMul with the same result.
func TestGPUConvThroughTensor(t *testing.T) {
	b := gpuCudnn(t)
	dev := tensor.CUDA(0)
	gen := tensor.NewGenerator(3)
	x := gen.Randn([]int{2, 6, 11, 10}, tensor.Float64)
	w := gen.Randn([]int{4, 3, 3, 3}, tensor.Float64)
	bias := gen.Randn([]int{4}, tensor.Float64)
	opt := tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 2}, Dilation: [2]int{1, 2}, Groups: 2}
	geom := tensor.Conv2dGeometry(x.Shape(), w.Shape(), opt)
	dy := gen.Randn([]int{2, 4, geom.OH, geom.OW}, tensor.Float64)
	xt := gen.Randn([]int{1, 4, 5, 4}, tensor.Float64)
	to := func(v *tensor.Tensor) *tensor.Tensor {
		d, err := v.ToDevice(dev)
		require.NoError(t, err)
		return d
	}
	cases := []struct {
		name   string
		dir    int
		cudnn  bool
		run    func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor
		reduce int
	}{
		{"Conv2d", 0, true, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.Conv2d(mv(x), mv(w), mv(bias), opt)
		}, 27},
		{"ConvBackwardInput", 1, true, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvBackwardInput(mv(dy), mv(w), geom, 2)
		}, 18},
		{"ConvBackwardWeight", 2, true, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvBackwardWeight(mv(x), mv(dy), geom, 2)
		}, 2 * geom.OH * geom.OW},
		{"ConvTranspose2d", 1, true, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose2d(mv(xt), mv(w), nil, tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 0}, Groups: 2})
		}, 18},
		// Output padding of 1 at stride 1 (allowed by a dilation of 2) gives
		// an input one row larger than the output implies.
		{"ConvTranspose2d output padding beyond cuDNN", 1, false, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose2d(mv(xt), mv(w), nil, tensor.ConvTranspose2dOptions{Stride: [2]int{1, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}, Dilation: [2]int{2, 1}, Groups: 2})
		}, 18},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.run(func(v *tensor.Tensor) *tensor.Tensor { return v })
			before := b.convRuns()
			got := c.run(to)
			after := b.convRuns()
			require.Equal(t, dev, got.Device())
			require.Equal(t, want.Shape(), got.Shape())
			requireClose(t, want.Float64s(), got.Float64s(), convTol(tensor.Float64, false, c.reduce), c.name)
			ran := int64(0)
			if c.cudnn {
				ran = 1
			}
			assert.Equal(t, before[c.dir]+ran, after[c.dir], "cuDNN runs of direction %d", c.dir)
		})
	}
}

// TestGPUConvPlansCached checks that a repeated convolution reuses its
// plan and that the TF32 setting selects a plan of its own.
func TestGPUConvPlansCached(t *testing.T) {
	b := gpuCudnn(t)
	t.Cleanup(func() { require.NoError(t, SetAllowTF32(0, false)) })
	c := convCase{"plan", ktConvGeom(1, 3, 17, 19, 3, 3, 1, 1, 1, 1, 1, 1), 5, 1}
	ref := newConvRef(c, 42)
	x, w := upload(b, tensor.Float32, ref.x, 0), upload(b, tensor.Float32, ref.w, 0)
	plans := func() int {
		b.conv.mu.Lock()
		defer b.conv.mu.Unlock()
		return b.conv.plans.Len()
	}
	require.NoError(t, SetAllowTF32(0, false))
	_, ok := b.ConvForward(x, w, 0, 0, c.g, c.o, c.grp)
	require.True(t, ok)
	n := plans()
	_, ok = b.ConvForward(x, w, 0, 0, c.g, c.o, c.grp)
	require.True(t, ok)
	assert.Equal(t, n, plans(), "the same geometry reuses its plan")
	require.NoError(t, SetAllowTF32(0, true))
	_, ok = b.ConvForward(x, w, 0, 0, c.g, c.o, c.grp)
	require.True(t, ok)
	assert.Equal(t, n+1, plans(), "TF32 math has a plan of its own")
}

// BenchmarkGPUConvResNet50 times cuDNN on the convolutions of ResNet-50's
// bottleneck blocks at batch 64 (float32, TF32 off), forward and both
// gradients; compare with torch.nn.functional.conv2d timed on the same
// machine.
func BenchmarkGPUConvResNet50(bm *testing.B) {
	b, err := backend(0)
	if err != nil {
		bm.Skipf("no CUDA device: %v", err)
	}
	if _, err := b.cudnnInfo(); err != nil {
		bm.Skipf("no cuDNN: %v", err)
	}
	layers := []convCase{
		{"stem7x7", ktConvGeom(64, 3, 224, 224, 7, 7, 2, 2, 3, 3, 1, 1), 64, 1},
		{"s2_3x3", ktConvGeom(64, 64, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1), 64, 1},
		{"s2_1x1", ktConvGeom(64, 64, 56, 56, 1, 1, 1, 1, 0, 0, 1, 1), 256, 1},
		{"s3_3x3", ktConvGeom(64, 128, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1), 128, 1},
		{"s5_3x3", ktConvGeom(64, 512, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1), 512, 1},
	}
	for _, l := range layers {
		g := l.g
		x := b.newBuffer(tensor.Float32, g.N*g.C*g.H*g.W)
		w := b.newBuffer(tensor.Float32, l.o*g.C/l.grp*g.KH*g.KW)
		dy := b.newBuffer(tensor.Float32, g.N*l.o*g.OH*g.OW)
		for _, dir := range []string{"fwd", "bwd_data", "bwd_filter"} {
			bm.Run(l.name+"/"+dir, func(bm *testing.B) {
				run := func() {
					var ok bool
					switch dir {
					case "fwd":
						_, ok = b.ConvForward(x, w, 0, 0, g, l.o, l.grp)
					case "bwd_data":
						_, ok = b.ConvBackwardInput(dy, w, 0, 0, g, l.o, l.grp)
					default:
						_, ok = b.ConvBackwardWeight(x, dy, 0, 0, g, l.o, l.grp)
					}
					if !ok {
						bm.Fatal("cuDNN declined")
					}
				}
				run() // plan
				b.sync()
				bm.ResetTimer()
				for bm.Loop() {
					run()
				}
				b.sync()
			})
		}
	}
}
