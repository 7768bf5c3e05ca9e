// Kernels of the core backend file (cuda/device.go): integer matrix
// products, which cuBLAS does not provide.
#include "common.cuh"

// matmul_int computes dst[b] = A[b] @ B[b] for batch b = blockIdx.z, with
// dst contiguous [batch, m, n]. A[b] starts at aoff[b] (device array of
// int64 element offsets) with row stride lda, transposed when transA;
// likewise B. One thread per output element; integer sums wrap as on the CPU.
template <typename T>
__device__ void matmul_int(T *dst, const T *a, const T *b, long long m, long long n, long long k,
                           long long lda, long long ldb, int transA, int transB,
                           const long long *aoff, const long long *boff) {
  long long bz = blockIdx.z;
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  const T *A = a + aoff[bz];
  const T *B = b + boff[bz];
  T acc = 0;
  for (long long p = 0; p < k; ++p) {
    T x = transA ? A[p * lda + row] : A[row * lda + p];
    T y = transB ? B[col * ldb + p] : B[p * ldb + col];
    acc += x * y;
  }
  dst[bz * m * n + row * n + col] = acc;
}

extern "C" __global__ void matmul_i64(long long *dst, const long long *a, const long long *b, long long m,
                                      long long n, long long k, long long lda, long long ldb, int transA,
                                      int transB, const long long *aoff, const long long *boff) {
  matmul_int<long long>(dst, a, b, m, n, k, lda, ldb, transA, transB, aoff, boff);
}

extern "C" __global__ void matmul_i32(int *dst, const int *a, const int *b, long long m, long long n,
                                      long long k, long long lda, long long ldb, int transA, int transB,
                                      const long long *aoff, const long long *boff) {
  matmul_int<int>(dst, a, b, m, n, k, lda, ldb, transA, transB, aoff, boff);
}
