// Fused in-place updates: Adam/AdamW, SGD and gradient accumulation. Every
// product, quotient and sum is rounded on its own (explicit _rn intrinsics,
// so nvcc cannot contract them into fused multiply-adds), in the order of
// tensor/fused.go, so that results match the CPU bit for bit. The scalars
// arrive already rounded to T by the Go side. See cuda/backend_fused.go.
#include "common.cuh"

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// go_max is Go's built-in max on floats: NaN if either operand is NaN, and
// +0 over -0.
template <typename T>
__device__ __forceinline__ T go_max(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

// Flags of the Adam kernel (adamFlags in backend_fused.go).
#define ADAM_MAXIMIZE 1
#define ADAM_DECOUPLED 2
#define ADAM_L2 4
#define ADAM_AMSGRAD 8

// adam: one Adam/AdamW step over n contiguous elements (tensor.AdamUpdate).
// mx is null unless AMSGrad.
template <typename T>
__device__ void adam(long long n, T *w, const T *g, T *m, T *v, T *mx, T b1, T b2, T c1, T c2,
                     T decay, T wd, T bc2, T step_size, T eps, int flags) {
  bool maximize = flags & ADAM_MAXIMIZE, decoupled = flags & ADAM_DECOUPLED;
  bool l2 = flags & ADAM_L2, ams = (flags & ADAM_AMSGRAD) && mx;
  EMBER_FOR(i, n) {
    T gi = g[i];
    if (maximize) gi = -gi;
    T wi = w[i];
    if (decoupled) {
      wi = mul_rn(wi, decay);
    } else if (l2) {
      gi = add_rn(gi, mul_rn(wi, wd));
    }
    T mi = add_rn(mul_rn(m[i], b1), mul_rn(gi, c1));
    T vi = add_rn(mul_rn(v[i], b2), mul_rn(mul_rn(gi, gi), c2));
    m[i] = mi;
    v[i] = vi;
    T vh = vi;
    if (ams) {
      vh = go_max(mx[i], vi);
      mx[i] = vh;
    }
    T denom = add_rn(div_rn(sqrt_rn(vh), bc2), eps);
    w[i] = sub_rn(wi, mul_rn(div_rn(mi, denom), step_size));
  }
}

// Flags of the SGD kernel (sgdFlags in backend_fused.go).
#define SGD_MAXIMIZE 1
#define SGD_L2 2
#define SGD_MOMENTUM 4
#define SGD_NESTEROV 8
#define SGD_INIT 16

// sgd: one SGD step over n contiguous elements (tensor.SGDUpdate). buf is
// null unless momentum is on.
template <typename T>
__device__ void sgd(long long n, T *w, const T *g, T *buf, T wd, T mom, T damp, T lr,
                    int flags) {
  bool maximize = flags & SGD_MAXIMIZE, l2 = flags & SGD_L2;
  bool momentum = (flags & SGD_MOMENTUM) && buf, nesterov = flags & SGD_NESTEROV;
  bool init = flags & SGD_INIT;
  EMBER_FOR(i, n) {
    T d = g[i];
    if (maximize) d = -d;
    if (l2) d = add_rn(d, mul_rn(w[i], wd));
    if (momentum) {
      T b = d;
      if (!init) b = add_rn(mul_rn(buf[i], mom), mul_rn(d, damp));
      buf[i] = b;
      d = nesterov ? add_rn(d, mul_rn(b, mom)) : b;
    }
    w[i] = sub_rn(w[i], mul_rn(d, lr));
  }
}

// add_into: dst[i] += src(i) for the row-major position i of the view s.
template <typename T>
__device__ void add_into(long long n, T *dst, const T *src, const Strided &s) {
  EMBER_FOR(i, n) dst[i] = add_rn(dst[i], src[strided_offset(s, i)]);
}

#define FUSED(TN, T)                                                                        \
  extern "C" __global__ void adam_##TN(long long n, T *w, const T *g, T *m, T *v, T *mx,    \
                                       T b1, T b2, T c1, T c2, T decay, T wd, T bc2,        \
                                       T step_size, T eps, int flags) {                     \
    adam<T>(n, w, g, m, v, mx, b1, b2, c1, c2, decay, wd, bc2, step_size, eps, flags);      \
  }                                                                                         \
  extern "C" __global__ void sgd_##TN(long long n, T *w, const T *g, T *buf, T wd, T mom,   \
                                      T damp, T lr, int flags) {                            \
    sgd<T>(n, w, g, buf, wd, mom, damp, lr, flags);                                         \
  }                                                                                         \
  extern "C" __global__ void add_into_##TN(long long n, T *dst, const T *src, Strided s) {  \
    add_into<T>(n, dst, src, s);                                                            \
  }
FUSED(f32, float)
FUSED(f64, double)
