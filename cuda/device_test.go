//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/cuda/internal/kernels"
	"github.com/emberml/ember/tensor"
)

// ---- tests that need no GPU ------------------------------------------------

func TestStridedMatchesKernelStruct(t *testing.T) {
	// struct Strided in common.cuh: 8+8 long long, long long, int, int.
	assert.Equal(t, uintptr(8*maxRank*2+8+4+4), unsafe.Sizeof(strided{}))
	assert.Equal(t, uintptr(8*maxRank), unsafe.Offsetof(strided{}.Strides))
	assert.Equal(t, uintptr(16*maxRank), unsafe.Offsetof(strided{}.Offset))
	assert.Equal(t, uintptr(16*maxRank+8), unsafe.Offsetof(strided{}.Rank))
}

func TestView(t *testing.T) {
	tests := []struct {
		name    string
		l       tensor.Layout
		shape   []int64
		strides []int64
		offset  int64
	}{
		{"scalar", tensor.Layout{Offset: 5}, nil, nil, 5},
		{"contiguous 3-d merges to 1-d", tensor.Layout{Shape: []int{2, 3, 4}, Strides: []int{12, 4, 1}}, []int64{24}, []int64{1}, 0},
		{"unit axes dropped", tensor.Layout{Shape: []int{1, 3, 1, 2}, Strides: []int{99, 2, 7, 1}, Offset: 1}, []int64{6}, []int64{1}, 1},
		{"transposed stays 2-d", tensor.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}, []int64{3, 2}, []int64{1, 3}, 0},
		{"broadcast axis kept", tensor.Layout{Shape: []int{4, 3}, Strides: []int{0, 1}}, []int64{4, 3}, []int64{0, 1}, 0},
		{"broadcast axes merge", tensor.Layout{Shape: []int{4, 3}, Strides: []int{0, 0}}, []int64{12}, []int64{0}, 0},
		{"row gap not merged", tensor.Layout{Shape: []int{2, 3, 4}, Strides: []int{20, 4, 1}}, []int64{2, 12}, []int64{20, 1}, 0},
		{"negative strides merge", tensor.Layout{Shape: []int{2, 3}, Strides: []int{-3, -1}, Offset: 5}, []int64{6}, []int64{-1}, 5},
		{"empty", tensor.Layout{Shape: []int{3, 0, 2}, Strides: []int{2, 2, 1}}, []int64{0}, []int64{0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := view(tt.l)
			var shape, strides [maxRank]int64 // zero beyond the rank
			copy(shape[:], tt.shape)
			copy(strides[:], tt.strides)
			assert.Equal(t, int32(len(tt.shape)), v.Rank)
			assert.Equal(t, shape, v.Shape)
			assert.Equal(t, strides, v.Strides)
			assert.Equal(t, tt.offset, v.Offset)
		})
	}
}

func TestViewElementOrder(t *testing.T) {
	// Every element offset of the coalesced view equals the original's, in
	// row-major order (strided_offset of common.cuh, written in Go).
	layouts := []tensor.Layout{
		{Shape: []int{2, 3, 4}, Strides: []int{1, 8, 2}, Offset: 3},
		{Shape: []int{5, 1, 2, 2}, Strides: []int{4, 100, 2, 1}},
		{Shape: []int{3, 2, 2}, Strides: []int{0, 2, 1}},
	}
	for _, l := range layouts {
		v := view(l)
		n := 1
		for _, s := range l.Shape {
			n *= s
		}
		idx := make([]int, len(l.Shape))
		for i := range n {
			want := l.Offset
			for d, x := range idx {
				want += x * l.Strides[d]
			}
			got, rem := v.Offset, int64(i)
			for d := v.Rank - 1; d >= 0; d-- {
				got += (rem % v.Shape[d]) * v.Strides[d]
				rem /= v.Shape[d]
			}
			require.Equal(t, int64(want), got, "layout %+v element %d", l, i)
			for d := len(idx) - 1; d >= 0; d-- {
				if idx[d]++; idx[d] < l.Shape[d] {
					break
				}
				idx[d] = 0
			}
		}
	}
}

func TestViewTooManyAxes(t *testing.T) {
	shape := make([]int, maxRank+1)
	strides := make([]int, maxRank+1)
	for i := range shape {
		shape[i] = 2
		strides[i] = 1 << (2 * (maxRank - i)) // gaps everywhere: nothing merges
	}
	assert.PanicsWithValue(t, fmt.Sprintf("cuda: a view of shape %v and strides %v has %d axes after merging; kernels take at most %d", shape, strides, maxRank+1, maxRank),
		func() { view(tensor.Layout{Shape: shape, Strides: strides}) })
}

func TestHostBytes(t *testing.T) {
	tests := []struct {
		dt   tensor.DType
		data any
		n    int
		size int
	}{
		{tensor.Float32, []float32{1, 2, 3}, 3, 4},
		{tensor.Float64, []float64{1, 2}, 2, 8},
		{tensor.Int64, []int64{1}, 1, 8},
		{tensor.Int32, []int32{1, 2, 3, 4}, 4, 4},
		{tensor.Bool, []bool{true, false, true}, 3, 1},
		{tensor.Float16, []uint16{0x3c00}, 1, 2},
		{tensor.BFloat16, []uint16{0x3f80, 0}, 2, 2},
		{tensor.Float32, []float32{}, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.dt.String(), func(t *testing.T) {
			b, n := hostBytes(tt.dt, tt.data)
			assert.Equal(t, tt.n, n)
			assert.Len(t, b, tt.n*tt.size)
			assert.Equal(t, tt.dt.Size(), tt.size)
			h := makeHost(tt.dt, 2)
			hb, hn := hostBytes(tt.dt, h)
			assert.Equal(t, 2, hn)
			assert.Len(t, hb, 2*tt.size)
		})
	}
	b, _ := hostBytes(tensor.Bool, []bool{true, false})
	assert.Equal(t, []byte{1, 0}, b)
	assert.Panics(t, func() { hostBytes(tensor.Float32, []float64{1}) })
	assert.Panics(t, func() { hostBytes(tensor.Int32, []uint16{1}) })
	for _, dt := range []tensor.DType{tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16, tensor.Uint32, tensor.Uint64} {
		assert.PanicsWithValue(t, "cuda: dtype "+dt.String()+" not supported on cuda; keep the tensor on the CPU or convert it with To first",
			func() { hostBytes(dt, tensor.Zeros([]int{2}, dt).Float64s()) })
	}
}

func TestParsePTXEntries(t *testing.T) {
	src := []byte(`.version 7.8
.target sm_80
.address_size 64
	// .globl	matmul_i64
.visible .entry matmul_i64(
	.param .u64 matmul_i64_param_0
)
.entry local_kernel (
)
.func helper(
`)
	assert.Equal(t, []string{"matmul_i64", "local_kernel"}, parsePTXEntries(src))
}

// TestKernelsAreEntries checks that every kernel the Go side launches is an
// .entry of exactly one embedded PTX module.
func TestKernelsAreEntries(t *testing.T) {
	idx, err := kernelIndex()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, name := range allKernels() {
		_, ok := idx[name]
		assert.True(t, ok, "kernel %q is not an .entry of the embedded PTX", name)
		seen[name] = true
	}
	for _, name := range coreKernels {
		assert.Equal(t, "core.ptx", idx[name])
	}
	assert.NotEmpty(t, seen)
}

// TestPTXAssembles runs ptxas on every embedded module for sm_80 (the
// driver JIT-compiles the same PTX for newer GPUs).
func TestPTXAssembles(t *testing.T) {
	ptxas, err := exec.LookPath("ptxas")
	if err != nil {
		t.Skip("ptxas not on PATH (it comes with the CUDA toolkit)")
	}
	files, err := fs.Glob(kernels.PTX, "*.ptx")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	dir := t.TempDir()
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			src, err := fs.ReadFile(kernels.PTX, f)
			require.NoError(t, err)
			p := filepath.Join(dir, f)
			require.NoError(t, os.WriteFile(p, src, 0o644))
			out, err := exec.Command(ptxas, "-arch=sm_80", p, "-o", os.DevNull).CombinedOutput()
			require.NoError(t, err, "ptxas %s:\n%s", f, out)
		})
	}
}

func TestOpenWithoutDevice(t *testing.T) {
	b, err := newBackend(0)
	if err == nil {
		t.Skipf("a CUDA device is present (%s)", b.Device())
	}
	require.ErrorIs(t, err, ErrNoDevice)
	t.Logf("open: %v", err)
	_, err = newBackend(-1)
	require.ErrorIs(t, err, ErrNoDevice)
}

func TestWrapErr(t *testing.T) {
	assert.NoError(t, wrapErr(nil))
	plain := wrapErr(errors.New("boom"))
	assert.EqualError(t, plain, "cuda: boom")
	assert.NotErrorIs(t, plain, ErrNoDevice)
}

// ---- GPU tests (skipped without a device) ----------------------------------

// gpu returns the backend of cuda:0, skipping the test without one.
func gpu(t *testing.T) *Backend {
	t.Helper()
	b, err := backend(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	return b
}

// randomHost returns n pseudo-random elements of dt as a host slice.
func randomHost(dt tensor.DType, n int, rng *rand.Rand) any {
	h := makeHost(dt, n)
	switch d := h.(type) {
	case []float32:
		for i := range d {
			d[i] = rng.Float32()*2 - 1
		}
	case []float64:
		for i := range d {
			d[i] = rng.Float64()*2 - 1
		}
	case []int64:
		for i := range d {
			d[i] = rng.Int64N(19) - 9
		}
	case []int32:
		for i := range d {
			d[i] = rng.Int32N(19) - 9
		}
	case []bool:
		for i := range d {
			d[i] = rng.IntN(2) == 1
		}
	case []uint16:
		for i := range d {
			d[i] = uint16(rng.Uint32())
		}
	}
	return h
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool, tensor.Float16, tensor.BFloat16}

func TestGPURoundTrip(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(1, 1))
	// Sizes cover empty, small (pageable copies) and several staging
	// chunks (pinned copies of more than two halves).
	for _, dt := range allDTypes {
		for _, n := range []int{0, 1, 7, 1000, pinnedThreshold/dt.Size() + 3, (2*stagingHalf+stagingHalf/2)/dt.Size() + 1} {
			t.Run(fmt.Sprintf("%s/%d", dt, n), func(t *testing.T) {
				host := randomHost(dt, n, rng)
				buf := b.FromHost(dt, host)
				require.Equal(t, n, buf.Len())
				require.Equal(t, dt, buf.DType())
				got := b.ToHost(buf, tensor.Layout{Shape: []int{n}, Strides: []int{1}})
				require.Equal(t, host, got)
				z := b.ToHost(b.Alloc(dt, n), tensor.Layout{Shape: []int{n}, Strides: []int{1}})
				require.Equal(t, makeHost(dt, n), z, "Alloc must zero-fill")
			})
		}
	}
}

func TestGPUToHostViews(t *testing.T) {
	b := gpu(t)
	host := make([]float32, 24)
	for i := range host {
		host[i] = float32(i)
	}
	buf := b.FromHost(tensor.Float32, host)
	tests := []struct {
		name string
		l    tensor.Layout
		want []float32
	}{
		{"offset contiguous", tensor.Layout{Shape: []int{2, 3}, Strides: []int{3, 1}, Offset: 6}, []float32{6, 7, 8, 9, 10, 11}},
		{"scalar", tensor.Layout{Offset: 5}, []float32{5}},
		{"transposed", tensor.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}, []float32{0, 3, 1, 4, 2, 5}},
		{"strided", tensor.Layout{Shape: []int{4}, Strides: []int{5}, Offset: 1}, []float32{1, 6, 11, 16}},
		{"broadcast", tensor.Layout{Shape: []int{2, 2}, Strides: []int{0, 1}, Offset: 2}, []float32{2, 3, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, b.ToHost(buf, tt.l))
		})
	}
}

// matmulCase builds operands for p: every matrix of the batch at its offset.
type matmulCase struct {
	name           string
	m, n, k        int
	transA, transB bool
	batch          int
	// offsets, if set, give non-uniform batch offsets in matrices.
	aIdx, bIdx []int
}

func (c matmulCase) params() (tensor.MatMulParams, int, int) {
	ar, ac := c.m, c.k
	if c.transA {
		ar, ac = c.k, c.m
	}
	br, bc := c.k, c.n
	if c.transB {
		br, bc = c.n, c.k
	}
	// Padded rows test leading dimensions.
	p := tensor.MatMulParams{M: c.m, N: c.n, K: c.k, TransA: c.transA, TransB: c.transB, LDA: ac + 1, LDB: bc + 2}
	sa, sb := ar*p.LDA, br*p.LDB
	na, nb := c.batch, c.batch
	for i := range c.batch {
		ai, bi := i, i
		if c.aIdx != nil {
			ai, bi = c.aIdx[i], c.bIdx[i]
		}
		p.AOffsets = append(p.AOffsets, ai*sa)
		p.BOffsets = append(p.BOffsets, bi*sb)
		na, nb = max(na, ai+1), max(nb, bi+1)
	}
	return p, na * sa, nb * sb
}

var matmulCases = []matmulCase{
	{name: "odd", m: 37, n: 29, k: 41, batch: 1},
	{name: "vector row", m: 1, n: 17, k: 5, batch: 1},
	{name: "vector col", m: 9, n: 1, k: 3, batch: 1},
	{name: "transA", m: 13, n: 7, k: 11, transA: true, batch: 1},
	{name: "transB", m: 13, n: 7, k: 11, transB: true, batch: 1},
	{name: "both transposed", m: 6, n: 19, k: 23, transA: true, transB: true, batch: 1},
	{name: "k zero", m: 3, n: 4, k: 0, batch: 2},
	{name: "batched uniform", m: 5, n: 6, k: 7, batch: 4},
	{name: "batched transposed", m: 8, n: 3, k: 9, transA: true, transB: true, batch: 3},
	{name: "batched non-uniform", m: 4, n: 5, k: 6, batch: 4, aIdx: []int{2, 0, 2, 1}, bIdx: []int{0, 0, 1, 1}},
	{name: "large", m: 129, n: 257, k: 300, batch: 2},
}

func TestGPUMatMul(t *testing.T) {
	b := gpu(t)
	cpu, err := tensor.BackendFor(tensor.CPU)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32} {
		for _, c := range matmulCases {
			t.Run(dt.String()+"/"+c.name, func(t *testing.T) {
				p, na, nb := c.params()
				ha, hb := randomHost(dt, na, rng), randomHost(dt, nb, rng)
				want := cpu.Alloc(dt, c.batch*c.m*c.n)
				cpu.MatMul(want, cpu.FromHost(dt, ha), cpu.FromHost(dt, hb), p)
				dst := b.newBuffer(dt, c.batch*c.m*c.n) // uninitialised: K=0 must clear it
				b.MatMul(dst, b.FromHost(dt, ha), b.FromHost(dt, hb), p)
				flat := tensor.Layout{Shape: []int{c.batch * c.m * c.n}, Strides: []int{1}}
				got := b.ToHost(dst, flat)
				exp := cpu.ToHost(want, flat)
				switch g := got.(type) {
				case []float32:
					assert.InDeltaSlice(t, toF64(exp.([]float32)), toF64(g), 1e-4)
				case []float64:
					assert.InDeltaSlice(t, exp, g, 1e-11)
				default:
					assert.Equal(t, exp, got)
				}
			})
		}
	}
}

func toF64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestGPUMatMulTF32(t *testing.T) {
	b := gpu(t)
	t.Cleanup(func() { require.NoError(t, SetAllowTF32(0, false)) })
	const m, n, k = 256, 256, 512
	rng := rand.New(rand.NewPCG(5, 6))
	ha, hb := randomHost(tensor.Float32, m*k, rng).([]float32), randomHost(tensor.Float32, k*n, rng).([]float32)
	exact := make([]float64, m*n)
	for i := range m {
		for p := range k {
			a := float64(ha[i*k+p])
			for j := range n {
				exact[i*n+j] += a * float64(hb[p*n+j])
			}
		}
	}
	p := tensor.MatMulParams{M: m, N: n, K: k, LDA: k, LDB: n, AOffsets: []int{0}, BOffsets: []int{0}}
	run := func() []float32 {
		dst := b.newBuffer(tensor.Float32, m*n)
		b.MatMul(dst, b.FromHost(tensor.Float32, ha), b.FromHost(tensor.Float32, hb), p)
		return b.ToHost(dst, tensor.Layout{Shape: []int{m * n}, Strides: []int{1}}).([]float32)
	}
	maxErr := func(got []float32) float64 {
		var e float64
		for i, v := range got {
			e = max(e, math.Abs(float64(v)-exact[i]))
		}
		return e
	}
	require.NoError(t, SetAllowTF32(0, false))
	fp32 := maxErr(run())
	require.NoError(t, SetAllowTF32(0, true))
	tf32 := maxErr(run())
	t.Logf("max abs error over K=%d: FP32 %.2e, TF32 %.2e", k, fp32, tf32)
	assert.Less(t, fp32, 1e-3)
	assert.Less(t, tf32, 5e-2) // TF32 keeps 10 mantissa bits: ~1e-3 relative per product
	require.NoError(t, SetAllowTF32(0, false))
	assert.Less(t, maxErr(run()), 1e-3, "turning TF32 off restores FP32 accuracy")
}

func TestGPUScratchAndStats(t *testing.T) {
	b := gpu(t)
	require.NoError(t, ResetPeakMemory(0))
	before, err := MemoryStats(0)
	require.NoError(t, err)
	addr, release := b.scratch(3 << 20)
	assert.NotZero(t, addr)
	mid, err := MemoryStats(0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, mid.Allocated-before.Allocated, int64(3<<20))
	release()
	require.NoError(t, Synchronize(0))
	require.NoError(t, EmptyCache(0))
	after, err := MemoryStats(0)
	require.NoError(t, err)
	assert.LessOrEqual(t, after.Allocated, mid.Allocated-int64(3<<20))
	assert.GreaterOrEqual(t, after.Peak, mid.Allocated)
}

func TestGPUInfo(t *testing.T) {
	gpu(t)
	info, err := Info(0)
	require.NoError(t, err)
	t.Logf("%+v", info)
	assert.NotEmpty(t, info.Name)
	assert.Greater(t, info.TotalMemory, uint64(0))
	assert.LessOrEqual(t, info.FreeMemory, info.TotalMemory)
	assert.GreaterOrEqual(t, info.Major, 8)
	assert.Greater(t, info.Multiprocessors, 0)
	assert.GreaterOrEqual(t, info.DriverVersion, 11000)
	n, err := DeviceCount()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 1)
	_, err = Info(n)
	assert.ErrorIs(t, err, ErrNoDevice)
}

func TestGPUTensorRoundTrip(t *testing.T) {
	gpu(t)
	dev, err := Device(0)
	require.NoError(t, err)
	assert.Equal(t, tensor.CUDA(0), dev)
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	y, err := x.ToDevice(dev)
	require.NoError(t, err)
	assert.Equal(t, dev, y.Device())
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, y.Float32s())
	w := tensor.FromSlice([]float32{1, 0, 0, 1, 1, 1}, 3, 2)
	wd, err := w.ToDevice(dev)
	require.NoError(t, err)
	assert.Equal(t, x.MatMul(w).Float32s(), y.MatMul(wd).Float32s())
}

// Dead tensors' device memory comes back between steps without an
// out-of-memory: the pacer collects as memory in use grows.
func TestGPUPacingReturnsDeadTensors(t *testing.T) {
	b := gpu(t)
	require.NoError(t, SetGCPercent(0, 50))
	const n = 16 << 20 // 64 MiB of float32 per tensor
	for range 64 {     // 4 GiB allocated in all, one tensor live at a time
		buf := b.Alloc(tensor.Float32, n)
		_ = buf
	}
	st, err := MemoryStats(0)
	require.NoError(t, err)
	assert.Less(t, st.Allocated, int64(1<<30), "dead buffers were returned: %+v", st)
}
