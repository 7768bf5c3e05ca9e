// Kernels of the core backend file (cuda/device.go): integer matrix
// products, which cuBLAS does not provide.
#include "common.cuh"

// matmul_int computes dst[b] = A[b] @ B[b] for every b < batch, with dst
// contiguous [batch, m, n]. A[b] starts at aoff[b] (device array of int64
// element offsets) with row stride lda, transposed when transA; likewise B.
// One thread per output element, grid-stride loops over columns (x), rows
// (y) and batches (z), so any size fits the grid limits. Sums are formed in
// the unsigned type so overflow wraps as on the CPU, without undefined
// behaviour.
template <typename T, typename U>
__device__ void matmul_int(T *dst, const T *a, const T *b, long long batch, long long m, long long n,
                           long long k, long long lda, long long ldb, int transA, int transB,
                           const long long *aoff, const long long *boff) {
  for (long long bz = blockIdx.z; bz < batch; bz += gridDim.z) {
    const T *A = a + aoff[bz];
    const T *B = b + boff[bz];
    for (long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y; row < m;
         row += (long long)blockDim.y * gridDim.y) {
      for (long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x; col < n;
           col += (long long)blockDim.x * gridDim.x) {
        U acc = 0;
        for (long long p = 0; p < k; ++p) {
          U x = (U)(transA ? A[p * lda + row] : A[row * lda + p]);
          U y = (U)(transB ? B[col * ldb + p] : B[p * ldb + col]);
          acc += x * y;
        }
        dst[(bz * m + row) * n + col] = (T)acc;
      }
    }
  }
}

extern "C" __global__ void matmul_i64(long long *dst, const long long *a, const long long *b, long long batch,
                                      long long m, long long n, long long k, long long lda, long long ldb,
                                      int transA, int transB, const long long *aoff, const long long *boff) {
  matmul_int<long long, unsigned long long>(dst, a, b, batch, m, n, k, lda, ldb, transA, transB, aoff, boff);
}

extern "C" __global__ void matmul_i32(int *dst, const int *a, const int *b, long long batch, long long m,
                                      long long n, long long k, long long lda, long long ldb, int transA,
                                      int transB, const long long *aoff, const long long *boff) {
  matmul_int<int, unsigned int>(dst, a, b, batch, m, n, k, lda, ldb, transA, transB, aoff, boff);
}
