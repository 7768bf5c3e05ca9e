package cudnn

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resnetConv is a 3x3 stride-1 convolution of ResNet-50's second stage.
var resnetConv = Conv{N: 64, C: 64, H: 56, W: 56, O: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 56, OW: 56, Groups: 1}

// TestEnumValues pins the values passed to cuDNN to those of NVIDIA's
// headers (cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h of 9.x, identical in
// the cudnn_ops_infer.h / cudnn_cnn_infer.h of 8.x).
func TestEnumValues(t *testing.T) {
	cases := []struct {
		name      string
		got, want int64
	}{
		{"CUDNN_DATA_FLOAT", int64(DataFloat), 0},
		{"CUDNN_DATA_DOUBLE", int64(DataDouble), 1},
		{"CUDNN_DEFAULT_MATH", int64(DefaultMath), 0},
		{"CUDNN_TENSOR_OP_MATH", int64(TensorOpMath), 1},
		{"CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION", int64(TensorOpMathAllowConversion), 2},
		{"CUDNN_FMA_MATH", int64(FMAMath), 3},
		{"CUDNN_TENSOR_NCHW", int64(tensorNCHW), 0},
		{"CUDNN_CROSS_CORRELATION", int64(crossCorrelation), 1},
		{"CUDNN_STATUS_SUCCESS", int64(statusSuccess), 0},
		{"CUDNN_CONVOLUTION_FWD_ALGO_COUNT", fwdAlgoCount, 8},
		{"CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT", bwdDataAlgoCount, 6},
		{"CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT", bwdFilterAlgoCount, 7},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.got, c.name)
	}
	assert.Equal(t, 4, DataFloat.Size())
	assert.Equal(t, 8, DataDouble.Size())
	assert.Equal(t, "double", DataDouble.String())
	assert.Equal(t, "backward-filter", BackwardFilter.String())
}

// TestPerfLayout checks Perf against the C layout of
// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: algo, status, time
// (4 bytes each), size_t memory at 16, determinism, mathType, int
// reserved[3], 48 bytes in all.
func TestPerfLayout(t *testing.T) {
	var p Perf
	assert.Equal(t, uintptr(0), unsafe.Offsetof(p.Algo))
	assert.Equal(t, uintptr(4), unsafe.Offsetof(p.Status))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(p.Time))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(p.Memory))
	assert.Equal(t, uintptr(24), unsafe.Offsetof(p.Determinism))
	assert.Equal(t, uintptr(28), unsafe.Offsetof(p.MathType))
	assert.Equal(t, uintptr(32), unsafe.Offsetof(p.Reserved))
	assert.Equal(t, uintptr(48), unsafe.Sizeof(p))
}

func TestConvCheck(t *testing.T) {
	ok := resnetConv
	depthwise := Conv{N: 3, C: 8, H: 9, W: 7, O: 8, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, OH: 5, OW: 4, Groups: 8}
	dilated := Conv{N: 1, C: 2, H: 9, W: 11, O: 4, KH: 3, KW: 3, StrideH: 2, StrideW: 3, PadH: 2, PadW: 1, DilationH: 2, DilationW: 1, OH: 5, OW: 4, Groups: 2}
	outPad := ok
	outPad.OH = 57 // a transposed convolution's extra output row
	zero := ok
	zero.N = 0
	groups := ok
	groups.Groups = 3
	negPad := ok
	negPad.PadW = -1
	huge := ok
	huge.N, huge.C = 1<<16, 1<<10
	cases := []struct {
		name string
		c    Conv
		err  string
	}{
		{"resnet", ok, ""},
		{"depthwise", depthwise, ""},
		{"dilated grouped", dilated, ""},
		{"output padding", outPad, "gives a 56x56 output, not 57x56"},
		{"empty batch", zero, "non-positive size"},
		{"groups", groups, "not divisible by 3 groups"},
		{"negative padding", negPad, "negative padding"},
		{"too large", huge, "too large for 32-bit descriptors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.c.Check()
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

func TestConvShapes(t *testing.T) {
	c := Conv{N: 2, C: 6, H: 9, W: 8, O: 4, KH: 3, KW: 2, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, OH: 7, OW: 7, Groups: 2}
	x, w, y := c.Shapes()
	assert.Equal(t, [4]int32{2, 6, 9, 8}, x)
	assert.Equal(t, [4]int32{4, 3, 3, 2}, w)
	assert.Equal(t, [4]int32{2, 4, 7, 7}, y)
	assert.Equal(t, 2*4*7*7, c.ResultLen(Forward))
	assert.Equal(t, 2*6*9*8, c.ResultLen(BackwardData))
	assert.Equal(t, 4*3*3*2, c.ResultLen(BackwardFilter))
}

func TestVersionParts(t *testing.T) {
	cases := []struct{ v, major, minor, patch int }{
		{90100, 9, 1, 0},
		{91002, 9, 10, 2},
		{8902, 8, 9, 2},
		{8600, 8, 6, 0},
	}
	for _, c := range cases {
		major, minor, patch := VersionParts(c.v)
		assert.Equal(t, [3]int{c.major, c.minor, c.patch}, [3]int{major, minor, patch}, "%d", c.v)
	}
}

func TestRejected(t *testing.T) {
	cases := []struct {
		major  int
		status int32
		want   bool
	}{
		{9, 2000, true},  // CUDNN_STATUS_BAD_PARAM
		{9, 2002, true},  // CUDNN_STATUS_BAD_PARAM_NULL_POINTER
		{9, 3000, true},  // CUDNN_STATUS_NOT_SUPPORTED
		{9, 3007, true},  // a NOT_SUPPORTED sub-code
		{9, 4000, false}, // CUDNN_STATUS_INTERNAL_ERROR
		{9, 5000, false}, // CUDNN_STATUS_EXECUTION_FAILED
		{9, 1001, false}, // CUDNN_STATUS_NOT_INITIALIZED
		{8, 3, true},     // CUDNN_STATUS_BAD_PARAM
		{8, 9, true},     // CUDNN_STATUS_NOT_SUPPORTED
		{8, 8, false},    // CUDNN_STATUS_EXECUTION_FAILED
		{8, 2, false},    // CUDNN_STATUS_ALLOC_FAILED
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Rejected(c.major, c.status), "major %d status %d", c.major, c.status)
	}
}

func TestCompanions(t *testing.T) {
	c9 := Companions("libcudnn.so.9")
	require.NotEmpty(t, c9)
	assert.Equal(t, "libcudnn_graph.so.9", c9[0], "the graph library, which the others link against, comes first")
	assert.Contains(t, c9, "libcudnn_cnn.so.9")
	assert.Contains(t, c9, "libcudnn_ops.so.9")
	assert.Less(t, indexOf(c9, "libcudnn_ops.so.9"), indexOf(c9, "libcudnn_cnn.so.9"))
	c8 := Companions("libcudnn.so.8")
	assert.Equal(t, []string{"libcudnn_ops_infer.so.8", "libcudnn_ops_train.so.8", "libcudnn_cnn_infer.so.8", "libcudnn_cnn_train.so.8"}, c8)
	assert.Nil(t, Companions("libcudnn.so.7"))
	assert.Equal(t, []string{"libcudnn.so.9", "libcudnn.so.8"}, Sonames)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Call: "cudnnCreate", Status: 1008, Message: "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
		Hint: sublibraryHint("CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "/opt/venv/nvidia/cudnn/lib")}
	assert.Equal(t, "cudnn: cudnnCreate: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED (status 1008); cuDNN could not open its sub-libraries (libcudnn_ops, libcudnn_cnn, libcudnn_engines_*); add /opt/venv/nvidia/cudnn/lib to LD_LIBRARY_PATH", e.Error())
	assert.Empty(t, sublibraryHint("CUDNN_STATUS_BAD_PARAM", "/x"))
	assert.Contains(t, sublibraryHint("sub-library loading failed", ""), "the folder of libcudnn")
}

// fakeQuery records the calls choose makes.
type fakeQuery struct {
	math      []MathType
	workspace map[int32]int
	failAlgo  map[int32]bool
}

func (f *fakeQuery) setMath(m MathType) error { f.math = append(f.math, m); return nil }

func (f *fakeQuery) size(algo int32) (int, error) {
	if f.failAlgo[algo] {
		return 0, errors.New("CUDNN_STATUS_NOT_SUPPORTED")
	}
	return f.workspace[algo], nil
}

func TestChoose(t *testing.T) {
	const limit = 1000
	perf := func(algo int32, status int32, m MathType) Perf { return Perf{Algo: algo, Status: status, MathType: m} }
	cases := []struct {
		name      string
		perfs     []Perf
		want      MathType
		workspace map[int32]int
		failAlgo  map[int32]bool
		choice    Choice
		lastMath  MathType
		err       bool
	}{
		{
			name:  "first success wins",
			perfs: []Perf{perf(1, 9, DefaultMath), perf(6, 0, TensorOpMath), perf(0, 0, DefaultMath)},
			want:  DefaultMath, workspace: map[int32]int{6: 500},
			choice: Choice{Algo: 6, Math: TensorOpMath, Workspace: 500}, lastMath: TensorOpMath,
		},
		{
			name:  "FMA skips tensor-op results",
			perfs: []Perf{perf(1, 0, TensorOpMath), perf(7, 0, TensorOpMathAllowConversion), perf(0, 0, DefaultMath)},
			want:  FMAMath, workspace: map[int32]int{0: 0},
			choice: Choice{Algo: 0, Math: FMAMath}, lastMath: FMAMath,
		},
		{
			name:  "workspace over the limit falls back to the smallest",
			perfs: []Perf{perf(4, 0, DefaultMath), perf(5, 0, DefaultMath), perf(2, 0, DefaultMath)},
			want:  DefaultMath, workspace: map[int32]int{4: 5000, 5: 3000, 2: 4000},
			choice: Choice{Algo: 5, Math: DefaultMath, Workspace: 3000}, lastMath: DefaultMath,
		},
		{
			name:  "a failed workspace query skips the algorithm",
			perfs: []Perf{perf(1, 0, DefaultMath), perf(0, 0, DefaultMath)},
			want:  DefaultMath, workspace: map[int32]int{0: 8}, failAlgo: map[int32]bool{1: true},
			choice: Choice{Algo: 0, Math: DefaultMath, Workspace: 8}, lastMath: DefaultMath,
		},
		{
			name:  "nothing usable",
			perfs: []Perf{perf(1, 3000, DefaultMath), perf(2, 0, TensorOpMath)},
			want:  FMAMath, err: true,
		},
		{name: "no results", want: DefaultMath, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeQuery{workspace: c.workspace, failAlgo: c.failAlgo}
			got, err := choose(c.perfs, c.want, limit, f.setMath, f.size)
			if c.err {
				require.ErrorIs(t, err, ErrNoAlgorithm)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.choice, got)
			require.NotEmpty(t, f.math)
			assert.Equal(t, c.lastMath, f.math[len(f.math)-1], "the descriptor is left on the chosen math type")
		})
	}
}

func TestCache(t *testing.T) {
	var destroyed []int
	c := NewCache(3, func(p int) { destroyed = append(destroyed, p) })
	key := func(n int, d Direction) Key {
		conv := resnetConv
		conv.N = n
		return Key{Conv: conv, Type: DataFloat, Math: FMAMath, Dir: d}
	}
	_, _, ok := c.Get(key(1, Forward))
	assert.False(t, ok)
	c.Put(key(1, Forward), 10)
	p, err, ok := c.Get(key(1, Forward))
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, 10, p)

	// Direction, dtype and math type are part of the key.
	for _, k := range []Key{key(1, BackwardData), {Conv: key(1, Forward).Conv, Type: DataDouble, Math: FMAMath}, {Conv: key(1, Forward).Conv, Type: DataFloat, Math: DefaultMath}} {
		_, _, ok := c.Get(k)
		assert.False(t, ok, "%+v", k)
	}

	// A failure is remembered, replacing (and destroying) a plan.
	bad := errors.New("CUDNN_STATUS_NOT_SUPPORTED")
	c.Put(key(2, Forward), 20)
	c.Fail(key(2, Forward), bad)
	assert.Equal(t, []int{20}, destroyed)
	_, err, ok = c.Get(key(2, Forward))
	assert.True(t, ok)
	assert.Same(t, bad, err)
	assert.Equal(t, 2, c.Len())

	// At capacity the next insertion drops everything.
	c.Put(key(3, Forward), 30)
	assert.Equal(t, 3, c.Len())
	c.Put(key(4, Forward), 40)
	assert.Equal(t, 1, c.Len())
	assert.ElementsMatch(t, []int{20, 10, 30}, destroyed)
	_, _, ok = c.Get(key(2, Forward))
	assert.False(t, ok, "failures are forgotten too")
	p, _, ok = c.Get(key(4, Forward))
	assert.True(t, ok)
	assert.Equal(t, 40, p)
}
