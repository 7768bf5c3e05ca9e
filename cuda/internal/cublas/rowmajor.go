// Package cublas binds the parts of cuBLAS that Ember uses (GEMM, plain
// and batched) at run time with purego, without cgo. The bindings are
// compiled with the build tag cuda; the status codes and the row-major
// argument mapping are plain Go, built and tested everywhere.
//
// cublasSgemmStridedBatched and cublasDgemmStridedBatched take 18
// arguments, more than purego can pass (15 on amd64 and arm64), so
// batches of products use the pointer-array forms cublas[SD]gemmBatched,
// which serve uniform and non-uniform batch offsets alike.
package cublas

import "fmt"

// Operation is cublasOperation_t.
type Operation int32

// The operations.
const (
	OpN Operation = 0 // CUBLAS_OP_N
	OpT Operation = 1 // CUBLAS_OP_T
)

// Math modes (cublasMath_t).
const (
	DefaultMath       int32 = 0 // CUBLAS_DEFAULT_MATH
	TF32TensorOpMath  int32 = 3 // CUBLAS_TF32_TENSOR_OP_MATH
	propertyMajor     int32 = 0 // MAJOR_VERSION (libraryPropertyType)
	propertyMinor     int32 = 1
	propertyPatch     int32 = 2
	statusSuccess     int32 = 0
	statusAllocFailed int32 = 3
)

var statusNames = map[int32]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// Error is a failed cuBLAS call.
type Error struct {
	Call   string
	Status int32 // cublasStatus_t
}

func (e *Error) Error() string {
	name, ok := statusNames[e.Status]
	if !ok {
		name = fmt.Sprintf("cublasStatus(%d)", e.Status)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Call, name, e.Status)
}

// GEMM holds the arguments of the column-major call that computes a
// row-major product (see RowMajor). Fields use cuBLAS's naming: its first
// operand (TransA, LDA) is the row-major B, its second (TransB, LDB) the
// row-major A.
type GEMM struct {
	TransA, TransB Operation
	M, N, K        int
	LDA, LDB, LDC  int
}

// RowMajor maps the row-major product C[m×n] = op(A)·op(B) (A stored m×k
// with row stride lda, or k×m if transA; B stored k×n with row stride ldb,
// or n×k if transB; C dense with row stride n) onto column-major GEMM: a
// row-major matrix is its transpose in column-major order, so Cᵀ = op(B)ᵀ·
// op(A)ᵀ is computed, with B as cuBLAS's first operand and A as its second.
// Leading dimensions are raised to the minimum cuBLAS accepts where the
// matrix has a single column (ld is then never used to step).
func RowMajor(transA, transB bool, m, n, k, lda, ldb int) GEMM {
	g := GEMM{TransA: OpN, TransB: OpN, M: n, N: m, K: k, LDA: ldb, LDB: lda, LDC: max(n, 1)}
	// First operand (B): column-major rows×cols as cuBLAS sees it.
	bRows, bCols := n, k
	if transB {
		g.TransA = OpT
		bRows, bCols = k, n
	}
	aRows, aCols := k, m
	if transA {
		g.TransB = OpT
		aRows, aCols = m, k
	}
	if bCols <= 1 {
		g.LDA = max(g.LDA, bRows, 1)
	}
	if aCols <= 1 {
		g.LDB = max(g.LDB, aRows, 1)
	}
	return g
}
