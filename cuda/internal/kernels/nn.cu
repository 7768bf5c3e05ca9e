// Neural-network kernels: convolution lowering, pooling, softmax and
// normalization statistics over contiguous float32/float64 data. They follow
// tensor/internal/cpu/nn.go operation for operation (sums in float64, the
// same summation order wherever one thread owns an output), so that most
// results match the CPU bit for bit. See cuda/backend_nn.go.
#include "common.cuh"

// ConvGeom mirrors convGeom in cuda/backend_nn.go (itself tensor.ConvGeom
// with int64 fields); keep the field order in sync.
struct ConvGeom {
  long long n, c, h, w;
  long long kh, kw;
  long long sh, sw;
  long long ph, pw;
  long long dh, dw;
  long long oh, ow;
};

// PoolGeom mirrors poolGeom in cuda/backend_nn.go (tensor.PoolGeom with
// int64 fields, CountIncludePad as 0/1); keep the field order in sync.
struct PoolGeom {
  long long planes, h, w;
  long long kh, kw;
  long long sh, sw;
  long long ph, pw;
  long long dh, dw;
  long long oh, ow;
  long long count_include_pad;
};

// Explicitly rounded arithmetic: nvcc contracts a*b+c into a fused
// multiply-add, which the CPU (Go on amd64) never does.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

__device__ __forceinline__ long long floor_div(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// ---- Convolution lowering --------------------------------------------------

// im2col: one thread per element of the [C*KH*KW, N*OH*OW] matrix.
template <typename T>
__device__ void im2col(T *dst, const T *src, const ConvGeom &g) {
  long long l = g.oh * g.ow, nl = g.n * l;
  long long total = g.c * g.kh * g.kw * nl;
  EMBER_FOR(i, total) {
    long long row = i / nl, col = i - row * nl;
    long long kw = row % g.kw, t = row / g.kw;
    long long kh = t % g.kh, c = t / g.kh;
    long long img = col / l, p = col - img * l;
    long long oh = p / g.ow, ow = p - oh * g.ow;
    long long ih = oh * g.sh - g.ph + kh * g.dh;
    long long iw = ow * g.sw - g.pw + kw * g.dw;
    T v = 0;
    if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) v = src[((img * g.c + c) * g.h + ih) * g.w + iw];
    dst[i] = v;
  }
}

// col2im: one thread per pixel of the [N, C, H, W] dst, adding the matrix
// elements that read it in (kh, kw) order, as the CPU does.
template <typename T>
__device__ void col2im(T *dst, const T *src, const ConvGeom &g) {
  long long l = g.oh * g.ow, nl = g.n * l;
  long long total = g.n * g.c * g.h * g.w;
  EMBER_FOR(i, total) {
    long long iw = i % g.w, t = i / g.w;
    long long ih = t % g.h;
    t /= g.h;
    long long c = t % g.c, img = t / g.c;
    T acc = dst[i];
    for (long long kh = 0; kh < g.kh; ++kh) {
      long long y = ih + g.ph - kh * g.dh;  // oh*sh
      if (y < 0 || y % g.sh != 0) continue;
      long long oh = y / g.sh;
      if (oh >= g.oh) continue;
      for (long long kw = 0; kw < g.kw; ++kw) {
        long long x = iw + g.pw - kw * g.dw;  // ow*sw
        if (x < 0 || x % g.sw != 0) continue;
        long long ow = x / g.sw;
        if (ow >= g.ow) continue;
        long long row = (c * g.kh + kh) * g.kw + kw;
        acc = add_rn(acc, src[row * nl + img * l + oh * g.ow + ow]);
      }
    }
    dst[i] = acc;
  }
}

// ---- Pooling ---------------------------------------------------------------

// max_pool2d: one thread per output. The first strict maximum in row-major
// window order wins, or the last NaN; the window start skips the padding in
// steps of the dilation (PyTorch's CPU rule).
template <typename T>
__device__ void max_pool2d(T *dst, long long *indices, const T *src, const PoolGeom &g) {
  long long ohw = g.oh * g.ow, hw = g.h * g.w;
  long long total = g.planes * ohw;
  EMBER_FOR(i, total) {
    long long p = i / ohw, q = i - p * ohw;
    long long oh = q / g.ow, ow = q - oh * g.ow;
    long long h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    long long h1 = min(h0 + (g.kh - 1) * g.dh + 1, g.h);
    long long w1 = min(w0 + (g.kw - 1) * g.dw + 1, g.w);
    while (h0 < 0) h0 += g.dh;
    while (w0 < 0) w0 += g.dw;
    const T *plane = src + p * hw;
    T best = -INFINITY;
    long long bi = h0 * g.w + w0;
    for (long long ih = h0; ih < h1; ih += g.dh) {
      for (long long iw = w0; iw < w1; iw += g.dw) {
        T v = plane[ih * g.w + iw];
        if (v > best || v != v) {
          best = v;
          bi = ih * g.w + iw;
        }
      }
    }
    dst[i] = best;
    if (indices) indices[i] = bi;
  }
}

// plane_gather: dst[p*m+j] = src[p*n + idx[p*m+j]]; an index outside
// [0, n) reads as zero instead of faulting.
template <typename T>
__device__ void plane_gather(T *dst, const T *src, const long long *idx, long long planes,
                             long long n, long long m) {
  EMBER_FOR(i, planes * m) {
    long long p = i / m, k = idx[i];
    dst[i] = (k >= 0 && k < n) ? src[p * n + k] : (T)0;
  }
}

// plane_scatter_add: dst[p*n + idx[p*m+j]] += src[p*m+j] with atomic adds
// (repeated targets accumulate in an unspecified order); indices outside
// [0, n) are dropped.
template <typename T>
__device__ void plane_scatter_add(T *dst, const T *src, const long long *idx, long long planes,
                                  long long n, long long m) {
  EMBER_FOR(i, planes * m) {
    long long p = i / m, k = idx[i];
    if (k >= 0 && k < n) atomicAdd(dst + p * n + k, src[i]);
  }
}

// avg_window is the clipped window of output (oh, ow) and PyTorch's divisor
// (tensor/internal/cpu avgWindow).
__device__ __forceinline__ double avg_window(const PoolGeom &g, long long oh, long long ow,
                                             long long *h0, long long *h1, long long *w0,
                                             long long *w1) {
  long long a0 = oh * g.sh - g.ph, b0 = ow * g.sw - g.pw;
  long long a1 = min(a0 + g.kh, g.h + g.ph), b1 = min(b0 + g.kw, g.w + g.pw);
  long long size = (a1 - a0) * (b1 - b0);
  a0 = max(a0, 0LL);
  b0 = max(b0, 0LL);
  a1 = min(a1, g.h);
  b1 = min(b1, g.w);
  if (!g.count_include_pad) size = (a1 - a0) * (b1 - b0);
  *h0 = a0, *h1 = a1, *w0 = b0, *w1 = b1;
  return (double)size;
}

template <typename T>
__device__ void avg_pool2d(T *dst, const T *src, const PoolGeom &g) {
  long long ohw = g.oh * g.ow, hw = g.h * g.w;
  EMBER_FOR(i, g.planes * ohw) {
    long long p = i / ohw, q = i - p * ohw;
    long long oh = q / g.ow, ow = q - oh * g.ow;
    long long h0, h1, w0, w1;
    double div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
    if (h0 >= h1 || w0 >= w1) {
      dst[i] = 0;
      continue;
    }
    const T *plane = src + p * hw;
    double s = 0;
    for (long long ih = h0; ih < h1; ++ih)
      for (long long iw = w0; iw < w1; ++iw) s += (double)plane[ih * g.w + iw];
    dst[i] = (T)(s / div);
  }
}

// avg_pool2d_backward: one thread per input pixel, adding the share of every
// output whose window covers it in (oh, ow) order.
template <typename T>
__device__ void avg_pool2d_backward(T *dst, const T *grad, const PoolGeom &g) {
  long long ohw = g.oh * g.ow, hw = g.h * g.w;
  EMBER_FOR(i, g.planes * hw) {
    long long p = i / hw, q = i - p * hw;
    long long ih = q / g.w, iw = q - ih * g.w;
    // Output oh covers ih when oh*sh - ph <= ih < oh*sh - ph + kh.
    long long oh0 = max(floor_div(ih + g.ph - g.kh, g.sh) + 1, 0LL);
    long long oh1 = min(floor_div(ih + g.ph, g.sh) + 1, g.oh);
    long long ow0 = max(floor_div(iw + g.pw - g.kw, g.sw) + 1, 0LL);
    long long ow1 = min(floor_div(iw + g.pw, g.sw) + 1, g.ow);
    const T *gr = grad + p * ohw;
    T acc = dst[i];
    for (long long oh = oh0; oh < oh1; ++oh) {
      for (long long ow = ow0; ow < ow1; ++ow) {
        long long h0, h1, w0, w1;
        double div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
        if (ih < h0 || ih >= h1 || iw < w0 || iw >= w1) continue;
        acc = add_rn(acc, (T)((double)gr[oh * g.ow + ow] / div));
      }
    }
    dst[i] = acc;
  }
}

// adaptive_range is PyTorch's window [floor(i*size/n), ceil((i+1)*size/n)).
__device__ __forceinline__ void adaptive_range(long long i, long long size, long long n,
                                               long long *lo, long long *hi) {
  *lo = i * size / n;
  *hi = ((i + 1) * size + n - 1) / n;
}

template <typename T>
__device__ void adaptive_avg_pool2d(T *dst, const T *src, long long planes, long long h,
                                    long long w, long long oh, long long ow) {
  long long ohw = oh * ow, hw = h * w;
  EMBER_FOR(i, planes * ohw) {
    long long p = i / ohw, q = i - p * ohw;
    long long y = q / ow, x = q - y * ow;
    long long h0, h1, w0, w1;
    adaptive_range(y, h, oh, &h0, &h1);
    adaptive_range(x, w, ow, &w0, &w1);
    const T *plane = src + p * hw;
    double s = 0;
    for (long long ih = h0; ih < h1; ++ih)
      for (long long iw = w0; iw < w1; ++iw) s += (double)plane[ih * w + iw];
    dst[i] = (T)(s / (double)((h1 - h0) * (w1 - w0)));
  }
}

// adaptive_avg_pool2d_backward: one thread per input pixel. Output row y
// covers ih exactly for floor(ih*oh/h) <= y < ceil((ih+1)*oh/h).
template <typename T>
__device__ void adaptive_avg_pool2d_backward(T *dst, const T *grad, long long planes,
                                             long long h, long long w, long long oh,
                                             long long ow) {
  long long ohw = oh * ow, hw = h * w;
  EMBER_FOR(i, planes * hw) {
    long long p = i / hw, q = i - p * hw;
    long long ih = q / w, iw = q - ih * w;
    long long y0 = ih * oh / h, y1 = min(((ih + 1) * oh + h - 1) / h, oh);
    long long x0 = iw * ow / w, x1 = min(((iw + 1) * ow + w - 1) / w, ow);
    const T *gr = grad + p * ohw;
    T acc = dst[i];
    for (long long y = y0; y < y1; ++y) {
      long long h0, h1;
      adaptive_range(y, h, oh, &h0, &h1);
      for (long long x = x0; x < x1; ++x) {
        long long w0, w1;
        adaptive_range(x, w, ow, &w0, &w1);
        acc = add_rn(acc, (T)((double)gr[y * ow + x] / (double)((h1 - h0) * (w1 - w0))));
      }
    }
    dst[i] = acc;
  }
}

// ---- Reductions over the middle axis of [outer, n, inner] ------------------

#define NN_THREADS 256

// nan_max is the maximum with NaN winning, as the CPU's "v > m || v != v".
__device__ __forceinline__ double nan_max(double m, double v) { return (v > m || v != v) ? v : m; }

// block_reduce combines v over the block with op (sum or nan_max) and
// returns the result to every thread. Launch with NN_THREADS threads.
template <bool IsMax>
__device__ double block_reduce(double v) {
  __shared__ double s[NN_THREADS];
  int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int half = NN_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) s[t] = IsMax ? nan_max(s[t], s[t + half]) : s[t] + s[t + half];
    __syncthreads();
  }
  double r = s[0];
  __syncthreads();
  return r;
}

// softmax_lanes: one thread per (outer, inner) lane, three passes over n in
// float64, as the CPU's strided path.
template <typename T>
__device__ void softmax_lanes(bool lg, T *dst, const T *src, long long outer, long long n,
                              long long inner) {
  EMBER_FOR(i, outer * inner) {
    long long a = i / inner, c = i - a * inner;
    const T *s = src + a * n * inner + c;
    T *d = dst + a * n * inner + c;
    double mx = -INFINITY, sum = 0;
    for (long long k = 0; k < n; ++k) mx = nan_max(mx, (double)s[k * inner]);
    for (long long k = 0; k < n; ++k) sum += exp((double)s[k * inner] - mx);
    if (lg) {
      double ls = log(sum);
      for (long long k = 0; k < n; ++k) d[k * inner] = (T)((double)s[k * inner] - mx - ls);
    } else {
      for (long long k = 0; k < n; ++k) d[k * inner] = (T)(exp((double)s[k * inner] - mx) / sum);
    }
  }
}

// softmax_rows: one block per contiguous row (inner == 1), block reductions
// in float64.
template <typename T>
__device__ void softmax_rows(bool lg, T *dst, const T *src, long long outer, long long n) {
  for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
    const T *s = src + r * n;
    T *d = dst + r * n;
    double mx = -INFINITY;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) mx = nan_max(mx, (double)s[k]);
    mx = block_reduce<true>(mx);
    double sum = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) sum += exp((double)s[k] - mx);
    sum = block_reduce<false>(sum);
    if (lg) {
      double c = mx + log(sum);
      for (long long k = threadIdx.x; k < n; k += blockDim.x) d[k] = (T)((double)s[k] - c);
    } else {
      double inv = 1 / sum;
      for (long long k = threadIdx.x; k < n; k += blockDim.x) d[k] = (T)(exp((double)s[k] - mx) * inv);
    }
  }
}

// moments: one block per middle index j, two passes in float64.
template <typename T>
__device__ void moments(T *mean, T *variance, const T *src, long long outer, long long n,
                        long long inner) {
  long long cnt = outer * inner;
  for (long long j = blockIdx.x; j < n; j += gridDim.x) {
    double s = 0;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      long long a = e / inner, c = e - a * inner;
      s += (double)src[(a * n + j) * inner + c];
    }
    double mu = block_reduce<false>(s) / (double)cnt;
    double q = 0;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      long long a = e / inner, c = e - a * inner;
      double d = (double)src[(a * n + j) * inner + c] - mu;
      q += d * d;
    }
    q = block_reduce<false>(q);
    if (threadIdx.x == 0) {
      mean[j] = (T)mu;
      variance[j] = (T)(q / (double)cnt);
    }
  }
}

// scale_shift: dst = src*scale[j] + shift[j], rounded after the product as
// on the CPU; a null scale is ones and a null shift zeros.
template <typename T>
__device__ void scale_shift(T *dst, const T *src, const T *scale, const T *shift,
                            long long outer, long long n, long long inner) {
  EMBER_FOR(i, outer * n * inner) {
    long long j = (i / inner) % n;
    T k = scale ? scale[j] : (T)1;
    T b = shift ? shift[j] : (T)0;
    dst[i] = add_rn(mul_rn(src[i], k), b);
  }
}

// norm_backward: one block per middle index j (tensor.NNKernels).
template <typename T>
__device__ void norm_backward(T *dx, T *sum_g, T *sum_gx, const T *grad, const T *x,
                              const T *mean, const T *rstd, const T *scale, long long outer,
                              long long n, long long inner) {
  long long cnt = outer * inner;
  for (long long j = blockIdx.x; j < n; j += gridDim.x) {
    double m = mean ? (double)mean[j] : 0.0;
    double r = rstd ? (double)rstd[j] : 1.0;
    double k = scale ? (double)scale[j] : 1.0;
    double s1 = 0, s2 = 0;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      long long a = e / inner, c = e - a * inner;
      long long off = (a * n + j) * inner + c;
      double g = (double)grad[off];
      s1 += g;
      s2 += __dmul_rn(g, (double)x[off] - m);
    }
    s1 = block_reduce<false>(s1);
    s2 = __dmul_rn(block_reduce<false>(s2), r);
    if (threadIdx.x == 0) {
      if (sum_g) sum_g[j] = (T)s1;
      if (sum_gx) sum_gx[j] = (T)s2;
    }
    if (!dx) continue;
    double kr = __dmul_rn(k, r);
    double m1 = s1 / (double)cnt, m2 = s2 / (double)cnt;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      long long a = e / inner, c = e - a * inner;
      long long off = (a * n + j) * inner + c;
      double xh = __dmul_rn((double)x[off] - m, r);
      double t = __dadd_rn((double)grad[off] - m1, -__dmul_rn(xh, m2));
      dx[off] = (T)__dmul_rn(kr, t);
    }
  }
}

#define NN_FLOAT(TN, T)                                                                     \
  extern "C" __global__ void im2col_##TN(T *dst, const T *src, ConvGeom g) {                \
    im2col<T>(dst, src, g);                                                                 \
  }                                                                                         \
  extern "C" __global__ void col2im_##TN(T *dst, const T *src, ConvGeom g) {                \
    col2im<T>(dst, src, g);                                                                 \
  }                                                                                         \
  extern "C" __global__ void max_pool2d_##TN(T *dst, long long *indices, const T *src,      \
                                             PoolGeom g) {                                  \
    max_pool2d<T>(dst, indices, src, g);                                                    \
  }                                                                                         \
  extern "C" __global__ void plane_gather_##TN(T *dst, const T *src, const long long *idx,  \
                                               long long planes, long long n, long long m) { \
    plane_gather<T>(dst, src, idx, planes, n, m);                                           \
  }                                                                                         \
  extern "C" __global__ void plane_scatter_add_##TN(T *dst, const T *src,                   \
                                                    const long long *idx, long long planes, \
                                                    long long n, long long m) {             \
    plane_scatter_add<T>(dst, src, idx, planes, n, m);                                      \
  }                                                                                         \
  extern "C" __global__ void avg_pool2d_##TN(T *dst, const T *src, PoolGeom g) {            \
    avg_pool2d<T>(dst, src, g);                                                             \
  }                                                                                         \
  extern "C" __global__ void avg_pool2d_backward_##TN(T *dst, const T *grad, PoolGeom g) {  \
    avg_pool2d_backward<T>(dst, grad, g);                                                   \
  }                                                                                         \
  extern "C" __global__ void adaptive_avg_pool2d_##TN(T *dst, const T *src, long long planes, \
                                                      long long h, long long w,             \
                                                      long long oh, long long ow) {         \
    adaptive_avg_pool2d<T>(dst, src, planes, h, w, oh, ow);                                 \
  }                                                                                         \
  extern "C" __global__ void adaptive_avg_pool2d_backward_##TN(                             \
      T *dst, const T *grad, long long planes, long long h, long long w, long long oh,      \
      long long ow) {                                                                       \
    adaptive_avg_pool2d_backward<T>(dst, grad, planes, h, w, oh, ow);                       \
  }                                                                                         \
  extern "C" __global__ void softmax_lanes_##TN(int lg, T *dst, const T *src,               \
                                                long long outer, long long n,               \
                                                long long inner) {                          \
    softmax_lanes<T>(lg != 0, dst, src, outer, n, inner);                                   \
  }                                                                                         \
  extern "C" __global__ void softmax_rows_##TN(int lg, T *dst, const T *src,                \
                                               long long outer, long long n) {              \
    softmax_rows<T>(lg != 0, dst, src, outer, n);                                           \
  }                                                                                         \
  extern "C" __global__ void moments_##TN(T *mean, T *variance, const T *src,               \
                                          long long outer, long long n, long long inner) {  \
    moments<T>(mean, variance, src, outer, n, inner);                                       \
  }                                                                                         \
  extern "C" __global__ void scale_shift_##TN(T *dst, const T *src, const T *scale,         \
                                              const T *shift, long long outer, long long n, \
                                              long long inner) {                            \
    scale_shift<T>(dst, src, scale, shift, outer, n, inner);                                \
  }                                                                                         \
  extern "C" __global__ void norm_backward_##TN(                                            \
      T *dx, T *sum_g, T *sum_gx, const T *grad, const T *x, const T *mean, const T *rstd,  \
      const T *scale, long long outer, long long n, long long inner) {                      \
    norm_backward<T>(dx, sum_g, sum_gx, grad, x, mean, rstd, scale, outer, n, inner);       \
  }
NN_FLOAT(f32, float)
NN_FLOAT(f64, double)
