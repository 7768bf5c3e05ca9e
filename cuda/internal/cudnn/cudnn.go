//go:build cuda

package cudnn

import (
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/emberml/ember/internal/dl"
)

// Handle is a cudnnHandle_t.
type Handle uintptr

// Library is libcudnn with its convolution functions bound. Calls that
// take a handle must run on an OS thread where the handle's CUDA context
// is current, one at a time per handle.
type Library struct {
	// Path is where libcudnn was opened from; Dir is its folder ("" when
	// the system loader found it by soname).
	Path, Dir string
	// Version is cudnnGetVersion's number (90100 for 9.1.0, 8902 for 8.9.2).
	Version int

	cudnnGetVersion                   func() uint64
	cudnnGetErrorString               func(status int32) string
	cudnnCreate                       func(h *Handle) int32
	cudnnDestroy                      func(h Handle) int32
	cudnnSetStream                    func(h Handle, stream uintptr) int32
	cudnnCreateTensorDescriptor       func(d *uintptr) int32
	cudnnDestroyTensorDescriptor      func(d uintptr) int32
	cudnnSetTensor4dDescriptor        func(d uintptr, format int32, dt DataType, n, c, h, w int32) int32
	cudnnCreateFilterDescriptor       func(d *uintptr) int32
	cudnnDestroyFilterDescriptor      func(d uintptr) int32
	cudnnSetFilter4dDescriptor        func(d uintptr, dt DataType, format int32, k, c, h, w int32) int32
	cudnnCreateConvolutionDescriptor  func(d *uintptr) int32
	cudnnDestroyConvolutionDescriptor func(d uintptr) int32
	cudnnSetConvolution2dDescriptor   func(d uintptr, padH, padW, strideH, strideW, dilationH, dilationW int32, mode int32, compute DataType) int32
	cudnnSetConvolutionGroupCount     func(d uintptr, groups int32) int32
	cudnnSetConvolutionMathType       func(d uintptr, m MathType) int32

	// Queries take (handle, the two operand descriptors, the convolution,
	// the result descriptor, ...), in the order of the C prototypes:
	// forward (x, w, conv, y), backward data (w, dy, conv, dx), backward
	// filter (x, dy, conv, dw).
	cudnnGetConvolutionForwardAlgorithm_v7         func(h Handle, a, b, conv, out uintptr, requested int32, returned *int32, perf *Perf) int32
	cudnnGetConvolutionForwardWorkspaceSize        func(h Handle, a, b, conv, out uintptr, algo int32, size *uint64) int32
	cudnnGetConvolutionBackwardDataAlgorithm_v7    func(h Handle, a, b, conv, out uintptr, requested int32, returned *int32, perf *Perf) int32
	cudnnGetConvolutionBackwardDataWorkspaceSize   func(h Handle, a, b, conv, out uintptr, algo int32, size *uint64) int32
	cudnnGetConvolutionBackwardFilterAlgorithm_v7  func(h Handle, a, b, conv, out uintptr, requested int32, returned *int32, perf *Perf) int32
	cudnnGetConvolutionBackwardFilterWorkspaceSize func(h Handle, a, b, conv, out uintptr, algo int32, size *uint64) int32

	// Runs take (handle, alpha, aDesc, a, bDesc, b, conv, algo, workspace,
	// workspace bytes, beta, outDesc, out): 13 arguments.
	cudnnConvolutionForward        func(h Handle, alpha unsafe.Pointer, ad uintptr, a uint64, bd uintptr, b uint64, conv uintptr, algo int32, ws, wsBytes uint64, beta unsafe.Pointer, outd uintptr, out uint64) int32
	cudnnConvolutionBackwardData   func(h Handle, alpha unsafe.Pointer, ad uintptr, a uint64, bd uintptr, b uint64, conv uintptr, algo int32, ws, wsBytes uint64, beta unsafe.Pointer, outd uintptr, out uint64) int32
	cudnnConvolutionBackwardFilter func(h Handle, alpha unsafe.Pointer, ad uintptr, a uint64, bd uintptr, b uint64, conv uintptr, algo int32, ws, wsBytes uint64, beta unsafe.Pointer, outd uintptr, out uint64) int32
}

func (l *Library) symbols() []dl.Symbol {
	return []dl.Symbol{
		{Name: "cudnnGetVersion", Fptr: &l.cudnnGetVersion},
		{Name: "cudnnGetErrorString", Fptr: &l.cudnnGetErrorString},
		{Name: "cudnnCreate", Fptr: &l.cudnnCreate},
		{Name: "cudnnDestroy", Fptr: &l.cudnnDestroy},
		{Name: "cudnnSetStream", Fptr: &l.cudnnSetStream},
		{Name: "cudnnCreateTensorDescriptor", Fptr: &l.cudnnCreateTensorDescriptor},
		{Name: "cudnnDestroyTensorDescriptor", Fptr: &l.cudnnDestroyTensorDescriptor},
		{Name: "cudnnSetTensor4dDescriptor", Fptr: &l.cudnnSetTensor4dDescriptor},
		{Name: "cudnnCreateFilterDescriptor", Fptr: &l.cudnnCreateFilterDescriptor},
		{Name: "cudnnDestroyFilterDescriptor", Fptr: &l.cudnnDestroyFilterDescriptor},
		{Name: "cudnnSetFilter4dDescriptor", Fptr: &l.cudnnSetFilter4dDescriptor},
		{Name: "cudnnCreateConvolutionDescriptor", Fptr: &l.cudnnCreateConvolutionDescriptor},
		{Name: "cudnnDestroyConvolutionDescriptor", Fptr: &l.cudnnDestroyConvolutionDescriptor},
		{Name: "cudnnSetConvolution2dDescriptor", Fptr: &l.cudnnSetConvolution2dDescriptor},
		{Name: "cudnnSetConvolutionGroupCount", Fptr: &l.cudnnSetConvolutionGroupCount},
		{Name: "cudnnSetConvolutionMathType", Fptr: &l.cudnnSetConvolutionMathType},
		{Name: "cudnnGetConvolutionForwardAlgorithm_v7", Fptr: &l.cudnnGetConvolutionForwardAlgorithm_v7},
		{Name: "cudnnGetConvolutionForwardWorkspaceSize", Fptr: &l.cudnnGetConvolutionForwardWorkspaceSize},
		{Name: "cudnnGetConvolutionBackwardDataAlgorithm_v7", Fptr: &l.cudnnGetConvolutionBackwardDataAlgorithm_v7},
		{Name: "cudnnGetConvolutionBackwardDataWorkspaceSize", Fptr: &l.cudnnGetConvolutionBackwardDataWorkspaceSize},
		{Name: "cudnnGetConvolutionBackwardFilterAlgorithm_v7", Fptr: &l.cudnnGetConvolutionBackwardFilterAlgorithm_v7},
		{Name: "cudnnGetConvolutionBackwardFilterWorkspaceSize", Fptr: &l.cudnnGetConvolutionBackwardFilterWorkspaceSize},
		{Name: "cudnnConvolutionForward", Fptr: &l.cudnnConvolutionForward},
		{Name: "cudnnConvolutionBackwardData", Fptr: &l.cudnnConvolutionBackwardData},
		{Name: "cudnnConvolutionBackwardFilter", Fptr: &l.cudnnConvolutionBackwardFilter},
	}
}

// Spec describes libcudnn for dl: libcudnn.so.9, then libcudnn.so.8, each
// preceded by its sub-libraries from the same folder.
func Spec() dl.Spec {
	return dl.Spec{Name: "cuDNN", Sonames: Sonames, Companions: Companions}
}

// Load opens libcudnn with o (which should open with RTLD_GLOBAL, so the
// sub-libraries opened first serve the front library's own opens), binds
// its functions and checks that the version matches the soname. It never
// panics: a missing library or symbol is an error wrapping dl.ErrNotFound
// or describing the mismatch.
func Load(o dl.Opener, env dl.Env) (*Library, error) {
	l := &Library{}
	lib, err := dl.OpenAndBind(o, env, Spec(), l.symbols())
	if err != nil {
		return nil, err
	}
	l.Path = lib.Path
	if strings.ContainsRune(lib.Path, '/') {
		l.Dir = filepath.Dir(lib.Path)
	}
	l.Version = int(l.cudnnGetVersion())
	major, _, _ := VersionParts(l.Version)
	if want := lib.Soname[strings.LastIndexByte(lib.Soname, '.')+1:]; fmt.Sprint(major) != want {
		return nil, fmt.Errorf("cuDNN at %s reports version %d, not major %s", lib.Path, l.Version, want)
	}
	return l, nil
}

// Major returns the library's major version.
func (l *Library) Major() int {
	major, _, _ := VersionParts(l.Version)
	return major
}

// VersionString returns the version as "9.1.0".
func (l *Library) VersionString() string {
	major, minor, patch := VersionParts(l.Version)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// check turns a status into an *Error carrying cuDNN's message.
func (l *Library) check(call string, status int32) error {
	if status == statusSuccess {
		return nil
	}
	msg := l.cudnnGetErrorString(status)
	return &Error{Call: call, Status: status, Message: msg, Hint: sublibraryHint(msg, l.Dir)}
}

// Create creates a handle in the current CUDA context and makes its work
// run on stream.
func (l *Library) Create(stream uintptr) (Handle, error) {
	var h Handle
	if err := l.check("cudnnCreate", l.cudnnCreate(&h)); err != nil {
		return 0, err
	}
	if err := l.check("cudnnSetStream", l.cudnnSetStream(h, stream)); err != nil {
		_ = l.cudnnDestroy(h)
		return 0, err
	}
	return h, nil
}

// Destroy destroys a handle.
func (l *Library) Destroy(h Handle) error { return l.check("cudnnDestroy", l.cudnnDestroy(h)) }

// Plan holds the descriptors of one convolution and the algorithm chosen
// for one direction.
type Plan struct {
	Key Key
	Choice
	x, y, w, conv uintptr // input and output tensors, filter, convolution
}

// DestroyPlan releases a plan's descriptors.
func (l *Library) DestroyPlan(p *Plan) {
	if p.x != 0 {
		_ = l.cudnnDestroyTensorDescriptor(p.x)
	}
	if p.y != 0 {
		_ = l.cudnnDestroyTensorDescriptor(p.y)
	}
	if p.w != 0 {
		_ = l.cudnnDestroyFilterDescriptor(p.w)
	}
	if p.conv != 0 {
		_ = l.cudnnDestroyConvolutionDescriptor(p.conv)
	}
}

// NewPlan builds the descriptors of k's convolution and asks cuDNN's
// heuristics (the _v7 queries) for its algorithm, taking the first usable
// one within WorkspaceLimit (see choose). k.Math is the math type asked
// for: FMAMath keeps float32 out of tensor cores.
func (l *Library) NewPlan(h Handle, k Key) (_ *Plan, err error) {
	if err := k.Conv.Check(); err != nil {
		return nil, err
	}
	p := &Plan{Key: k}
	defer func() {
		if err != nil {
			l.DestroyPlan(p)
		}
	}()
	c := k.Conv
	xs, ws, ys := c.Shapes()
	steps := []struct {
		call   string
		status func() int32
	}{
		{"cudnnCreateTensorDescriptor", func() int32 { return l.cudnnCreateTensorDescriptor(&p.x) }},
		{"cudnnSetTensor4dDescriptor", func() int32 {
			return l.cudnnSetTensor4dDescriptor(p.x, tensorNCHW, k.Type, xs[0], xs[1], xs[2], xs[3])
		}},
		{"cudnnCreateTensorDescriptor", func() int32 { return l.cudnnCreateTensorDescriptor(&p.y) }},
		{"cudnnSetTensor4dDescriptor", func() int32 {
			return l.cudnnSetTensor4dDescriptor(p.y, tensorNCHW, k.Type, ys[0], ys[1], ys[2], ys[3])
		}},
		{"cudnnCreateFilterDescriptor", func() int32 { return l.cudnnCreateFilterDescriptor(&p.w) }},
		{"cudnnSetFilter4dDescriptor", func() int32 {
			return l.cudnnSetFilter4dDescriptor(p.w, k.Type, tensorNCHW, ws[0], ws[1], ws[2], ws[3])
		}},
		{"cudnnCreateConvolutionDescriptor", func() int32 { return l.cudnnCreateConvolutionDescriptor(&p.conv) }},
		{"cudnnSetConvolution2dDescriptor", func() int32 {
			return l.cudnnSetConvolution2dDescriptor(p.conv, int32(c.PadH), int32(c.PadW), int32(c.StrideH), int32(c.StrideW),
				int32(c.DilationH), int32(c.DilationW), crossCorrelation, k.Type)
		}},
		{"cudnnSetConvolutionGroupCount", func() int32 { return l.cudnnSetConvolutionGroupCount(p.conv, int32(c.Groups)) }},
		{"cudnnSetConvolutionMathType", func() int32 { return l.cudnnSetConvolutionMathType(p.conv, k.Math) }},
	}
	for _, s := range steps {
		if err := l.check(s.call, s.status()); err != nil {
			return nil, err
		}
	}
	perfs, err := l.query(h, p)
	if err != nil {
		return nil, err
	}
	setMath := func(m MathType) error {
		return l.check("cudnnSetConvolutionMathType", l.cudnnSetConvolutionMathType(p.conv, m))
	}
	p.Choice, err = choose(perfs, k.Math, WorkspaceLimit, setMath, func(algo int32) (int, error) { return l.workspace(h, p, algo) })
	if err != nil {
		return nil, fmt.Errorf("cudnn: %s %s convolution %+v: %w", k.Dir, k.Type, c, err)
	}
	return p, nil
}

// operands returns the descriptors of a direction's query in C order.
func (p *Plan) operands() (a, b, out uintptr) {
	switch p.Key.Dir {
	case BackwardData:
		return p.w, p.y, p.x // w, dy → dx
	case BackwardFilter:
		return p.x, p.y, p.w // x, dy → dw
	}
	return p.x, p.w, p.y // x, w → y
}

// query runs the direction's _v7 algorithm heuristics.
func (l *Library) query(h Handle, p *Plan) ([]Perf, error) {
	a, b, out := p.operands()
	var perfs [fwdAlgoCount]Perf
	var n int32
	var status int32
	var call string
	switch p.Key.Dir {
	case BackwardData:
		call = "cudnnGetConvolutionBackwardDataAlgorithm_v7"
		status = l.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, a, b, p.conv, out, bwdDataAlgoCount, &n, &perfs[0])
	case BackwardFilter:
		call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7"
		status = l.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, a, b, p.conv, out, bwdFilterAlgoCount, &n, &perfs[0])
	default:
		call = "cudnnGetConvolutionForwardAlgorithm_v7"
		status = l.cudnnGetConvolutionForwardAlgorithm_v7(h, a, b, p.conv, out, fwdAlgoCount, &n, &perfs[0])
	}
	if err := l.check(call, status); err != nil {
		return nil, err
	}
	return perfs[:min(max(int(n), 0), len(perfs))], nil
}

// workspace asks the workspace bytes of algo for p's direction (with the
// math type currently set on its convolution descriptor).
func (l *Library) workspace(h Handle, p *Plan, algo int32) (int, error) {
	a, b, out := p.operands()
	var size uint64
	var status int32
	var call string
	switch p.Key.Dir {
	case BackwardData:
		call = "cudnnGetConvolutionBackwardDataWorkspaceSize"
		status = l.cudnnGetConvolutionBackwardDataWorkspaceSize(h, a, b, p.conv, out, algo, &size)
	case BackwardFilter:
		call = "cudnnGetConvolutionBackwardFilterWorkspaceSize"
		status = l.cudnnGetConvolutionBackwardFilterWorkspaceSize(h, a, b, p.conv, out, algo, &size)
	default:
		call = "cudnnGetConvolutionForwardWorkspaceSize"
		status = l.cudnnGetConvolutionForwardWorkspaceSize(h, a, b, p.conv, out, algo, &size)
	}
	if err := l.check(call, status); err != nil {
		return 0, err
	}
	return int(size), nil
}

// Run queues p's convolution on the handle's stream with alpha 1 and beta
// 0 (out is overwritten). The operands are device addresses, by direction:
// Forward a = x, b = w, out = y; BackwardData a = w, b = dy, out = dx;
// BackwardFilter a = x, b = dy, out = dw. ws is workspace of at least
// p.Workspace bytes (0 when none is needed). The error's Status tells,
// through Rejected, whether cuDNN refused the call before queuing work.
func (l *Library) Run(h Handle, p *Plan, a, b, out, ws uint64) error {
	one32, zero32 := float32(1), float32(0)
	one64, zero64 := float64(1), float64(0)
	alpha, beta := unsafe.Pointer(&one32), unsafe.Pointer(&zero32)
	if p.Key.Type == DataDouble {
		alpha, beta = unsafe.Pointer(&one64), unsafe.Pointer(&zero64)
	}
	wsBytes := uint64(p.Workspace)
	if ws == 0 {
		wsBytes = 0
	}
	var status int32
	var call string
	switch p.Key.Dir {
	case BackwardData:
		call = "cudnnConvolutionBackwardData"
		status = l.cudnnConvolutionBackwardData(h, alpha, p.w, a, p.y, b, p.conv, p.Algo, ws, wsBytes, beta, p.x, out)
	case BackwardFilter:
		call = "cudnnConvolutionBackwardFilter"
		status = l.cudnnConvolutionBackwardFilter(h, alpha, p.x, a, p.y, b, p.conv, p.Algo, ws, wsBytes, beta, p.w, out)
	default:
		call = "cudnnConvolutionForward"
		status = l.cudnnConvolutionForward(h, alpha, p.x, a, p.w, b, p.conv, p.Algo, ws, wsBytes, beta, p.y, out)
	}
	return l.check(call, status)
}
