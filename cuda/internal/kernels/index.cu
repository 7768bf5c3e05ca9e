// Index kernels: gather, scatter (plain, accumulating, or-ing), index range
// checks and the mask scan behind masked select and masked scatter. See
// cuda/backend_index.go for the Go side.
//
// Gathers and plain scatters only move bits, so they are instantiated per
// element size (u8: Bool, u16: Float16/BFloat16, u32: Float32/Int32, u64:
// Float64/Int64) and per index type (i64, i32).
#include "common.cuh"

// Bad-index reports: kernels that meet an index outside [0, bound) lower
// *bad to the row-major position of that index (atomicMin), so the host
// reports the first bad index in row-major order, as the CPU does. The word
// starts at ~0 (index_bad_init).
extern "C" __global__ void index_bad_init(unsigned long long *bad) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *bad = ~0ull;
}

template <typename I>
__device__ void index_check(const I *idx, Strided il, long long n, long long bound,
                            unsigned long long *bad) {
  EMBER_FOR(i, n) {
    long long v = (long long)idx[strided_offset(il, i)];
    if (v < 0 || v >= bound) atomicMin(bad, (unsigned long long)i);
  }
}

// gather: dst[i] = src[base(i) + idx(i)*axis_stride] for the row-major
// position i over the index shape; s has the index shape and 0 stride on the
// gathered axis.
template <typename T, typename I>
__device__ void gather(T *dst, const T *src, Strided s, long long axis_stride,
                       long long bound, const I *idx, Strided il, long long n,
                       unsigned long long *bad) {
  EMBER_FOR(i, n) {
    long long v = (long long)idx[strided_offset(il, i)];
    if (v < 0 || v >= bound) {
      atomicMin(bad, (unsigned long long)i);
      continue;
    }
    dst[i] = src[strided_offset(s, i) + v * axis_stride];
  }
}

// scatter: dst[base(i) + idx(i)*axis_stride] = src(i); d has the index shape
// and 0 stride on the scattered axis. Indices were checked beforehand; an
// out-of-range one is skipped rather than written out of bounds.
template <typename T, typename I>
__device__ void scatter(T *dst, Strided d, long long axis_stride, long long bound,
                        const I *idx, Strided il, const T *src, Strided sl,
                        long long n) {
  EMBER_FOR(i, n) {
    long long v = (long long)idx[strided_offset(il, i)];
    if (v < 0 || v >= bound) continue;
    dst[strided_offset(d, i) + v * axis_stride] = src[strided_offset(sl, i)];
  }
}

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int *p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(long long *p, long long v) {
  // Two's-complement addition is the same on unsigned words.
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

template <typename T, typename I>
__device__ void scatter_add(T *dst, Strided d, long long axis_stride, long long bound,
                            const I *idx, Strided il, const T *src, Strided sl,
                            long long n) {
  EMBER_FOR(i, n) {
    long long v = (long long)idx[strided_offset(il, i)];
    if (v < 0 || v >= bound) continue;
    atomic_add(dst + strided_offset(d, i) + v * axis_stride, src[strided_offset(sl, i)]);
  }
}

// scatter_or is the accumulating scatter of Bool: every writer stores 1, so
// concurrent writes to one target agree.
template <typename I>
__device__ void scatter_or(unsigned char *dst, Strided d, long long axis_stride,
                           long long bound, const I *idx, Strided il,
                           const unsigned char *src, Strided sl, long long n) {
  EMBER_FOR(i, n) {
    long long v = (long long)idx[strided_offset(il, i)];
    if (v < 0 || v >= bound) continue;
    if (src[strided_offset(sl, i)]) dst[strided_offset(d, i) + v * axis_stride] = 1;
  }
}

#define INDEX_CHECK(IN, I)                                                           \
  extern "C" __global__ void index_check_##IN(const I *idx, Strided il, long long n, \
                                              long long bound,                       \
                                              unsigned long long *bad) {             \
    index_check<I>(idx, il, n, bound, bad);                                          \
  }
INDEX_CHECK(i64, long long)
INDEX_CHECK(i32, int)

#define GATHER(TN, T, IN, I)                                                          \
  extern "C" __global__ void gather_##TN##_##IN(                                      \
      T *dst, const T *src, Strided s, long long axis_stride, long long bound,        \
      const I *idx, Strided il, long long n, unsigned long long *bad) {               \
    gather<T, I>(dst, src, s, axis_stride, bound, idx, il, n, bad);                   \
  }
#define SCATTER(NAME, FN, TN, T, IN, I)                                               \
  extern "C" __global__ void NAME##_##TN##_##IN(                                      \
      T *dst, Strided d, long long axis_stride, long long bound, const I *idx,        \
      Strided il, const T *src, Strided sl, long long n) {                            \
    FN(dst, d, axis_stride, bound, idx, il, src, sl, n);                              \
  }
#define COPY_FAMILY(IN, I)                                                     \
  GATHER(u8, unsigned char, IN, I)                                             \
  GATHER(u16, unsigned short, IN, I)                                           \
  GATHER(u32, unsigned int, IN, I)                                             \
  GATHER(u64, unsigned long long, IN, I)                                       \
  SCATTER(scatter, (scatter<unsigned char, I>), u8, unsigned char, IN, I)      \
  SCATTER(scatter, (scatter<unsigned short, I>), u16, unsigned short, IN, I)   \
  SCATTER(scatter, (scatter<unsigned int, I>), u32, unsigned int, IN, I)       \
  SCATTER(scatter, (scatter<unsigned long long, I>), u64, unsigned long long, IN, I) \
  SCATTER(scatter_add, (scatter_add<float, I>), f32, float, IN, I)             \
  SCATTER(scatter_add, (scatter_add<double, I>), f64, double, IN, I)           \
  SCATTER(scatter_add, (scatter_add<int, I>), i32, int, IN, I)                 \
  SCATTER(scatter_add, (scatter_add<long long, I>), i64, long long, IN, I)     \
  SCATTER(scatter_or, (scatter_or<I>), u8, unsigned char, IN, I)
COPY_FAMILY(i64, long long)
COPY_FAMILY(i32, int)

// ---- Masked select / scatter ----------------------------------------------
//
// The mask (a strided Bool view over n row-major positions) is cut into
// chunks of MASK_CHUNK positions, one block of MASK_THREADS threads each,
// every thread owning MASK_ITEMS consecutive positions. mask_count counts the
// true elements of each chunk, mask_scan turns the counts into exclusive
// prefix sums in place (one block), and the masked kernels recount their
// chunk, scan it within the block and move the selected elements to their
// row-major rank.

#define MASK_THREADS 256
#define MASK_ITEMS 8
#define MASK_CHUNK (MASK_THREADS * MASK_ITEMS)

// block_sum returns the sum of v over the block (to every thread).
__device__ long long block_sum(long long v) {
  __shared__ long long s[MASK_THREADS];
  int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int half = MASK_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  long long total = s[0];
  __syncthreads();
  return total;
}

// block_exclusive_scan returns the sum of v over the threads before this one
// and stores the block total in *total.
__device__ long long block_exclusive_scan(long long v, long long *total) {
  __shared__ long long s[MASK_THREADS];
  int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int off = 1; off < MASK_THREADS; off <<= 1) {
    long long x = t >= off ? s[t - off] : 0;
    __syncthreads();
    s[t] += x;
    __syncthreads();
  }
  long long incl = s[t];
  *total = s[MASK_THREADS - 1];
  __syncthreads();
  return incl - v;
}

// thread_range is the slice [lo, hi) of positions this thread owns.
__device__ __forceinline__ void thread_range(long long n, long long *lo, long long *hi) {
  long long base = (long long)blockIdx.x * MASK_CHUNK + (long long)threadIdx.x * MASK_ITEMS;
  *lo = base < n ? base : n;
  *hi = base + MASK_ITEMS < n ? base + MASK_ITEMS : n;
}

__device__ __forceinline__ long long count_true(const unsigned char *mask, const Strided &ml,
                                                long long lo, long long hi) {
  long long c = 0;
  for (long long i = lo; i < hi; ++i) c += mask[strided_offset(ml, i)] != 0;
  return c;
}

// mask_count writes the number of true positions of chunk blockIdx.x into
// counts[blockIdx.x]. Launch with MASK_THREADS threads per block.
extern "C" __global__ void mask_count(const unsigned char *mask, Strided ml, long long n,
                                      long long *counts) {
  long long lo, hi;
  thread_range(n, &lo, &hi);
  long long total = block_sum(count_true(mask, ml, lo, hi));
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// mask_scan replaces counts[0..nb) by its exclusive prefix sums. Launch one
// block of MASK_THREADS threads.
extern "C" __global__ void mask_scan(long long *counts, long long nb) {
  long long carry = 0;
  for (long long base = 0; base < nb; base += MASK_THREADS) {
    long long i = base + threadIdx.x;
    long long v = i < nb ? counts[i] : 0;
    long long total;
    long long excl = block_exclusive_scan(v, &total);
    if (i < nb) counts[i] = carry + excl;
    carry += total;
  }
}

// masked_select: dst[rank(i)] = src(i) for every true mask position i.
template <typename T>
__device__ void masked_select(T *dst, const T *src, const Strided &sl,
                              const unsigned char *mask, const Strided &ml, long long n,
                              const long long *offsets) {
  long long lo, hi, total;
  thread_range(n, &lo, &hi);
  long long pos = offsets[blockIdx.x] + block_exclusive_scan(count_true(mask, ml, lo, hi), &total);
  for (long long i = lo; i < hi; ++i) {
    if (mask[strided_offset(ml, i)]) dst[pos++] = src[strided_offset(sl, i)];
  }
}

// masked_scatter: dst(i) = src(rank(i)) for every true mask position i,
// src read through its own view in row-major order.
template <typename T>
__device__ void masked_scatter(T *dst, const Strided &dl, const unsigned char *mask,
                               const Strided &ml, const T *src, const Strided &sl,
                               long long n, const long long *offsets) {
  long long lo, hi, total;
  thread_range(n, &lo, &hi);
  long long pos = offsets[blockIdx.x] + block_exclusive_scan(count_true(mask, ml, lo, hi), &total);
  for (long long i = lo; i < hi; ++i) {
    if (mask[strided_offset(ml, i)]) dst[strided_offset(dl, i)] = src[strided_offset(sl, pos++)];
  }
}

#define MASKED(TN, T)                                                                     \
  extern "C" __global__ void masked_select_##TN(T *dst, const T *src, Strided sl,         \
                                                const unsigned char *mask, Strided ml,    \
                                                long long n, const long long *offsets) {  \
    masked_select<T>(dst, src, sl, mask, ml, n, offsets);                                 \
  }                                                                                       \
  extern "C" __global__ void masked_scatter_##TN(T *dst, Strided dl,                      \
                                                 const unsigned char *mask, Strided ml,   \
                                                 const T *src, Strided sl, long long n,   \
                                                 const long long *offsets) {              \
    masked_scatter<T>(dst, dl, mask, ml, src, sl, n, offsets);                            \
  }
MASKED(u8, unsigned char)
MASKED(u16, unsigned short)
MASKED(u32, unsigned int)
MASKED(u64, unsigned long long)
