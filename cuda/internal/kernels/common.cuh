// Shared definitions of Ember's CUDA kernels. Every kernel is extern "C" so
// its PTX entry name is the name the Go side launches.
#pragma once
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define EMBER_MAX_RANK 8

// Strided mirrors cuda.strided in Go (field order and sizes must match):
// element i of the view (in row-major order over shape) lives at
// offset + sum(index_d * strides[d]).
struct Strided {
  long long shape[EMBER_MAX_RANK];
  long long strides[EMBER_MAX_RANK];
  long long offset;
  int rank;
  int pad_;
};

// strided_offset maps a row-major linear index over v.shape to an element
// offset in v's buffer.
__device__ __forceinline__ long long strided_offset(const Strided &v, long long i) {
  long long off = v.offset;
  for (int d = v.rank - 1; d >= 0; --d) {
    long long s = v.shape[d];
    long long q = i / s;
    off += (i - q * s) * v.strides[d];
    i = q;
  }
  return off;
}

// Grid-stride loop over n elements.
#define EMBER_FOR(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)
