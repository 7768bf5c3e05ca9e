//go:build cuda

package cuda

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/cuda/internal/kernels"
	"github.com/emberml/ember/tensor"
)

// ---- tests that need no GPU ------------------------------------------------

// ptxEntries returns the .entry names of the embedded PTX module file.
func ptxEntries(t *testing.T, file string) map[string]bool {
	t.Helper()
	src, err := fs.ReadFile(kernels.PTX, file)
	require.NoError(t, err)
	entries := map[string]bool{}
	for _, name := range parsePTXEntries(src) {
		entries[name] = true
	}
	return entries
}

func TestElementwiseKernelsAreEntries(t *testing.T) {
	entries := ptxEntries(t, "elementwise.ptx")
	seen := map[string]bool{}
	for _, name := range elementwiseKernels {
		assert.True(t, entries[name], "kernel %s is not an .entry of elementwise.ptx", name)
		assert.False(t, seen[name], "kernel %s listed twice", name)
		seen[name] = true
	}
	// Every dtype pair of Copy has a kernel name the Go side can form.
	for _, d := range ewTags {
		for _, s := range ewTags {
			if d.dt != s.dt {
				assert.True(t, seen["copy_"+ewTag(d.dt)+"_"+ewTag(s.dt)])
			}
		}
		assert.True(t, seen["gather_"+ewSizeTag(d.dt)])
	}
}

func TestElementwiseContiguous(t *testing.T) {
	tests := []struct {
		name string
		l    tensor.Layout
		want bool
	}{
		{"scalar", tensor.Layout{}, true},
		{"vector", tensor.Layout{Shape: []int{5}, Strides: []int{1}, Offset: 3}, true},
		{"matrix", tensor.Layout{Shape: []int{2, 3}, Strides: []int{3, 1}}, true},
		{"unit axis any stride", tensor.Layout{Shape: []int{2, 1, 3}, Strides: []int{3, 99, 1}}, true},
		{"transposed", tensor.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}, false},
		{"broadcast", tensor.Layout{Shape: []int{2, 3}, Strides: []int{0, 1}}, false},
		{"strided", tensor.Layout{Shape: []int{4}, Strides: []int{2}}, false},
		{"row gap", tensor.Layout{Shape: []int{2, 3}, Strides: []int{4, 1}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ewContiguous(tc.l))
		})
	}
	assert.Equal(t, int32(2), ewFlags(tensor.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}, tensor.Layout{Shape: []int{2}, Strides: []int{1}}))
}

// TestElementwiseFillBits checks that Fill's value conversion matches the
// CPU backend's Fill for every dtype.
func TestElementwiseFillBits(t *testing.T) {
	cpu, err := tensor.BackendFor(tensor.CPU)
	require.NoError(t, err)
	values := []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 65520, 1e-8, 3e9, -3e9, 1e20, math.NaN(), math.Inf(1), math.Inf(-1), 16777217}
	for _, e := range ewTags {
		for _, v := range values {
			buf := cpu.Alloc(e.dt, 1)
			cpu.Fill(buf, v)
			want := ewHostBits(cpu.ToHost(buf, tensor.Layout{Shape: []int{1}, Strides: []int{1}}))[0]
			assert.Equal(t, want, ewFillBits(e.dt, v), "Fill(%v) on %v", v, e.dt)
		}
	}
}

func TestElementwiseUnaryInts(t *testing.T) {
	tests := []struct {
		op     tensor.UnaryOp
		is64   bool
		ia, ib int64
	}{
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: -2.5, B: 7.5}, true, -2, 7},
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: math.Inf(-1), B: math.Inf(1)}, true, math.MinInt64, math.MaxInt64},
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: -1e10, B: 1e10}, false, math.MinInt32, math.MaxInt32},
		{tensor.UnaryOp{Kind: tensor.OpAffine, A: 3.9, B: -2.2}, true, 3, -2},
		{tensor.UnaryOp{Kind: tensor.OpPowScalar, A: -3}, false, -3, 0},
		{tensor.UnaryOp{Kind: tensor.OpNeg}, true, 0, 0},
	}
	for _, tc := range tests {
		ia, ib := ewUnaryInts(tc.op, tc.is64)
		assert.Equal(t, tc.ia, ia, "%+v", tc.op)
		assert.Equal(t, tc.ib, ib, "%+v", tc.op)
	}
	assert.Panics(t, func() { ewUnaryInts(tensor.UnaryOp{Kind: tensor.OpClamp, A: math.NaN(), B: 1}, true) })
}

// TestElementwiseRejects checks the dtype and op checks that run before
// any launch, with the messages of the CPU backend.
func TestElementwiseRejects(t *testing.T) {
	b := &Backend{}
	f16 := &buffer{dt: tensor.Float16, n: 4}
	boolBuf := &buffer{dt: tensor.Bool, n: 4}
	f32 := &buffer{dt: tensor.Float32, n: 4}
	i64 := &buffer{dt: tensor.Int64, n: 4}
	l := tensor.Layout{Shape: []int{4}, Strides: []int{1}}
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"unary f16", func() { b.Unary(tensor.UnaryOp{Kind: tensor.OpNeg}, f16, f16, l) }, "storage dtype"},
		{"unary bool exp", func() { b.Unary(tensor.UnaryOp{Kind: tensor.OpExp}, boolBuf, boolBuf, l) }, "not defined for bool"},
		{"logical not float", func() { b.Unary(tensor.UnaryOp{Kind: tensor.OpLogicalNot}, f32, f32, l) }, "not defined for floats"},
		{"exp int", func() { b.Unary(tensor.UnaryOp{Kind: tensor.OpExp}, i64, i64, l) }, "not defined for integers"},
		{"binary f16", func() { b.Binary(tensor.OpAdd, f16, f16, l, f16, l) }, "storage dtype"},
		{"bool sub", func() { b.Binary(tensor.OpSub, boolBuf, boolBuf, l, boolBuf, l) }, "not defined for bool"},
		{"reduce bool", func() { b.Reduce(tensor.ReduceSum, boolBuf, boolBuf, 1, 4) }, "reduction on"},
		{"argmax f16", func() { b.ArgReduce(true, i64, f16, 1, 4, 1) }, "argmax/argmin on"},
		{"cumsum bool", func() { b.Scan(false, boolBuf, boolBuf, 1, 4, 1) }, "cumulative op on"},
		{"argmax empty", func() { b.ArgReduce(true, i64, f32, 1, 0, 1) }, "empty axis"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.f()
		})
	}
}

// ---- GPU tests: every method against the CPU backend -------------------------
//
// Inputs are random with odd shapes, non-contiguous views (transposed,
// sliced, broadcast) and special values (NaN, ±Inf, -0, subnormals, huge
// and rounding-boundary values, extreme integers). Results must be
// bit-identical (NaN matches any NaN), except:
//   - float32 Exp, Log 4 ulps, Tanh 5, Sigmoid 6 (CUDA's expf, logf and
//     tanhf are within 2 ulps of exact, the CPU's float32 functions within
//     1-2, and Sigmoid adds a division);
//   - float32 Log1p, Expm1, Sin, Cos, Erf, PowScalar and Pow (computed in
//     float64 and rounded once on both sides): 1 ulp;
//   - float64 transcendental functions: 4 ulps (CUDA's are within 1-2 ulps,
//     Go's math within 1-2); PowScalar 16 and Pow 32 ulps for general
//     exponents (Go's math.Pow rounds once per squaring);
//   - float sums (Reduce, and Scan along rows of 1024 or more): within 8 eps
//     of the sum of magnitudes, float products 4·n·eps relative plus a
//     floor a little above the smallest normal (the GPU groups them
//     differently, so long products underflow through subnormals apart);
//   - float Max/Min reductions compare -0 and +0 as equal (which zero a tie
//     keeps depends on the CPU's vector code).

// ewGPU returns the CUDA backend of device 0, skipping the test without one.
func ewGPU(t *testing.T) (gpu, cpu tensor.Backend) {
	t.Helper()
	g, err := tensor.BackendFor(tensor.CUDA(0))
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	c, err := tensor.BackendFor(tensor.CPU)
	require.NoError(t, err)
	return g, c
}

func ewFlat(n int) tensor.Layout { return tensor.Layout{Shape: []int{n}, Strides: []int{1}} }

// ewView is a view of dst shape [p, q, r] into a buffer of need elements.
type ewView struct {
	name string
	l    tensor.Layout
	need int
}

// ewViews returns views of shape [p, q, r]: contiguous, transposed, sliced
// with an offset, and broadcast along rows, columns or everything.
func ewViews(p, q, r int) []ewView {
	sh := []int{p, q, r}
	return []ewView{
		{"contiguous", tensor.Layout{Shape: sh, Strides: []int{q * r, r, 1}}, p * q * r},
		{"transposed", tensor.Layout{Shape: sh, Strides: []int{q, 1, p * q}}, p * q * r},
		{"sliced", tensor.Layout{Shape: sh, Strides: []int{2 * q * (r + 1), 2 * (r + 1), 1}, Offset: 1}, p * 2 * q * (r + 1)},
		{"row broadcast", tensor.Layout{Shape: sh, Strides: []int{0, r, 1}}, q * r},
		{"column broadcast", tensor.Layout{Shape: sh, Strides: []int{q, 1, 0}}, p * q},
		{"scalar broadcast", tensor.Layout{Shape: sh, Strides: []int{0, 0, 0}, Offset: 3}, 4},
	}
}

// ewShapes are the [p, q, r] shapes of the elementwise tests.
var ewShapes = [][3]int{{1, 1, 1}, {3, 5, 7}, {67, 3, 2}, {2, 67, 9}, {13, 1, 67}}

var ewAllDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool, tensor.Float16, tensor.BFloat16}

// ewSpecials are the special float values mixed into inputs.
func ewSpecials() []float64 {
	return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1, -1, 0.5, 1.5, 2.5, -2.5, -0.5,
		65504, 65519.99, 65520, 6e-8, 1e-45, 1e-40, 16777217, 0.1, 2147483647.5, -2147483648.9, 9007199254740993,
		3.3895313892515355e38, 1e-300, 5e-324, 3e9, -3e9, 1e20, -1e20, math.MaxFloat32, 1e300, math.MaxFloat64}
}

// ewIsFloat reports whether dt is a floating-point dtype.
func ewIsFloat(dt tensor.DType) bool {
	return dt == tensor.Float32 || dt == tensor.Float64 || dt == tensor.Float16 || dt == tensor.BFloat16
}

// ewHost returns n random host values of dt; with specials, every fifth
// element is a special value.
func ewHost(rng *rand.Rand, dt tensor.DType, n int, specials bool) any {
	sp := ewSpecials()
	isp := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1, 1<<53 + 1, 1<<24 + 1, -(1 << 31), 1 << 31, 65519, 65520, -7}
	special := func(i int) bool { return specials && i%5 == 0 }
	float := func(i int) float64 {
		if special(i) {
			return sp[rng.IntN(len(sp))]
		}
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
	}
	integer := func(i int) int64 {
		switch {
		case special(i):
			return isp[rng.IntN(len(isp))]
		case rng.IntN(2) == 0:
			return int64(rng.IntN(201) - 100)
		}
		return int64(rng.Uint64())
	}
	switch dt {
	case tensor.Float32:
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(float(i))
		}
		return out
	case tensor.Float64:
		out := make([]float64, n)
		for i := range out {
			out[i] = float(i)
		}
		return out
	case tensor.Int64:
		out := make([]int64, n)
		for i := range out {
			out[i] = integer(i)
		}
		return out
	case tensor.Int32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(integer(i))
		}
		return out
	case tensor.Bool:
		out := make([]bool, n)
		for i := range out {
			out[i] = rng.IntN(2) == 1
		}
		return out
	default: // Float16, BFloat16: every bit pattern, NaNs and subnormals included
		out := make([]uint16, n)
		for i := range out {
			out[i] = uint16(rng.Uint32())
		}
		return out
	}
}

// ewHostBits returns the elements of a host slice as raw bits.
func ewHostBits(h any) []uint64 {
	switch s := h.(type) {
	case []float32:
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = uint64(math.Float32bits(v))
		}
		return out
	case []float64:
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = math.Float64bits(v)
		}
		return out
	case []int64:
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = uint64(v)
		}
		return out
	case []int32:
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = uint64(uint32(v))
		}
		return out
	case []bool:
		out := make([]uint64, len(s))
		for i, v := range s {
			if v {
				out[i] = 1
			}
		}
		return out
	case []uint16:
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = uint64(v)
		}
		return out
	}
	panic(fmt.Sprintf("not a host slice: %T", h))
}

// ewTol is how close a GPU result must be to the CPU's.
type ewTol struct {
	ulps      int64   // float ulps apart
	rel       float64 // or |g-c| <= rel*scale[i]
	scale     []float64
	zeroEqual bool // -0 == +0
}

// ewFloat decodes element i of a float host slice (dt tells the 16-bit kinds).
func ewFloat(dt tensor.DType, h any, i int) (float64, bool) {
	switch s := h.(type) {
	case []float32:
		return float64(s[i]), true
	case []float64:
		return s[i], true
	case []uint16:
		if dt == tensor.Float16 {
			return float64(tensor.Float16ToFloat32(s[i])), true
		}
		return float64(tensor.BFloat16ToFloat32(s[i])), true
	}
	return 0, false
}

// ewUlps returns how many representable values lie between a and b.
func ewUlps(h any, cb, gb uint64) int64 {
	ord := func(u uint64) int64 {
		if _, ok := h.([]float32); ok {
			v := int64(int32(uint32(u)))
			if v < 0 {
				v = math.MinInt32 - v
			}
			return v
		}
		v := int64(u)
		if v < 0 {
			v = math.MinInt64 - v
		}
		return v
	}
	d := ord(cb) - ord(gb)
	if d < 0 {
		d = -d
	}
	return d
}

// ewCompare checks the GPU result g against the CPU result c.
func ewCompare(t *testing.T, dt tensor.DType, c, g any, tol ewTol, what string) {
	t.Helper()
	cb, gb := ewHostBits(c), ewHostBits(g)
	require.Equal(t, len(cb), len(gb), what)
	bad := 0
	for i := range cb {
		if cb[i] == gb[i] {
			continue
		}
		cv, isFloat := ewFloat(dt, c, i)
		if isFloat {
			gv, _ := ewFloat(dt, g, i)
			switch {
			case math.IsNaN(cv) && math.IsNaN(gv):
				continue
			case tol.zeroEqual && cv == 0 && gv == 0:
				continue
			case !math.IsNaN(cv) && !math.IsNaN(gv) && tol.ulps > 0 && ewUlps(c, cb[i], gb[i]) <= tol.ulps:
				continue
			case tol.rel > 0 && math.Abs(gv-cv) <= tol.rel*tol.scale[i]:
				continue
			}
			assert.Failf(t, "mismatch", "%s: element %d: cpu %v, gpu %v", what, i, cv, gv)
		} else {
			assert.Failf(t, "mismatch", "%s: element %d: cpu bits %#x, gpu bits %#x", what, i, cb[i], gb[i])
		}
		if bad++; bad >= 5 {
			return
		}
	}
}

// ewRun runs op on both backends with the same host inputs and returns the
// host copies of the first n elements of its output buffer. init, if not
// nil, is the initial content of the output (else it is zero-filled).
func ewRun(gpu, cpu tensor.Backend, ins []any, inDT []tensor.DType, outDT tensor.DType, outN int, init any,
	op func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer)) (c, g any) {
	res := make([]any, 2)
	for k, be := range []tensor.Backend{cpu, gpu} {
		bufs := make([]tensor.Buffer, len(ins))
		for i, h := range ins {
			bufs[i] = be.FromHost(inDT[i], h)
		}
		var out tensor.Buffer
		if init != nil {
			out = be.FromHost(outDT, init)
		} else {
			out = be.Alloc(outDT, outN)
		}
		op(be, out, bufs)
		res[k] = be.ToHost(out, ewFlat(outN))
	}
	return res[0], res[1]
}

func TestCUDACopy(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range ewShapes[1:4] {
		p, q, r := sh[0], sh[1], sh[2]
		n := p * q * r
		for _, v := range ewViews(p, q, r) {
			for _, sdt := range ewAllDTypes {
				src := ewHost(rng, sdt, v.need, true)
				for _, ddt := range ewAllDTypes {
					// Go converts NaN, ±Inf and out-of-range floats to
					// integers in an implementation-defined way; the GPU
					// follows amd64 (MinInt), so other hosts skip those pairs.
					if runtime.GOARCH != "amd64" && ewIsFloat(sdt) && (ddt == tensor.Int64 || ddt == tensor.Int32) {
						continue
					}
					what := fmt.Sprintf("Copy %v→%v %v %s", sdt, ddt, sh, v.name)
					c, g := ewRun(gpu, cpu, []any{src}, []tensor.DType{sdt}, ddt, n, nil,
						func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) { be.Copy(out, in[0], v.l) })
					ewCompare(t, ddt, c, g, ewTol{}, what)
				}
			}
		}
	}
}

func TestCUDAAssign(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range ewShapes {
		p, q, r := sh[0], sh[1], sh[2]
		views := ewViews(p, q, r)
		for _, dv := range views[:3] { // destinations without stride 0
			for _, sv := range views {
				for _, dt := range ewAllDTypes {
					what := fmt.Sprintf("Assign %v %v %s←%s", dt, sh, dv.name, sv.name)
					src := ewHost(rng, dt, sv.need, true)
					init := ewHost(rng, dt, dv.need, true)
					c, g := ewRun(gpu, cpu, []any{src}, []tensor.DType{dt}, dt, dv.need, init,
						func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) { be.Assign(out, dv.l, in[0], sv.l) })
					ewCompare(t, dt, c, g, ewTol{}, what)
				}
			}
		}
	}
}

func TestCUDAFill(t *testing.T) {
	gpu, cpu := ewGPU(t)
	for _, dt := range ewAllDTypes {
		for _, v := range []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 65520, 1e-8, 3e9, math.NaN(), math.Inf(-1)} {
			for _, n := range []int{1, 67, 4099} {
				c, g := ewRun(gpu, cpu, nil, nil, dt, n, nil,
					func(be tensor.Backend, out tensor.Buffer, _ []tensor.Buffer) { be.Fill(out, v) })
				ewCompare(t, dt, c, g, ewTol{}, fmt.Sprintf("Fill %v %v n=%d", dt, v, n))
			}
		}
	}
}

// ewUnaryCase is a unary op with its float32 and float64 ulp tolerances.
type ewUnaryCase struct {
	op       tensor.UnaryOp
	ulp32    int64
	ulp64    int64
	integers bool // defined for Int64 and Int32 too
}

func ewUnaryCases() []ewUnaryCase {
	u := func(k tensor.UnaryKind) tensor.UnaryOp { return tensor.UnaryOp{Kind: k} }
	cases := []ewUnaryCase{
		{u(tensor.OpNeg), 0, 0, true},
		{u(tensor.OpAbs), 0, 0, true},
		{u(tensor.OpSign), 0, 0, true},
		{u(tensor.OpExp), 4, 4, false},
		{u(tensor.OpLog), 4, 4, false},
		{u(tensor.OpLog1p), 1, 4, false},
		{u(tensor.OpExpm1), 1, 4, false},
		{u(tensor.OpSqrt), 0, 0, false},
		{u(tensor.OpRsqrt), 0, 0, false},
		{u(tensor.OpSin), 1, 4, false},
		{u(tensor.OpCos), 1, 4, false},
		{u(tensor.OpTanh), 5, 4, false},
		{u(tensor.OpSigmoid), 6, 4, false},
		{u(tensor.OpRelu), 0, 0, true},
		{u(tensor.OpFloor), 0, 0, true},
		{u(tensor.OpCeil), 0, 0, true},
		{u(tensor.OpRound), 0, 0, true},
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: -0.75, B: 2.5}, 0, 0, true},
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: math.Inf(-1), B: 3}, 0, 0, true},
		{tensor.UnaryOp{Kind: tensor.OpClamp, A: 0, B: math.Inf(1)}, 0, 0, true},
		{tensor.UnaryOp{Kind: tensor.OpAffine, A: 1.5, B: -0.25}, 0, 0, false},
		{tensor.UnaryOp{Kind: tensor.OpAffine, A: 3, B: -7}, 0, 0, true},
		{u(tensor.OpRecip), 0, 0, false},
		{u(tensor.OpSquare), 0, 0, true},
		{u(tensor.OpErf), 1, 4, false},
	}
	for _, e := range []float64{2, 3, 0.5, -0.5, -1, -2} {
		cases = append(cases, ewUnaryCase{tensor.UnaryOp{Kind: tensor.OpPowScalar, A: e}, 0, 0, e == math.Trunc(e)})
	}
	// General exponents go through pow: Go's math.Pow rounds once per
	// squaring of the integer part of the exponent, so float64 gets 16 ulps.
	for _, e := range []float64{1.7, -2.3, 0, 1, 5, 63} {
		cases = append(cases, ewUnaryCase{tensor.UnaryOp{Kind: tensor.OpPowScalar, A: e}, 1, 16, e == math.Trunc(e)})
	}
	return cases
}

func TestCUDAUnary(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(5, 6))
	cases := ewUnaryCases()
	cases = append(cases, ewUnaryCase{tensor.UnaryOp{Kind: tensor.OpLogicalNot}, 0, 0, false})
	for _, sh := range ewShapes {
		p, q, r := sh[0], sh[1], sh[2]
		n := p * q * r
		for _, v := range ewViews(p, q, r)[:4] {
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool} {
				src := ewHost(rng, dt, v.need, true)
				for _, tc := range cases {
					isFloat := dt == tensor.Float32 || dt == tensor.Float64
					switch {
					case dt == tensor.Bool && tc.op.Kind != tensor.OpLogicalNot,
						dt != tensor.Bool && tc.op.Kind == tensor.OpLogicalNot,
						!isFloat && dt != tensor.Bool && !tc.integers:
						continue
					}
					tol := ewTol{ulps: tc.ulp64}
					if dt == tensor.Float32 {
						tol.ulps = tc.ulp32
					}
					what := fmt.Sprintf("Unary %+v %v %v %s", tc.op, dt, sh, v.name)
					c, g := ewRun(gpu, cpu, []any{src}, []tensor.DType{dt}, dt, n, nil,
						func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) { be.Unary(tc.op, out, in[0], v.l) })
					ewCompare(t, dt, c, g, tol, what)
				}
			}
		}
	}
}

func TestCUDABinary(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(7, 8))
	pairs := [][2]int{{0, 0}, {0, 3}, {1, 5}, {2, 4}, {3, 1}, {4, 2}}
	for _, sh := range ewShapes {
		p, q, r := sh[0], sh[1], sh[2]
		n := p * q * r
		views := ewViews(p, q, r)
		for _, pr := range pairs {
			va, vb := views[pr[0]], views[pr[1]]
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool} {
				a, b := ewHost(rng, dt, va.need, true), ewHost(rng, dt, vb.need, true)
				if dt == tensor.Int64 || dt == tensor.Int32 {
					// Small nonzero divisors and exponents: the CPU panics
					// on division by zero, and big powers all wrap alike.
					ewSmall(b)
				}
				for op := tensor.OpAdd; op <= tensor.OpLogicalXor; op++ {
					outDT := dt
					if op >= tensor.OpEq {
						outDT = tensor.Bool
					}
					if dt == tensor.Bool && (op == tensor.OpSub || op == tensor.OpDiv || op == tensor.OpPow) {
						continue
					}
					var tol ewTol
					if op == tensor.OpPow {
						tol.ulps = 32 // Go's math.Pow: one rounding per squaring
						if dt == tensor.Float32 {
							tol.ulps = 1
						}
					}
					what := fmt.Sprintf("Binary %d %v %v %s∘%s", op, dt, sh, va.name, vb.name)
					c, g := ewRun(gpu, cpu, []any{a, b}, []tensor.DType{dt, dt}, outDT, n, nil,
						func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) {
							be.Binary(op, out, in[0], va.l, in[1], vb.l)
						})
					ewCompare(t, outDT, c, g, tol, what)
				}
			}
		}
	}
}

// ewSmall maps integers into [-9, 9] without zeros (exponents and divisors).
func ewSmall(h any) {
	switch s := h.(type) {
	case []int64:
		for i := range s {
			if s[i] = s[i] % 10; s[i] == 0 {
				s[i] = 2
			}
		}
	case []int32:
		for i := range s {
			if s[i] = s[i] % 10; s[i] == 0 {
				s[i] = -3
			}
		}
	}
}

func TestCUDAWhere(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(9, 10))
	triples := [][3]int{{0, 0, 0}, {3, 1, 5}, {4, 2, 0}, {1, 3, 4}}
	for _, sh := range ewShapes {
		p, q, r := sh[0], sh[1], sh[2]
		n := p * q * r
		views := ewViews(p, q, r)
		for _, tr := range triples {
			vc, va, vb := views[tr[0]], views[tr[1]], views[tr[2]]
			cond := ewHost(rng, tensor.Bool, vc.need, false)
			for _, dt := range ewAllDTypes {
				a, b := ewHost(rng, dt, va.need, true), ewHost(rng, dt, vb.need, true)
				what := fmt.Sprintf("Where %v %v %s ? %s : %s", dt, sh, vc.name, va.name, vb.name)
				c, g := ewRun(gpu, cpu, []any{cond, a, b}, []tensor.DType{tensor.Bool, dt, dt}, dt, n, nil,
					func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) {
						be.Where(out, in[0], vc.l, in[1], va.l, in[2], vb.l)
					})
				ewCompare(t, dt, c, g, ewTol{}, what)
			}
		}
	}
}

// ewReduceData returns [outer, n] inputs: for sums and extrema random
// values with sparse specials (no values near overflow), for products
// values near 1 so long rows stay finite.
func ewReduceData(rng *rand.Rand, dt tensor.DType, op tensor.ReduceOp, size int) any {
	h := ewHost(rng, dt, size, false)
	sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e20}
	set := func(i int, f func(v float64)) {
		switch {
		case op == tensor.ReduceProd:
			f(0.5 + rng.Float64())
		case rng.IntN(40) == 0:
			f(sp[rng.IntN(len(sp))])
		}
	}
	switch s := h.(type) {
	case []float32:
		for i := range s {
			set(i, func(v float64) { s[i] = float32(v) })
		}
	case []float64:
		for i := range s {
			set(i, func(v float64) { s[i] = v })
		}
	}
	return h
}

// ewTiny is the absolute tolerance floor of float products: 64 times the
// smallest normal of dt.
func ewTiny(dt tensor.DType) float64 {
	if dt == tensor.Float32 {
		return 0x1p-120
	}
	return 0x1p-1016
}

// ewRowScale returns per-row tolerance scales for float sums and products.
func ewRowScale(dt tensor.DType, op tensor.ReduceOp, h, c any, outer, n int) ewTol {
	var eps float64
	switch dt {
	case tensor.Float32:
		eps = 0x1p-23
	case tensor.Float64:
		eps = 0x1p-52
	default:
		return ewTol{}
	}
	scale := make([]float64, outer)
	for r := range outer {
		switch op {
		case tensor.ReduceSum:
			for k := range n {
				v, _ := ewFloat(dt, h, r*n+k)
				scale[r] += math.Abs(v)
			}
			scale[r] *= 8 * eps
		case tensor.ReduceProd:
			v, _ := ewFloat(dt, c, r)
			scale[r] = 4*float64(n)*eps*math.Abs(v) + ewTiny(dt)
		}
	}
	tol := ewTol{rel: 1, scale: scale, zeroEqual: true}
	if op == tensor.ReduceMax || op == tensor.ReduceMin {
		tol.rel = 0
	}
	return tol
}

func TestCUDAReduce(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(11, 12))
	shapes := [][2]int{{1, 1}, {3, 7}, {67, 67}, {5, 600}, {2, 5000}, {1, 100003}, {3, 70000}, {300, 3}, {4, 0}, {0, 5}}
	for _, sh := range shapes {
		outer, n := sh[0], sh[1]
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32} {
			for op := tensor.ReduceSum; op <= tensor.ReduceMin; op++ {
				src := ewReduceData(rng, dt, op, outer*n)
				init := ewHost(rng, dt, outer, false) // Max/Min leave empty rows alone
				c, g := ewRun(gpu, cpu, []any{src}, []tensor.DType{dt}, dt, outer, init,
					func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) { be.Reduce(op, out, in[0], outer, n) })
				ewCompare(t, dt, c, g, ewRowScale(dt, op, src, c, outer, n), fmt.Sprintf("Reduce %d %v [%d, %d]", op, dt, outer, n))
			}
		}
	}
}

// ewTies returns values from a small set (ties, ±0), with sparse NaNs if
// nans is set.
func ewTies(rng *rand.Rand, dt tensor.DType, size int, nans bool) any {
	vals := []float64{-2, -1, math.Copysign(0, -1), 0, 1, 2}
	pick := func() float64 {
		if nans && rng.IntN(30) == 0 {
			return math.NaN()
		}
		return vals[rng.IntN(len(vals))]
	}
	switch dt {
	case tensor.Float32:
		out := make([]float32, size)
		for i := range out {
			out[i] = float32(pick())
		}
		return out
	case tensor.Float64:
		out := make([]float64, size)
		for i := range out {
			out[i] = pick()
		}
		return out
	case tensor.Int64:
		out := make([]int64, size)
		for i := range out {
			out[i] = int64(rng.IntN(5) - 2)
		}
		return out
	default:
		out := make([]int32, size)
		for i := range out {
			out[i] = int32(rng.IntN(5) - 2)
		}
		return out
	}
}

var ewScanShapes = [][3]int{{1, 1, 1}, {3, 67, 1}, {2, 100, 1}, {5, 7, 3}, {4, 1, 9}, {2, 3000, 1}, {3, 9, 67}, {1, 5, 1}, {1, 2048, 1}, {1, 70001, 1}, {2, 100003, 1}}

// ewScanTol is the tolerance of float scans along long rows (inner == 1),
// which the GPU groups differently: sums within 8 eps of the running sum of
// magnitudes, products within 4·k·eps relative at position k.
func ewScanTol(dt tensor.DType, prod bool, src, c any, n int) ewTol {
	var eps float64
	switch dt {
	case tensor.Float32:
		eps = 0x1p-23
	case tensor.Float64:
		eps = 0x1p-52
	default:
		return ewTol{}
	}
	size := len(ewHostBits(src))
	scale := make([]float64, size)
	run := 0.0
	for i := range size {
		k := i % n
		if k == 0 {
			run = 0
		}
		v, _ := ewFloat(dt, src, i)
		run += math.Abs(v)
		if prod {
			cv, _ := ewFloat(dt, c, i)
			scale[i] = 4*float64(k+1)*eps*math.Abs(cv) + ewTiny(dt)
		} else {
			scale[i] = 8 * eps * run
		}
	}
	return ewTol{rel: 1, scale: scale}
}

func TestCUDAArgReduce(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range ewScanShapes {
		outer, n, inner := sh[0], sh[1], sh[2]
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32} {
			size := outer * n * inner
			for _, data := range []any{ewTies(rng, dt, size, true), ewTies(rng, dt, size, false), ewHost(rng, dt, size, true)} {
				for _, isMax := range []bool{true, false} {
					c, g := ewRun(gpu, cpu, []any{data}, []tensor.DType{dt}, tensor.Int64, outer*inner, nil,
						func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) {
							be.ArgReduce(isMax, out, in[0], outer, n, inner)
						})
					ewCompare(t, tensor.Int64, c, g, ewTol{}, fmt.Sprintf("ArgReduce max=%v %v %v", isMax, dt, sh))
				}
			}
		}
	}
}

func TestCUDAScan(t *testing.T) {
	gpu, cpu := ewGPU(t)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, sh := range ewScanShapes {
		outer, n, inner := sh[0], sh[1], sh[2]
		size := outer * n * inner
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32} {
			for _, prod := range []bool{false, true} {
				op := tensor.ReduceSum
				if prod {
					op = tensor.ReduceProd
				}
				src := ewReduceData(rng, dt, op, size)
				c, g := ewRun(gpu, cpu, []any{src}, []tensor.DType{dt}, dt, size, nil,
					func(be tensor.Backend, out tensor.Buffer, in []tensor.Buffer) {
						be.Scan(prod, out, in[0], outer, n, inner)
					})
				var tol ewTol
				if inner == 1 && n >= ewScanRowAt {
					tol = ewScanTol(dt, prod, src, c, n)
				}
				ewCompare(t, dt, c, g, tol, fmt.Sprintf("Scan prod=%v %v %v", prod, dt, sh))
			}
		}
	}
}

// ---- benchmarks (GPU only): bytes moved per op, for bandwidth figures ----

// ewBench runs op b.N times on device 0 with SetBytes(bytes) and waits for
// the device before stopping the timer.
func ewBench(b *testing.B, bytes int64, setup func(be tensor.Backend) func()) {
	be, err := tensor.BackendFor(tensor.CUDA(0))
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	op := setup(be)
	op() // load the module outside the timing
	require.NoError(b, Synchronize(0))
	b.SetBytes(bytes)
	b.ResetTimer()
	for range b.N {
		op()
	}
	require.NoError(b, Synchronize(0))
}

const ewBenchN = 1 << 24

func BenchmarkCUDABinaryAddF32(b *testing.B) {
	ewBench(b, 12*ewBenchN, func(be tensor.Backend) func() {
		x, y, z := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, ewBenchN)
		l := ewFlat(ewBenchN)
		return func() { be.Binary(tensor.OpAdd, z, x, l, y, l) }
	})
}

func BenchmarkCUDABinaryBroadcastRowF32(b *testing.B) {
	ewBench(b, 8*ewBenchN, func(be tensor.Backend) func() {
		x, y, z := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, 4096), be.Alloc(tensor.Float32, ewBenchN)
		la := tensor.Layout{Shape: []int{ewBenchN / 4096, 4096}, Strides: []int{4096, 1}}
		lb := tensor.Layout{Shape: []int{ewBenchN / 4096, 4096}, Strides: []int{0, 1}}
		return func() { be.Binary(tensor.OpMul, z, x, la, y, lb) }
	})
}

func BenchmarkCUDAUnaryExpF32(b *testing.B) {
	ewBench(b, 8*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, ewBenchN)
		return func() { be.Unary(tensor.UnaryOp{Kind: tensor.OpExp}, y, x, ewFlat(ewBenchN)) }
	})
}

func BenchmarkCUDACopyTransposeF32(b *testing.B) {
	ewBench(b, 8*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, ewBenchN)
		l := tensor.Layout{Shape: []int{4096, ewBenchN / 4096}, Strides: []int{1, 4096}}
		return func() { be.Copy(y, x, l) }
	})
}

func BenchmarkCUDACopyF32ToF16(b *testing.B) {
	ewBench(b, 6*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float16, ewBenchN)
		return func() { be.Copy(y, x, ewFlat(ewBenchN)) }
	})
}

func BenchmarkCUDAReduceSumAllF32(b *testing.B) {
	ewBench(b, 4*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, 1)
		return func() { be.Reduce(tensor.ReduceSum, y, x, 1, ewBenchN) }
	})
}

func BenchmarkCUDAReduceSumRowsF32(b *testing.B) {
	ewBench(b, 4*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, 4096)
		return func() { be.Reduce(tensor.ReduceSum, y, x, 4096, ewBenchN/4096) }
	})
}

func BenchmarkCUDAArgMaxRowsF32(b *testing.B) {
	ewBench(b, 4*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Int64, 4096)
		return func() { be.ArgReduce(true, y, x, 4096, ewBenchN/4096, 1) }
	})
}

func BenchmarkCUDAScanRowsF32(b *testing.B) {
	ewBench(b, 8*ewBenchN, func(be tensor.Backend) func() {
		x, y := be.Alloc(tensor.Float32, ewBenchN), be.Alloc(tensor.Float32, ewBenchN)
		return func() { be.Scan(false, y, x, 64, ewBenchN/64, 1) }
	})
}
