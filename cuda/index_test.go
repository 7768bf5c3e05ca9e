//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// Helpers shared by index_test.go, nn_test.go and fused_test.go (prefixed
// kt so they stay out of the way of the package's other tests).

// ktBackends returns the CUDA backend of device 0 and the CPU backend,
// skipping the test when no CUDA device can be opened.
func ktBackends(t *testing.T) (gpu, cpu tensor.Backend) {
	t.Helper()
	g, err := tensor.BackendFor(tensor.CUDA(0))
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	c, err := tensor.BackendFor(tensor.CPU)
	require.NoError(t, err)
	return g, c
}

// ktPair is one operand uploaded to both backends.
type ktPair struct{ gpu, cpu tensor.Buffer }

func ktUpload(gpu, cpu tensor.Backend, dt tensor.DType, data any) ktPair {
	return ktPair{gpu: gpu.FromHost(dt, data), cpu: cpu.FromHost(dt, data)}
}

func ktAlloc(gpu, cpu tensor.Backend, dt tensor.DType, n int) ktPair {
	return ktPair{gpu: gpu.Alloc(dt, n), cpu: cpu.Alloc(dt, n)}
}

// ktHost copies a whole buffer to the host.
func ktHost(be tensor.Backend, b tensor.Buffer) any {
	return be.ToHost(b, tensor.Layout{Shape: []int{b.Len()}, Strides: []int{1}})
}

// ktRandom returns n random host elements of dt.
func ktRandom(rng *rand.Rand, dt tensor.DType, n int) any {
	switch dt {
	case tensor.Float32:
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	case tensor.Float64:
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		return s
	case tensor.Int64:
		s := make([]int64, n)
		for i := range s {
			s[i] = rng.Int64N(201) - 100
		}
		return s
	case tensor.Int32:
		s := make([]int32, n)
		for i := range s {
			s[i] = rng.Int32N(201) - 100
		}
		return s
	case tensor.Bool:
		s := make([]bool, n)
		for i := range s {
			s[i] = rng.IntN(2) == 1
		}
		return s
	default: // Float16, BFloat16: raw bits
		s := make([]uint16, n)
		for i := range s {
			s[i] = uint16(rng.Uint32())
		}
		return s
	}
}

// ktSame reports whether two floats are the same value: equal bits, or both
// NaN (NaN payloads differ between CPU and GPU arithmetic).
func ktSame(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// ktFloats widens a []float32 or []float64 to []float64.
func ktFloats(v any) []float64 {
	switch s := v.(type) {
	case []float32:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return s
	}
	panic(fmt.Sprintf("ktFloats: %T", v))
}

// ktEqual requires the host slices want and got to be identical (floats bit
// for bit, any NaN matching any NaN).
func ktEqual(t *testing.T, want, got any, msg string) {
	t.Helper()
	require.IsType(t, want, got, msg)
	switch want.(type) {
	case []float32, []float64:
		w, g := ktFloats(want), ktFloats(got)
		require.Len(t, g, len(w), msg)
		for i := range w {
			if !ktSame(w[i], g[i]) {
				require.Failf(t, "values differ", "%s: element %d: CPU %v (%#x), GPU %v (%#x)", msg, i, w[i], math.Float64bits(w[i]), g[i], math.Float64bits(g[i]))
			}
		}
	default:
		require.Equal(t, want, got, msg)
	}
}

// ktClose requires the float slices want and got to agree within
// tol*(1+|want|) element by element (NaN and infinities exactly).
func ktClose(t *testing.T, want, got any, tol float64, msg string) {
	t.Helper()
	require.IsType(t, want, got, msg)
	w, g := ktFloats(want), ktFloats(got)
	require.Len(t, g, len(w), msg)
	for i := range w {
		if math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			if !ktSame(w[i], g[i]) {
				require.Failf(t, "values differ", "%s: element %d: CPU %v, GPU %v", msg, i, w[i], g[i])
			}
			continue
		}
		if math.Abs(w[i]-g[i]) > tol*(1+math.Abs(w[i])) {
			require.Failf(t, "values differ", "%s: element %d: CPU %v, GPU %v (tolerance %g)", msg, i, w[i], g[i], tol)
		}
	}
}

// ktTol is the comparison tolerance of results summed in another order.
func ktTol(dt tensor.DType) float64 {
	if dt == tensor.Float32 {
		return 2e-6
	}
	return 1e-13
}

// ktView returns a view of the given shape and the buffer length it needs:
// "contig" is row-major; "padded" sits inside a larger row-major array
// (every axis one longer, offset one along each); "colmajor" stores the
// first axis fastest; "bcast" repeats along every axis but keep (stride 0).
func ktView(shape []int, kind string, keep int) (tensor.Layout, int) {
	nd := len(shape)
	st := make([]int, nd)
	off := 0
	switch kind {
	case "contig", "padded":
		ext := slices.Clone(shape)
		if kind == "padded" {
			for d := range ext {
				ext[d]++
			}
		}
		s := 1
		for d := nd - 1; d >= 0; d-- {
			st[d] = s
			s *= ext[d]
		}
		if kind == "padded" {
			for d := range st {
				off += st[d]
			}
		}
	case "colmajor":
		s := 1
		for d := range nd {
			st[d] = s
			s *= shape[d]
		}
	case "bcast":
		st[keep] = 1
	default:
		panic("ktView: " + kind)
	}
	n := off + 1
	for d := range nd {
		if shape[d] == 0 {
			return tensor.Layout{Shape: shape, Strides: st, Offset: off}, off
		}
		n += (shape[d] - 1) * st[d]
	}
	return tensor.Layout{Shape: shape, Strides: st, Offset: off}, n
}

// ktPlace stores the row-major values vals of l.Shape at their places in a
// buffer of n elements of the view l (zeros elsewhere).
func ktPlace[T any](vals []T, l tensor.Layout, n int) []T {
	out := make([]T, n)
	for i, v := range vals {
		off, rest := l.Offset, i
		for d := len(l.Shape) - 1; d >= 0; d-- {
			off += rest % l.Shape[d] * l.Strides[d]
			rest /= l.Shape[d]
		}
		out[off] = v
	}
	return out
}

// ktIndexValues converts int64 index values to the host slice of dt.
func ktIndexValues(dt tensor.DType, v []int64) any {
	if dt == tensor.Int64 {
		return v
	}
	s := make([]int32, len(v))
	for i, x := range v {
		s[i] = int32(x)
	}
	return s
}

// ktIndex builds an index operand of dt over shape whose values are made by
// value(line, k): k is the position along axis, line numbers the other
// axes. With kind "bcast" every line shares line 0's values.
func ktIndex(gpu, cpu tensor.Backend, dt tensor.DType, shape []int, axis int, kind string, value func(line, k int) int64) (ktPair, tensor.Layout) {
	l, n := ktView(shape, kind, axis)
	if kind == "bcast" {
		vals := make([]int64, shape[axis])
		for k := range vals {
			vals[k] = value(0, k)
		}
		return ktUpload(gpu, cpu, dt, ktIndexValues(dt, vals)), tensor.Layout{Shape: shape, Strides: l.Strides, Offset: 0}
	}
	vals := make([]int64, ixElems(shape))
	inner := 1
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	for i := range vals {
		k := i / inner % shape[axis]
		line := i/(inner*shape[axis])*inner + i%inner
		vals[i] = value(line, k)
	}
	return ktUpload(gpu, cpu, dt, ktIndexValues(dt, ktPlace(vals, l, n))), l
}

var ktAllDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool, tensor.Float16, tensor.BFloat16}

// ---- Tests that need no GPU ----------------------------------------------

// ktCheckPTX requires every name to be an .entry of the embedded PTX
// module file (TestPTXAssembles runs ptxas on every module).
func ktCheckPTX(t *testing.T, file string, names []string) {
	t.Helper()
	require.NotEmpty(t, names)
	entries := ptxEntries(t, file)
	for _, name := range names {
		assert.True(t, entries[name], "kernel %s is not an .entry of %s", name, file)
	}
}

// ktDefines returns the integer #define values of a .cu source.
func ktDefines(t *testing.T, file string) map[string]int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("internal", "kernels", file))
	require.NoError(t, err)
	defs := map[string]int{}
	re := regexp.MustCompile(`(?m)^#define ([A-Z_0-9]+) (.+)$`)
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		expr := strings.Trim(strings.TrimSpace(m[2]), "()")
		if v, err := strconv.Atoi(expr); err == nil {
			defs[m[1]] = v
			continue
		}
		if a, b, ok := strings.Cut(expr, " * "); ok {
			defs[m[1]] = defs[a] * defs[b]
		}
	}
	return defs
}

func TestIndexPTX(t *testing.T) {
	ktCheckPTX(t, "index.ptx", indexKernels)
}

func TestIndexMaskGeometryMatchesKernels(t *testing.T) {
	defs := ktDefines(t, "index.cu")
	assert.Equal(t, ixMaskThreads, defs["MASK_THREADS"])
	assert.Equal(t, ixMaskChunk, defs["MASK_CHUNK"])
}

func TestIndexKernelNames(t *testing.T) {
	cases := []struct {
		dt, it     tensor.DType
		accumulate bool
		gather     string
		scatter    string
	}{
		{tensor.Float32, tensor.Int64, false, "gather_u32_i64", "scatter_u32_i64"},
		{tensor.Float32, tensor.Int32, true, "gather_u32_i32", "scatter_add_f32_i32"},
		{tensor.Float64, tensor.Int64, true, "gather_u64_i64", "scatter_add_f64_i64"},
		{tensor.Int64, tensor.Int64, true, "gather_u64_i64", "scatter_add_i64_i64"},
		{tensor.Int32, tensor.Int32, true, "gather_u32_i32", "scatter_add_i32_i32"},
		{tensor.Bool, tensor.Int64, true, "gather_u8_i64", "scatter_or_u8_i64"},
		{tensor.Bool, tensor.Int64, false, "gather_u8_i64", "scatter_u8_i64"},
		{tensor.Float16, tensor.Int32, false, "gather_u16_i32", "scatter_u16_i32"},
		{tensor.BFloat16, tensor.Int64, false, "gather_u16_i64", "scatter_u16_i64"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.dt, c.it, c.accumulate), func(t *testing.T) {
			assert.Equal(t, c.gather, ixGatherKernel(c.dt, c.it))
			assert.Equal(t, c.scatter, ixScatterKernel(c.dt, c.it, c.accumulate))
			assert.Contains(t, indexKernels, c.gather)
			assert.Contains(t, indexKernels, c.scatter)
		})
	}
	assert.PanicsWithValue(t, "tensor: accumulating scatter on float16 storage; convert to Float32 first", func() {
		ixScatterKernel(tensor.Float16, tensor.Int64, true)
	})
	assert.Panics(t, func() { ixTypeSuffix(tensor.Float32) })
}

// ---- GPU tests against the CPU backend -----------------------------------

func TestGatherMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		src       []int
		axis      int
		idx       []int
		srcKind   string
		idxKind   string
		indexType tensor.DType
	}{
		{[]int{5, 7, 3}, 0, []int{9, 6, 3}, "contig", "contig", tensor.Int64},
		{[]int{5, 7, 3}, 1, []int{4, 11, 2}, "padded", "colmajor", tensor.Int32},
		{[]int{5, 7, 3}, 2, []int{5, 7, 8}, "colmajor", "padded", tensor.Int64},
		{[]int{6, 9}, 0, []int{13, 9}, "padded", "bcast", tensor.Int64}, // IndexSelect
		{[]int{6, 9}, 1, []int{6, 4}, "contig", "bcast", tensor.Int32},
		{[]int{37}, 0, []int{1001}, "padded", "contig", tensor.Int32},
		{[]int{4, 3}, 1, []int{4, 0}, "contig", "contig", tensor.Int64},
	}
	for _, c := range cases {
		for _, dt := range ktAllDTypes {
			name := fmt.Sprintf("%v/axis%d/%v/%s-%s/%s/%s", c.src, c.axis, c.idx, c.srcKind, c.idxKind, c.indexType, dt)
			t.Run(name, func(t *testing.T) {
				sl, sn := ktView(c.src, c.srcKind, 0)
				src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, sn))
				idx, il := ktIndex(gpu, cpu, c.indexType, c.idx, c.axis, c.idxKind, func(int, int) int64 {
					return rng.Int64N(int64(c.src[c.axis]))
				})
				n := ixElems(c.idx)
				dst := ktAlloc(gpu, cpu, dt, n)
				require.NoError(t, cpu.Gather(dst.cpu, src.cpu, sl, c.axis, idx.cpu, il))
				require.NoError(t, gpu.Gather(dst.gpu, src.gpu, sl, c.axis, idx.gpu, il))
				ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), name)
			})
		}
	}
}

// ktBadIndex returns an index maker whose values are in range except at
// the given (line, k) positions.
func ktBadIndex(rng *rand.Rand, bound int64, bad map[[2]int]int64) func(line, k int) int64 {
	return func(line, k int) int64 {
		if v, ok := bad[[2]int{line, k}]; ok {
			return v
		}
		return rng.Int64N(bound)
	}
}

func TestGatherIndexErrorsMatchCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name      string
		bad       map[[2]int]int64
		indexType tensor.DType
	}{
		{"negative", map[[2]int]int64{{2, 1}: -1}, tensor.Int64},
		{"too large", map[[2]int]int64{{0, 3}: 7}, tensor.Int32},
		{"first of two", map[[2]int]int64{{1, 0}: 100, {3, 2}: -5}, tensor.Int64},
		{"huge", map[[2]int]int64{{4, 4}: math.MaxInt64}, tensor.Int64},
		{"int32 min", map[[2]int]int64{{0, 0}: math.MinInt32}, tensor.Int32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shape := []int{7, 5}
			sl, sn := ktView(shape, "contig", 0)
			src := ktUpload(gpu, cpu, tensor.Float32, ktRandom(rng, tensor.Float32, sn))
			idx, il := ktIndex(gpu, cpu, c.indexType, []int{7, 6}, 1, "colmajor", ktBadIndex(rng, 5, c.bad))
			dst := ktAlloc(gpu, cpu, tensor.Float32, 42)
			want := cpu.Gather(dst.cpu, src.cpu, sl, 1, idx.cpu, il)
			got := gpu.Gather(dst.gpu, src.gpu, sl, 1, idx.gpu, il)
			var ie *tensor.IndexError
			require.ErrorAs(t, want, &ie)
			require.Equal(t, want, got)
		})
	}
}

func TestScatterMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		dst       []int
		axis      int
		idx       []int
		dstKind   string
		idxKind   string
		srcKind   string
		indexType tensor.DType
	}{
		{[]int{6, 5, 4}, 0, []int{6, 3, 4}, "contig", "contig", "contig", tensor.Int64},
		{[]int{6, 5, 4}, 1, []int{2, 5, 3}, "padded", "colmajor", "padded", tensor.Int32},
		{[]int{6, 5, 4}, 2, []int{6, 5, 3}, "colmajor", "padded", "colmajor", tensor.Int64},
		{[]int{9, 8}, 0, []int{7, 8}, "padded", "bcast", "contig", tensor.Int64}, // IndexAdd / IndexCopy
		{[]int{9, 8}, 1, []int{5, 8}, "contig", "bcast", "colmajor", tensor.Int32},
		{[]int{3000}, 0, []int{2500}, "padded", "contig", "padded", tensor.Int64},
	}
	for _, c := range cases {
		for _, accumulate := range []bool{false, true} {
			for _, dt := range ktAllDTypes {
				if accumulate && (dt == tensor.Float16 || dt == tensor.BFloat16) {
					continue
				}
				name := fmt.Sprintf("%v/axis%d/%v/%s-%s-%s/%s/acc=%v/%s", c.dst, c.axis, c.idx, c.dstKind, c.idxKind, c.srcKind, c.indexType, accumulate, dt)
				t.Run(name, func(t *testing.T) {
					dl, dn := ktView(c.dst, c.dstKind, 0)
					sl, sn := ktView(c.idx, c.srcKind, 0)
					bound := c.dst[c.axis]
					// Without accumulation each line gets distinct targets
					// (which of several writes wins is unspecified); with it,
					// targets repeat.
					perms := map[int][]int{}
					idx, il := ktIndex(gpu, cpu, c.indexType, c.idx, c.axis, c.idxKind, func(line, k int) int64 {
						if accumulate {
							return rng.Int64N(int64(min(bound, 3)))
						}
						p, ok := perms[line]
						if !ok {
							p = rng.Perm(bound)
							perms[line] = p
						}
						return int64(p[k])
					})
					init := ktRandom(rng, dt, dn)
					dst := ktUpload(gpu, cpu, dt, init)
					src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, sn))
					require.NoError(t, cpu.Scatter(dst.cpu, dl, c.axis, idx.cpu, il, src.cpu, sl, accumulate))
					require.NoError(t, gpu.Scatter(dst.gpu, dl, c.axis, idx.gpu, il, src.gpu, sl, accumulate))
					want, got := ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu)
					if accumulate && (dt == tensor.Float32 || dt == tensor.Float64) {
						// Atomic adds round in any order; a target may take
						// hundreds of additions.
						ktClose(t, want, got, 50*ktTol(dt), name)
						return
					}
					ktEqual(t, want, got, name)
				})
			}
		}
	}
}

func TestScatterIndexErrorLeavesDstUntouched(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, accumulate := range []bool{false, true} {
		for _, it := range []tensor.DType{tensor.Int64, tensor.Int32} {
			t.Run(fmt.Sprint(it, accumulate), func(t *testing.T) {
				shape := []int{5, 6}
				dl, dn := ktView(shape, "padded", 0)
				sl, sn := ktView([]int{5, 4}, "contig", 0)
				init := ktRandom(rng, tensor.Float64, dn)
				dst := ktUpload(gpu, cpu, tensor.Float64, init)
				src := ktUpload(gpu, cpu, tensor.Float64, ktRandom(rng, tensor.Float64, sn))
				idx, il := ktIndex(gpu, cpu, it, []int{5, 4}, 0, "contig", ktBadIndex(rng, 5, map[[2]int]int64{{2, 3}: 5, {3, 4}: -2}))
				want := cpu.Scatter(dst.cpu, dl, 0, idx.cpu, il, src.cpu, sl, accumulate)
				got := gpu.Scatter(dst.gpu, dl, 0, idx.gpu, il, src.gpu, sl, accumulate)
				require.Equal(t, &tensor.IndexError{Index: 5, Size: 5}, want)
				require.Equal(t, want, got)
				ktEqual(t, init, ktHost(gpu, dst.gpu), "dst after a failed scatter")
			})
		}
	}
}

func TestMaskedSelectAndScatterMatchCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		shape           []int
		dataKind        string
		maskKind        string
		srcKind         string // MaskedScatter's source
		density         float64
		broadcastMaskOn int // axis the mask keeps with maskKind "bcast"
	}{
		{[]int{4, 5}, "contig", "contig", "contig", 0.5, 0},
		{[]int{37, 129}, "padded", "colmajor", "padded", 0.3, 0}, // several scan chunks
		{[]int{3, 2049, 2}, "colmajor", "padded", "colmajor", 0.9, 0},
		{[]int{300, 40}, "contig", "bcast", "contig", 0.5, 1},
		{[]int{1000, 7}, "padded", "contig", "contig", 0, 0},
		{[]int{257, 33}, "contig", "contig", "padded", 1, 0},
		// More chunks than the scan's block has threads: the scan carries
		// a running total from tile to tile.
		{[]int{1201, 499}, "padded", "contig", "contig", 0.4, 0},
	}
	for _, c := range cases {
		dtypes := ktAllDTypes
		if ixElems(c.shape) > 1<<19 {
			dtypes = []tensor.DType{tensor.Float32, tensor.Bool}
		}
		for _, dt := range dtypes {
			name := fmt.Sprintf("%v/%s-%s-%s/%.1f/%s", c.shape, c.dataKind, c.maskKind, c.srcKind, c.density, dt)
			t.Run(name, func(t *testing.T) {
				ml, mn := ktView(c.shape, c.maskKind, c.broadcastMaskOn)
				maskData := make([]bool, mn)
				for i := range maskData {
					maskData[i] = rng.Float64() < c.density
				}
				mask := ktUpload(gpu, cpu, tensor.Bool, maskData)
				count := 0
				for _, v := range cpu.ToHost(mask.cpu, ml).([]bool) {
					if v {
						count++
					}
				}

				// MaskedSelect.
				xl, xn := ktView(c.shape, c.dataKind, 0)
				x := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, xn))
				sel := ktAlloc(gpu, cpu, dt, count)
				cpu.MaskedSelect(sel.cpu, x.cpu, xl, mask.cpu, ml)
				gpu.MaskedSelect(sel.gpu, x.gpu, xl, mask.gpu, ml)
				ktEqual(t, ktHost(cpu, sel.cpu), ktHost(gpu, sel.gpu), "MaskedSelect")

				// MaskedScatter into x from a source with spare elements.
				sl, sn := ktView([]int{count + 3}, c.srcKind, 0)
				src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, sn))
				cpu.MaskedScatter(x.cpu, xl, mask.cpu, ml, src.cpu, sl)
				gpu.MaskedScatter(x.gpu, xl, mask.gpu, ml, src.gpu, sl)
				ktEqual(t, ktHost(cpu, x.cpu), ktHost(gpu, x.gpu), "MaskedScatter")
			})
		}
	}
}
