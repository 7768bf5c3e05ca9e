// Package cudnn binds the legacy convolution API of NVIDIA cuDNN (8.x and
// 9.x) at run time with purego, without cgo: 4-d NCHW tensor and filter
// descriptors, 2-d cross-correlation descriptors with groups, the _v7
// algorithm heuristics and the forward, backward-data and backward-filter
// convolutions. The bindings are compiled with the build tag cuda; the
// enum values, the geometry checks, the status classes and the plan cache
// are plain Go, built and tested everywhere.
//
// cuDNN 9 ships as a small front library, libcudnn.so.9, that opens its
// sub-libraries (libcudnn_graph, libcudnn_ops, libcudnn_cnn, the engine
// libraries) by soname when they are first needed. Load opens those from
// the front library's folder first, with RTLD_GLOBAL, so the front
// library's own opens find them already loaded even when the folder (for
// example the nvidia/cudnn/lib folder of NVIDIA's pip wheel) is not on the
// loader's search path. cuDNN 8 is handled the same way with its
// libcudnn_ops_infer/_train and libcudnn_cnn_infer/_train.
package cudnn

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// DataType is cudnnDataType_t.
type DataType int32

// The data types used (cudnn_graph.h in 9.x, cudnn_ops_infer.h in 8.x).
const (
	DataFloat  DataType = 0 // CUDNN_DATA_FLOAT
	DataDouble DataType = 1 // CUDNN_DATA_DOUBLE
)

// Size returns the bytes of one element.
func (d DataType) Size() int {
	if d == DataDouble {
		return 8
	}
	return 4
}

func (d DataType) String() string {
	switch d {
	case DataFloat:
		return "float"
	case DataDouble:
		return "double"
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}

// MathType is cudnnMathType_t.
type MathType int32

// The math types.
const (
	DefaultMath  MathType = 0 // CUDNN_DEFAULT_MATH (TF32 allowed for float on Ampere and later)
	TensorOpMath MathType = 1 // CUDNN_TENSOR_OP_MATH
	// TensorOpMathAllowConversion is CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION.
	TensorOpMathAllowConversion MathType = 2
	FMAMath                     MathType = 3 // CUDNN_FMA_MATH: no tensor cores, float stays float
)

// The remaining enum values passed to cuDNN.
const (
	tensorNCHW       int32 = 0 // CUDNN_TENSOR_NCHW (cudnnTensorFormat_t)
	crossCorrelation int32 = 1 // CUDNN_CROSS_CORRELATION (cudnnConvolutionMode_t)
	statusSuccess    int32 = 0 // CUDNN_STATUS_SUCCESS
)

// The algorithm counts (CUDNN_CONVOLUTION_*_ALGO_COUNT): the most results
// an algorithm query can return, used as the requested count.
const (
	fwdAlgoCount       = 8
	bwdDataAlgoCount   = 6
	bwdFilterAlgoCount = 7
)

// Direction is the convolution a plan computes.
type Direction int8

// The directions.
const (
	Forward        Direction = iota // y = conv(x, w)
	BackwardData                    // dx from dy and w
	BackwardFilter                  // dw from x and dy
)

func (d Direction) String() string {
	switch d {
	case Forward:
		return "forward"
	case BackwardData:
		return "backward-data"
	case BackwardFilter:
		return "backward-filter"
	}
	return fmt.Sprintf("Direction(%d)", int8(d))
}

// Conv is the geometry of a grouped 2-d cross-correlation of an NCHW input
// [N, C, H, W] with a filter [O, C/Groups, KH, KW] into [N, O, OH, OW].
type Conv struct {
	N, C, H, W           int
	O, KH, KW            int
	StrideH, StrideW     int
	PadH, PadW           int
	DilationH, DilationW int
	OH, OW               int
	Groups               int
}

// outSize is cuDNN's (and PyTorch's) output length of a convolution axis.
func outSize(in, k, s, p, d int) int { return (in+2*p-d*(k-1)-1)/s + 1 }

// Check reports why cuDNN cannot run c: a non-positive size, channels not
// divisible by the groups, an output size that is not the one cuDNN
// derives from the input (a transposed convolution with extra output
// padding), or a tensor too large for 32-bit descriptor sizes.
func (c Conv) Check() error {
	for _, v := range []int{c.N, c.C, c.H, c.W, c.O, c.KH, c.KW, c.StrideH, c.StrideW, c.DilationH, c.DilationW, c.OH, c.OW, c.Groups} {
		if v <= 0 {
			return fmt.Errorf("cudnn: convolution %+v has a non-positive size", c)
		}
	}
	if c.PadH < 0 || c.PadW < 0 {
		return fmt.Errorf("cudnn: convolution %+v has negative padding", c)
	}
	if c.C%c.Groups != 0 || c.O%c.Groups != 0 {
		return fmt.Errorf("cudnn: %d input and %d output channels are not divisible by %d groups", c.C, c.O, c.Groups)
	}
	if oh, ow := outSize(c.H, c.KH, c.StrideH, c.PadH, c.DilationH), outSize(c.W, c.KW, c.StrideW, c.PadW, c.DilationW); oh != c.OH || ow != c.OW {
		return fmt.Errorf("cudnn: a %dx%d input gives a %dx%d output, not %dx%d", c.H, c.W, oh, ow, c.OH, c.OW)
	}
	for _, n := range []int{c.N * c.C * c.H * c.W, c.N * c.O * c.OH * c.OW, c.O * (c.C / c.Groups) * c.KH * c.KW} {
		if n > math.MaxInt32 {
			return fmt.Errorf("cudnn: a tensor of %d elements is too large for 32-bit descriptors", n)
		}
	}
	return nil
}

// Shapes returns the dimensions of the input, the filter and the output.
func (c Conv) Shapes() (x, w, y [4]int32) {
	x = [4]int32{int32(c.N), int32(c.C), int32(c.H), int32(c.W)}
	w = [4]int32{int32(c.O), int32(c.C / c.Groups), int32(c.KH), int32(c.KW)}
	y = [4]int32{int32(c.N), int32(c.O), int32(c.OH), int32(c.OW)}
	return x, w, y
}

// ResultLen returns the elements a direction writes: the output for
// Forward, the input gradient for BackwardData, the filter gradient for
// BackwardFilter.
func (c Conv) ResultLen(d Direction) int {
	switch d {
	case BackwardData:
		return c.N * c.C * c.H * c.W
	case BackwardFilter:
		return c.O * (c.C / c.Groups) * c.KH * c.KW
	}
	return c.N * c.O * c.OH * c.OW
}

// Key identifies a plan: everything its descriptors and algorithm depend
// on. It is comparable, for use as a map key.
type Key struct {
	Conv Conv
	Type DataType
	Math MathType
	Dir  Direction
}

// The status classes of cuDNN 9 (cudnnStatus_t is grouped by thousands).
const (
	v9BadParamLo, v9BadParamHi         = 2000, 2999
	v9NotSupportedLo, v9NotSupportedHi = 3000, 3999
	v8BadParam, v8NotSupported         = 3, 9
)

// Rejected reports whether status, returned by a library of major version
// major, says the request itself was refused (a bad or unsupported
// parameter) rather than that running it failed: nothing was queued, and
// another implementation may take over.
func Rejected(major int, status int32) bool {
	if major >= 9 {
		return (status >= v9BadParamLo && status <= v9BadParamHi) || (status >= v9NotSupportedLo && status <= v9NotSupportedHi)
	}
	return status == v8BadParam || status == v8NotSupported
}

// VersionParts splits cudnnGetVersion's number: major*10000+minor*100+patch
// from 9.0 on, major*1000+minor*100+patch before.
func VersionParts(v int) (major, minor, patch int) {
	if v >= 90000 {
		return v / 10000, v / 100 % 100, v % 100
	}
	return v / 1000, v / 100 % 10, v % 100
}

// Error is a failed cuDNN call.
type Error struct {
	Call    string
	Status  int32
	Message string // cudnnGetErrorString's text
	// Hint, when set, says how to fix the environment.
	Hint string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cudnn: %s: %s (status %d)", e.Call, e.Message, e.Status)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// ErrNoAlgorithm is wrapped by the error of a plan for which cuDNN offers
// no algorithm that can run.
var ErrNoAlgorithm = errors.New("cudnn: no usable algorithm")

// sublibraryHint returns the advice for a status message that says cuDNN
// could not open one of its own sub-libraries, or "" for other messages.
func sublibraryHint(msg, dir string) string {
	m := strings.ToUpper(msg)
	if !strings.Contains(m, "SUBLIBRARY") && !strings.Contains(m, "LOADING") {
		return ""
	}
	where := "the folder of libcudnn"
	if dir != "" {
		where = dir
	}
	return fmt.Sprintf("cuDNN could not open its sub-libraries (libcudnn_ops, libcudnn_cnn, libcudnn_engines_*); add %s to LD_LIBRARY_PATH", where)
}

// Companions lists the sub-libraries of a cuDNN front library, in the
// order they are opened before it (each after the ones it links against).
func Companions(soname string) []string {
	switch soname {
	case "libcudnn.so.9":
		return []string{
			"libcudnn_graph.so.9",
			"libcudnn_engines_precompiled.so.9",
			"libcudnn_engines_runtime_compiled.so.9",
			"libcudnn_heuristic.so.9",
			"libcudnn_ops.so.9",
			"libcudnn_cnn.so.9",
		}
	case "libcudnn.so.8":
		return []string{
			"libcudnn_ops_infer.so.8",
			"libcudnn_ops_train.so.8",
			"libcudnn_cnn_infer.so.8",
			"libcudnn_cnn_train.so.8",
		}
	}
	return nil
}

// Sonames are the front libraries searched, newest first.
var Sonames = []string{"libcudnn.so.9", "libcudnn.so.8"}

// Perf is one result of an algorithm query: cudnnConvolutionFwdAlgoPerf_t,
// cudnnConvolutionBwdDataAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t
// share this layout (the algorithm enum first).
type Perf struct {
	Algo        int32
	Status      int32
	Time        float32
	_           int32 // padding before the size_t
	Memory      uint64
	Determinism int32
	MathType    MathType
	Reserved    [3]int32
	_           int32 // tail padding to the struct's 8-byte alignment
}

// Choice is the algorithm a plan runs and the settings it needs.
type Choice struct {
	Algo      int32
	Math      MathType
	Workspace int
}

// choose picks from the query results, best first, the first that
// succeeded, that keeps float32 exact when FMA math was asked for (no
// tensor-op math) and whose workspace (asked of cuDNN by workspace, after
// the math type is set by setMath) is at most limit bytes; failing that
// the usable one with the smallest workspace.
func choose(perfs []Perf, want MathType, limit int, setMath func(MathType) error, workspace func(algo int32) (int, error)) (Choice, error) {
	var best Choice
	found := false
	var lastErr error
	for _, p := range perfs {
		if p.Status != statusSuccess {
			continue
		}
		m := p.MathType
		if want == FMAMath {
			if m == TensorOpMath || m == TensorOpMathAllowConversion {
				continue
			}
			m = FMAMath
		}
		if err := setMath(m); err != nil {
			lastErr = err
			continue
		}
		ws, err := workspace(p.Algo)
		if err != nil {
			lastErr = err
			continue
		}
		c := Choice{Algo: p.Algo, Math: m, Workspace: ws}
		if ws <= limit {
			return c, nil // the descriptor is on m already
		}
		if !found || ws < best.Workspace {
			best, found = c, true
		}
	}
	if !found {
		if lastErr != nil {
			return Choice{}, fmt.Errorf("%w: %w", ErrNoAlgorithm, lastErr)
		}
		return Choice{}, ErrNoAlgorithm
	}
	if err := setMath(best.Math); err != nil {
		return Choice{}, err
	}
	return best, nil
}

// WorkspaceLimit is the most workspace a plan takes when an algorithm
// within it exists.
const WorkspaceLimit = 1 << 30

// Cache holds plans by key, and the error of each key whose plan could not
// be built (so it is declined at once next time). When it holds max
// entries, the next insertion drops them all, destroying their plans. It
// is not safe for concurrent use; callers hold their own lock.
type Cache[P any] struct {
	max     int
	destroy func(P)
	plans   map[Key]P
	failed  map[Key]error
}

// NewCache returns an empty cache of at most max entries that calls
// destroy on each plan it drops.
func NewCache[P any](max int, destroy func(P)) *Cache[P] {
	return &Cache[P]{max: max, destroy: destroy, plans: map[Key]P{}, failed: map[Key]error{}}
}

// Get returns the plan of k, or the error its build gave; ok is false when
// k has not been seen.
func (c *Cache[P]) Get(k Key) (p P, err error, ok bool) {
	if err, bad := c.failed[k]; bad {
		return p, err, true
	}
	p, ok = c.plans[k]
	return p, nil, ok
}

func (c *Cache[P]) makeRoom() {
	if len(c.plans)+len(c.failed) < c.max {
		return
	}
	for _, p := range c.plans {
		c.destroy(p)
	}
	clear(c.plans)
	clear(c.failed)
}

// Put stores the plan of k.
func (c *Cache[P]) Put(k Key, p P) {
	c.makeRoom()
	c.plans[k] = p
}

// Fail remembers that the plan of k cannot be built, dropping (and
// destroying) a plan stored for it.
func (c *Cache[P]) Fail(k Key, err error) {
	if p, ok := c.plans[k]; ok {
		c.destroy(p)
		delete(c.plans, k)
	}
	c.makeRoom()
	c.failed[k] = err
}

// Len returns the number of keys held, plans and failures.
func (c *Cache[P]) Len() int { return len(c.plans) + len(c.failed) }
