//go:build cuda

package cublas

import (
	"strings"

	"github.com/emberml/ember/internal/dl"
)

// Handle is a cublasHandle_t.
type Handle uintptr

// Library is libcublas with its functions bound. Calls that take a handle
// must run on an OS thread where the handle's CUDA context is current.
type Library struct {
	// Path is where libcublas was opened from.
	Path string

	cublasGetProperty  func(prop int32, v *int32) int32
	cublasCreate       func(h *Handle) int32
	cublasDestroy      func(h Handle) int32
	cublasSetStream    func(h Handle, s uintptr) int32
	cublasSetMathMode  func(h Handle, mode int32) int32
	cublasSgemm        func(h Handle, ta, tb Operation, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
	cublasDgemm        func(h Handle, ta, tb Operation, m, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32) int32
	cublasSgemmBatched func(h Handle, ta, tb Operation, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32, batch int32) int32
	cublasDgemmBatched func(h Handle, ta, tb Operation, m, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32, batch int32) int32
}

func (l *Library) symbols() []dl.Symbol {
	return []dl.Symbol{
		{Name: "cublasGetProperty", Fptr: &l.cublasGetProperty},
		{Name: "cublasCreate_v2", Fptr: &l.cublasCreate},
		{Name: "cublasDestroy_v2", Fptr: &l.cublasDestroy},
		{Name: "cublasSetStream_v2", Fptr: &l.cublasSetStream},
		{Name: "cublasSetMathMode", Fptr: &l.cublasSetMathMode},
		{Name: "cublasSgemm_v2", Fptr: &l.cublasSgemm},
		{Name: "cublasDgemm_v2", Fptr: &l.cublasDgemm},
		{Name: "cublasSgemmBatched", Fptr: &l.cublasSgemmBatched},
		{Name: "cublasDgemmBatched", Fptr: &l.cublasDgemmBatched},
	}
}

// Spec describes libcublas for dl: the newest major first, each preceded
// by the libcublasLt of the same major from the same folder (libcublas
// needs it, and a folder found by the search is not on the loader's path).
func Spec() dl.Spec {
	return dl.Spec{
		Name:    "cuBLAS",
		Sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
		Companions: func(soname string) []string {
			return []string{strings.Replace(soname, "libcublas.", "libcublasLt.", 1)}
		},
	}
}

// Load opens libcublas with o (which should open with RTLD_GLOBAL) and
// binds its functions. It never panics: a missing library or symbol is an
// error.
func Load(o dl.Opener, env dl.Env) (*Library, error) {
	l := &Library{}
	lib, err := dl.OpenAndBind(o, env, Spec(), l.symbols())
	if err != nil {
		return nil, err
	}
	l.Path = lib.Path
	return l, nil
}

func check(call string, status int32) error {
	if status == statusSuccess {
		return nil
	}
	return &Error{Call: call, Status: status}
}

// Version returns the library's version; it needs no device.
func (l *Library) Version() (major, minor, patch int, err error) {
	var v [3]int32
	for i, p := range []int32{propertyMajor, propertyMinor, propertyPatch} {
		if err := check("cublasGetProperty", l.cublasGetProperty(p, &v[i])); err != nil {
			return 0, 0, 0, err
		}
	}
	return int(v[0]), int(v[1]), int(v[2]), nil
}

// Create creates a handle in the current CUDA context.
func (l *Library) Create() (Handle, error) {
	var h Handle
	err := check("cublasCreate_v2", l.cublasCreate(&h))
	return h, err
}

// Destroy destroys a handle.
func (l *Library) Destroy(h Handle) error { return check("cublasDestroy_v2", l.cublasDestroy(h)) }

// SetStream makes the handle's calls run on stream s.
func (l *Library) SetStream(h Handle, s uintptr) error {
	return check("cublasSetStream_v2", l.cublasSetStream(h, s))
}

// SetMathMode sets DefaultMath or TF32TensorOpMath.
func (l *Library) SetMathMode(h Handle, mode int32) error {
	return check("cublasSetMathMode", l.cublasSetMathMode(h, mode))
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C in column-major order (the
// arguments of g, see RowMajor); a, b and c are device addresses.
func (l *Library) Sgemm(h Handle, g GEMM, alpha float32, a, b uint64, beta float32, c uint64) error {
	return check("cublasSgemm_v2", l.cublasSgemm(h, g.TransA, g.TransB, int32(g.M), int32(g.N), int32(g.K),
		&alpha, a, int32(g.LDA), b, int32(g.LDB), &beta, c, int32(g.LDC)))
}

// Dgemm is Sgemm in float64.
func (l *Library) Dgemm(h Handle, g GEMM, alpha float64, a, b uint64, beta float64, c uint64) error {
	return check("cublasDgemm_v2", l.cublasDgemm(h, g.TransA, g.TransB, int32(g.M), int32(g.N), int32(g.K),
		&alpha, a, int32(g.LDA), b, int32(g.LDB), &beta, c, int32(g.LDC)))
}

// SgemmBatched runs batch Sgemm products; aArr, bArr and cArr are device
// arrays of batch device pointers each.
func (l *Library) SgemmBatched(h Handle, g GEMM, alpha float32, aArr, bArr uint64, beta float32, cArr uint64, batch int) error {
	return check("cublasSgemmBatched", l.cublasSgemmBatched(h, g.TransA, g.TransB, int32(g.M), int32(g.N), int32(g.K),
		&alpha, aArr, int32(g.LDA), bArr, int32(g.LDB), &beta, cArr, int32(g.LDC), int32(batch)))
}

// DgemmBatched is SgemmBatched in float64.
func (l *Library) DgemmBatched(h Handle, g GEMM, alpha float64, aArr, bArr uint64, beta float64, cArr uint64, batch int) error {
	return check("cublasDgemmBatched", l.cublasDgemmBatched(h, g.TransA, g.TransB, int32(g.M), int32(g.N), int32(g.K),
		&alpha, aArr, int32(g.LDA), bArr, int32(g.LDB), &beta, cArr, int32(g.LDC), int32(batch)))
}
