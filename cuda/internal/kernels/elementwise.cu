// Elementwise kernels of the CUDA backend (cuda/backend_elementwise.go):
// copies with dtype conversion, strided stores, fills, unary and binary
// maps, where, row reductions, arg-reductions and scans. Every kernel
// mirrors the CPU backend (tensor/cpu_backend.go, tensor/internal/cpu)
// element for element: conversions and exact operations give the same bits,
// transcendental functions agree to a few ulps.
//
// Dtype tags in kernel names: f32 float, f64 double, i64 long long, i32 int,
// b8 bool (one byte, 0 or 1), f16 and bf16 (uint16 bits). Kernels that only
// move bits are named by element size: u8, u16, u32, u64.
#include "common.cuh"

namespace ew {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// ---- index helpers -------------------------------------------------------

// offset32 is strided_offset for views of fewer than 2^31 elements, whose
// index arithmetic fits 32-bit division (much cheaper than 64-bit).
__device__ __forceinline__ long long offset32(const Strided &v, unsigned i) {
  long long off = v.offset;
  for (int d = v.rank - 1; d >= 0; --d) {
    unsigned s = (unsigned)v.shape[d];
    unsigned q = i / s;
    off += (long long)(i - q * s) * v.strides[d];
    i = q;
  }
  return off;
}

// at returns the element offset of linear index i of view v, which has n
// elements; contiguous views skip the division chain.
__device__ __forceinline__ long long at(const Strided &v, long long i, bool contig, long long n) {
  if (contig) return v.offset + i;
  if (n < 0x80000000LL) return offset32(v, (unsigned)i);
  return strided_offset(v, i);
}

// ---- conversions (tensor.castCopy) --------------------------------------

// f2i64 is Go's int64(float64) on amd64: truncation toward zero, and
// math.MinInt64 for NaN and values out of range.
__device__ __forceinline__ long long f2i64(double v) {
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return (long long)v;
  return (long long)0x8000000000000000ULL;
}

// f2i32 is Go's int32(float64) on amd64: truncation toward zero, and
// math.MinInt32 for NaN and values out of range.
__device__ __forceinline__ int f2i32(double v) {
  if (v > -2147483649.0 && v < 2147483648.0) return (int)v;
  return (int)0x80000000U;
}

// f32_to_f16 is tensor.Float16FromFloat32: round to nearest even, NaN
// becomes the quiet NaN sign|0x7e00.
__device__ __forceinline__ u16 f32_to_f16(float f) {
  u32 b = __float_as_uint(f);
  u16 sign = (u16)(b >> 16) & 0x8000;
  int exp = (int)((b >> 23) & 0xff);
  u32 mant = b & 0x7fffff;
  if (exp == 0xff) return mant != 0 ? (u16)(sign | 0x7e00) : (u16)(sign | 0x7c00);
  if (exp == 0 && mant == 0) return sign;
  int e = exp - 127 + 15;
  if (e >= 0x1f) return (u16)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return sign;
    u32 m = mant | 0x800000;
    u32 shift = (u32)(14 - e);
    u32 half = m >> shift;
    u32 rem = m & ((1u << shift) - 1);
    u32 mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1) == 1)) half++;
    return (u16)(sign | (u16)half);
  }
  u32 half = ((u32)e << 10) | (mant >> 13);
  u32 rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1) == 1)) half++;
  return (u16)(sign | (u16)half);
}

// f16_to_f32 is tensor.Float16ToFloat32 (exact; NaN payloads kept).
__device__ __forceinline__ float f16_to_f32(u16 h) {
  u32 sign = (u32)(h & 0x8000) << 16;
  u32 exp = (u32)(h >> 10) & 0x1f;
  u32 mant = (u32)(h & 0x3ff);
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return __uint_as_float(sign);
    float f = (float)mant * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -f : f;
  }
  return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// f32_to_bf16 is tensor.BFloat16FromFloat32: round to nearest even, NaN
// keeps its top bits and is made quiet.
__device__ __forceinline__ u16 f32_to_bf16(float f) {
  u32 b = __float_as_uint(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40);
  b += 0x7fffu + ((b >> 16) & 1);
  return (u16)(b >> 16);
}

__device__ __forceinline__ float bf16_to_f32(u16 h) { return __uint_as_float((u32)h << 16); }

// Dtype tags. Each has the storage type S, whether it is a float (read as
// double) or an integer or bool (read as long long), and the conversions.
struct F32 {
  typedef float S;
  static constexpr bool isf = true;
  __device__ static double getf(S v) { return (double)v; }
  __device__ static S fromf(double v) { return (float)v; }
  __device__ static S fromi(long long v) { return (float)v; }
};
struct F64 {
  typedef double S;
  static constexpr bool isf = true;
  __device__ static double getf(S v) { return v; }
  __device__ static S fromf(double v) { return v; }
  __device__ static S fromi(long long v) { return (double)v; }
};
struct I64 {
  typedef long long S;
  static constexpr bool isf = false;
  __device__ static long long geti(S v) { return v; }
  __device__ static S fromf(double v) { return f2i64(v); }
  __device__ static S fromi(long long v) { return v; }
};
struct I32 {
  typedef int S;
  static constexpr bool isf = false;
  __device__ static long long geti(S v) { return (long long)v; }
  __device__ static S fromf(double v) { return f2i32(v); }
  __device__ static S fromi(long long v) { return (int)(u32)(u64)v; }
};
struct B8 {
  typedef u8 S;
  static constexpr bool isf = false;
  __device__ static long long geti(S v) { return v != 0 ? 1 : 0; }
  __device__ static S fromf(double v) { return v != 0.0 ? 1 : 0; }  // NaN is true
  __device__ static S fromi(long long v) { return v != 0 ? 1 : 0; }
};
struct F16 {
  typedef u16 S;
  static constexpr bool isf = true;
  __device__ static double getf(S v) { return (double)f16_to_f32(v); }
  __device__ static S fromf(double v) { return f32_to_f16((float)v); }
  __device__ static S fromi(long long v) { return f32_to_f16((float)v); }
};
struct BF16 {
  typedef u16 S;
  static constexpr bool isf = true;
  __device__ static double getf(S v) { return (double)bf16_to_f32(v); }
  __device__ static S fromf(double v) { return f32_to_bf16((float)v); }
  __device__ static S fromi(long long v) { return f32_to_bf16((float)v); }
};

template <typename D, typename Sr>
__device__ __forceinline__ typename D::S convert(typename Sr::S v) {
  if constexpr (Sr::isf) {
    return D::fromf(Sr::getf(v));
  } else {
    return D::fromi(Sr::geti(v));
  }
}

template <typename D, typename Sr>
__device__ void copy_convert(typename D::S *dst, const typename Sr::S *src, Strided l, long long n, int contig) {
  EMBER_FOR(i, n) { dst[i] = convert<D, Sr>(src[at(l, i, contig, n)]); }
}

// ---- bit moves: gather, strided store, fill ------------------------------

template <typename T>
__device__ void gather(T *dst, const T *src, Strided l, long long n, int contig) {
  EMBER_FOR(i, n) { dst[i] = src[at(l, i, contig, n)]; }
}

template <typename T>
__device__ void assign(T *dst, Strided dl, const T *src, Strided sl, long long n, int contig) {
  EMBER_FOR(i, n) { dst[at(dl, i, contig & 1, n)] = src[at(sl, i, contig & 2, n)]; }
}

template <typename T>
__device__ void fill(T *dst, u64 bits, long long n) {
  T v = (T)bits;
  EMBER_FOR(i, n) { dst[i] = v; }
}

// ---- unary (tensor.unaryF32, unaryF64, unaryInt) -------------------------

// The UnaryKind values of tensor/device.go.
enum UnaryKind {
  kNeg, kAbs, kSign, kExp, kLog, kLog1p, kExpm1, kSqrt, kRsqrt, kSin, kCos, kTanh, kSigmoid, kRelu,
  kFloor, kCeil, kRound, kClamp, kPowScalar, kAffine, kLogicalNot, kRecip, kSquare, kErf
};

// gomax and gomin are Go's max and min builtins (and math.Max, math.Min)
// for floats: NaN wins, and +0 is larger than -0.
template <typename T>
__device__ __forceinline__ T gomax(T x, T y) {
  if (x != x) return x;
  if (y != y) return y;
  if (x == 0 && y == 0) return signbit(x) ? y : x;
  return x > y ? x : y;
}
template <typename T>
__device__ __forceinline__ T gomin(T x, T y) {
  if (x != x) return x;
  if (y != y) return y;
  if (x == 0 && y == 0) return signbit(x) ? x : y;
  return x < y ? x : y;
}

__device__ double unary_f64_op(int kind, double x, double a, double b) {
  switch (kind) {
    case kNeg: return -x;
    case kAbs: return fabs(x);
    case kSign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);  // zeros and NaN give +0
    case kExp: return exp(x);
    case kLog: return log(x);
    case kLog1p: return log1p(x);
    case kExpm1: return expm1(x);
    case kSqrt: return __dsqrt_rn(x);
    case kRsqrt: return __ddiv_rn(1.0, __dsqrt_rn(x));
    case kSin: return sin(x);
    case kCos: return cos(x);
    case kTanh: return tanh(x);
    case kSigmoid:
      if (x >= 0) return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-x)));
      else {
        double e = exp(x);
        return __ddiv_rn(e, __dadd_rn(1.0, e));
      }
    case kRelu: return (x > 0 || x != x) ? x : 0.0;
    case kFloor: return floor(x);
    case kCeil: return ceil(x);
    case kRound: return rint(x);  // half to even
    case kClamp: return x != x ? x : gomin(gomax(x, a), b);
    case kPowScalar:
      if (a == 2) return __dmul_rn(x, x);
      if (a == 3) return __dmul_rn(__dmul_rn(x, x), x);
      if (a == 0.5) return __dsqrt_rn(x);
      if (a == -0.5) return __ddiv_rn(1.0, __dsqrt_rn(x));
      if (a == -1) return __ddiv_rn(1.0, x);
      if (a == -2) return __ddiv_rn(1.0, __dmul_rn(x, x));
      return pow(x, a);
    case kAffine: return __dadd_rn(__dmul_rn(x, a), b);
    case kRecip: return __ddiv_rn(1.0, x);
    case kSquare: return __dmul_rn(x, x);
    case kErf: return erf(x);
  }
  return x;
}

__device__ float unary_f32_op(int kind, float x, double a64, double b64) {
  float a = (float)a64, b = (float)b64;
  switch (kind) {
    case kNeg: return -x;
    case kAbs: return fabsf(x);
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kSqrt: return __fsqrt_rn(x);
    case kRsqrt: return __fdiv_rn(1.0f, __fsqrt_rn(x));
    case kTanh: return tanhf(x);
    case kSigmoid:
      if (x >= 0) return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
      else {
        float e = expf(x);
        return __fdiv_rn(e, __fadd_rn(1.0f, e));
      }
    case kRelu: return (x > 0 || x != x) ? x : 0.0f;
    case kClamp: return x != x ? x : gomin(gomax(x, a), b);
    case kAffine: return __fadd_rn(__fmul_rn(x, a), b);
    case kRecip: return __fdiv_rn(1.0f, x);
    case kSquare: return __fmul_rn(x, x);
  }
  // The CPU computes the rest in float64 and rounds once.
  return (float)unary_f64_op(kind, (double)x, a64, b64);
}

// Wrapping integer arithmetic (signed overflow is undefined in C++).
template <typename T>
__device__ __forceinline__ T wadd(T x, T y) { return (T)((u64)(long long)x + (u64)(long long)y); }
template <typename T>
__device__ __forceinline__ T wsub(T x, T y) { return (T)((u64)(long long)x - (u64)(long long)y); }
template <typename T>
__device__ __forceinline__ T wmul(T x, T y) { return (T)((u64)(long long)x * (u64)(long long)y); }
template <typename T>
__device__ __forceinline__ T wneg(T x) { return (T)(0 - (u64)(long long)x); }

// ipow is tensor.intPow: repeated squaring that wraps, and PyTorch's rule
// for negative exponents.
template <typename T>
__device__ T ipow(T x, T e) {
  if (e < 0) {
    if (x == 1) return 1;
    if (x == -1) return (e % 2 == 0) ? 1 : -1;
    return 0;
  }
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wmul(r, x);
    x = wmul(x, x);
    e >>= 1;
  }
  return r;
}

// unary_int_op: ia and ib are the operands converted on the Go side
// (Clamp: the saturated bounds; Affine: scale and shift; PowScalar: ia).
template <typename T>
__device__ T unary_int_op(int kind, T x, T ia, T ib) {
  switch (kind) {
    case kNeg: return wneg(x);
    case kAbs: return x < 0 ? wneg(x) : x;
    case kSign: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case kRelu: return x > 0 ? x : 0;
    case kClamp: {
      T y = x > ia ? x : ia;
      return y < ib ? y : ib;
    }
    case kAffine: return wadd(wmul(x, ia), ib);
    case kSquare: return wmul(x, x);
    case kPowScalar: return ipow(x, ia);
  }
  return x;  // Floor, Ceil, Round
}

// ---- binary (tensor.binF32, binF64, binInt, the bool table) --------------

// The BinaryOp values of tensor/device.go.
enum BinaryOp { kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kXor };

__device__ __forceinline__ float bin_f32(int op, float x, float y) {
  switch (op) {
    case kAdd: return __fadd_rn(x, y);
    case kSub: return __fsub_rn(x, y);
    case kMul: return __fmul_rn(x, y);
    case kDiv: return __fdiv_rn(x, y);
    case kPow: return (float)pow((double)x, (double)y);
    case kMaximum: return gomax(x, y);
    case kMinimum: return gomin(x, y);
  }
  return 0;
}

__device__ __forceinline__ double bin_f64(int op, double x, double y) {
  switch (op) {
    case kAdd: return __dadd_rn(x, y);
    case kSub: return __dsub_rn(x, y);
    case kMul: return __dmul_rn(x, y);
    case kDiv: return __ddiv_rn(x, y);
    case kPow: return pow(x, y);
    case kMaximum: return gomax(x, y);
    case kMinimum: return gomin(x, y);
  }
  return 0;
}

// floordiv is tensor.binInt's OpDiv. Division by zero gives 0 (the CPU
// panics); MinInt / -1 wraps to MinInt as in Go.
template <typename T>
__device__ __forceinline__ T floordiv(T x, T y) {
  if (y == 0) return 0;
  if (y == -1) return wneg(x);
  T q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

template <typename T>
__device__ __forceinline__ T bin_int(int op, T x, T y) {
  switch (op) {
    case kAdd: return wadd(x, y);
    case kSub: return wsub(x, y);
    case kMul: return wmul(x, y);
    case kDiv: return floordiv(x, y);
    case kPow: return ipow(x, y);
    case kMaximum: return x > y ? x : y;
    case kMinimum: return x < y ? x : y;
  }
  return 0;
}

template <typename T>
__device__ __forceinline__ T bin_num(int op, T x, T y) {
  if constexpr (sizeof(T) == 4 && ((T)0.5) != 0) {
    return bin_f32(op, x, y);
  } else if constexpr (((T)0.5) != 0) {
    return bin_f64(op, x, y);
  } else {
    return bin_int(op, x, y);
  }
}

// cmp is binaryNum's comparison and logical table (logical ops treat
// nonzero, NaN included, as true).
template <typename T>
__device__ __forceinline__ u8 cmp(int op, T x, T y) {
  switch (op) {
    case kEq: return x == y;
    case kNe: return x != y;
    case kLt: return x < y;
    case kLe: return x <= y;
    case kGt: return x > y;
    case kGe: return x >= y;
    case kAnd: return x != 0 && y != 0;
    case kOr: return x != 0 || y != 0;
    case kXor: return (x != 0) != (y != 0);
  }
  return 0;
}

// bool_op is the CPU's table for Bool operands.
__device__ __forceinline__ u8 bool_op(int op, bool x, bool y) {
  switch (op) {
    case kAnd: case kMul: case kMinimum: return x && y;
    case kOr: case kAdd: case kMaximum: return x || y;
    case kXor: case kNe: return x != y;
    case kEq: return x == y;
    case kLt: return !x && y;
    case kLe: return !x || y;
    case kGt: return x && !y;
    case kGe: return x || !y;
  }
  return 0;
}

// ---- reductions -----------------------------------------------------------

template <typename T> __device__ __forceinline__ bool isnan_(T v) { return v != v; }

// Reduction accumulators: float sums in double (as the CPU), integer sums
// and products wrap.
template <typename T> struct SumAcc { typedef T A; };
template <> struct SumAcc<float> { typedef double A; };

template <typename A>
__device__ __forceinline__ A shfl_down(A v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }

template <typename T>
__device__ __forceinline__ T red_combine(int op, T x, T y) {
  if (op == 0) return bin_num(kAdd, x, y);
  if (op == 1) return bin_num(kMul, x, y);
  if (op == 2) return x > y ? x : y;  // integers only
  return x < y ? x : y;
}

// warp_reduce folds v over the 32 lanes of a warp into lane 0.
template <typename A>
__device__ __forceinline__ A warp_reduce(int op, A v) {
  for (int d = 16; d > 0; d >>= 1) v = red_combine(op, v, shfl_down(v, d));
  return v;
}

// Extremum with its index: the first NaN wins, then the first max (or min).
template <typename T>
struct Ext {
  T v;
  long long i;
};

template <typename T>
__device__ __forceinline__ Ext<T> ext_combine(bool max, Ext<T> a, Ext<T> b) {
  if (b.i < 0) return a;
  if (a.i < 0) return b;
  bool an = isnan_(a.v), bn = isnan_(b.v);
  if (an || bn) {
    if (an && bn) return a.i <= b.i ? a : b;
    return an ? a : b;
  }
  if (max ? b.v > a.v : b.v < a.v) return b;
  if (max ? a.v > b.v : a.v < b.v) return a;
  return a.i <= b.i ? a : b;
}

template <typename T>
__device__ __forceinline__ Ext<T> warp_ext(bool max, Ext<T> e) {
  for (int d = 16; d > 0; d >>= 1) {
    Ext<T> o;
    o.v = shfl_down(e.v, d);
    o.i = shfl_down(e.i, d);
    e = ext_combine(max, e, o);
  }
  return e;
}

// row_extremum finds the extremum of src[0:n] with a group of lanes: the
// whole block when block is true (result valid in thread 0), else one warp
// (result valid in lane 0). Element k has index idx[k], or k if idx is null.
template <typename T>
__device__ Ext<T> row_extremum(bool max, const T *src, long long n, bool block, const long long *idx = nullptr) {
  int lane = threadIdx.x & 31;
  long long start = block ? threadIdx.x : lane;
  long long step = block ? blockDim.x : 32;
  Ext<T> e;
  e.v = 0;
  e.i = -1;
  for (long long k = start; k < n; k += step) {
    Ext<T> x;
    x.v = src[k];
    x.i = idx ? idx[k] : k;
    e = ext_combine(max, e, x);
  }
  e = warp_ext(max, e);
  if (!block) return e;
  __shared__ T sv[32];
  __shared__ long long si[32];
  int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) {
    sv[w] = e.v;
    si[w] = e.i;
  }
  __syncthreads();
  if (w == 0) {
    if (lane < nw) {
      e.v = sv[lane];
      e.i = si[lane];
    } else {
      e.v = 0;
      e.i = -1;
    }
    e = warp_ext(max, e);
  }
  return e;
}

// row_fold folds src[0:n] with op (sum, prod, or integer max/min) in
// accumulator type A, like row_extremum.
template <typename T, typename A>
__device__ A row_fold(int op, const T *src, long long n, bool block, A identity) {
  int lane = threadIdx.x & 31;
  long long start = block ? threadIdx.x : lane;
  long long step = block ? blockDim.x : 32;
  A acc = identity;
  for (long long k = start; k < n; k += step) acc = red_combine(op, acc, (A)src[k]);
  acc = warp_reduce(op, acc);
  if (!block) return acc;
  __shared__ A s[32];
  int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) s[w] = acc;
  __syncthreads();
  if (w == 0) {
    acc = lane < nw ? s[lane] : identity;
    acc = warp_reduce(op, acc);
  }
  return acc;
}

// reduce reduces rows of the contiguous [outer, n] src. With block set,
// block b handles rows b, b+gridDim.x, ...; otherwise each warp handles
// one row at a time. op: 0 sum, 1 prod, 2 max, 3 min (n > 0 for 2 and 3).
template <typename T>
__device__ void reduce(T *dst, const T *src, long long outer, long long n, int op, int block) {
  long long first, step;
  if (block) {
    first = blockIdx.x;
    step = gridDim.x;
  } else {
    long long wpb = blockDim.x >> 5;
    first = (long long)blockIdx.x * wpb + (threadIdx.x >> 5);
    step = (long long)gridDim.x * wpb;
  }
  bool leader = block ? threadIdx.x == 0 : (threadIdx.x & 31) == 0;
  for (long long r = first; r < outer; r += step) {
    const T *row = src + r * n;
    T out;
    if (op >= 2 && ((T)0.5) != 0) {  // float max/min: NaN and -0 aware
      out = row_extremum<T>(op == 2, row, n, block).v;
    } else if (op >= 2) {
      out = row_fold<T, T>(op, row, n, block, row[0]);
    } else {
      typedef typename SumAcc<T>::A A;
      if (op == 0) {
        out = (T)row_fold<T, A>(0, row, n, block, (A)0);
      } else {
        out = row_fold<T, T>(1, row, n, block, (T)1);
      }
    }
    if (leader) dst[r] = out;
  }
}

// Two-pass row reductions for few long rows: pass one reduces chunks of
// chunk elements (block b handles (row, chunk) pairs b, b+gridDim.x, ...)
// into partials, in the accumulator type for sums (double for float32)
// and the element type otherwise; pass two reduces each row's chunks
// partials in chunk order, so ties and NaN keep the first-element rule.
template <typename T>
__device__ void reduce_part(void *part, const T *src, long long outer, long long n, int op, long long chunks,
                            long long chunk) {
  typedef typename SumAcc<T>::A A;
  for (long long j = blockIdx.x; j < outer * chunks; j += gridDim.x) {
    long long r = j / chunks, c = j - r * chunks;
    const T *seg = src + r * n + c * chunk;
    long long len = min(chunk, n - c * chunk);
    if (op == 0) {
      A v = row_fold<T, A>(0, seg, len, true, (A)0);
      if (threadIdx.x == 0) ((A *)part)[j] = v;
    } else {
      T v;
      if (op == 1) {
        v = row_fold<T, T>(1, seg, len, true, (T)1);
      } else if (((T)0.5) != 0) {
        v = row_extremum<T>(op == 2, seg, len, true).v;
      } else {
        v = row_fold<T, T>(op, seg, len, true, seg[0]);
      }
      if (threadIdx.x == 0) ((T *)part)[j] = v;
    }
  }
}

template <typename T>
__device__ void reduce_final(T *dst, const void *part, long long outer, long long chunks, int op) {
  typedef typename SumAcc<T>::A A;
  for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
    T out;
    if (op == 0) {
      out = (T)row_fold<A, A>(0, (const A *)part + r * chunks, chunks, true, (A)0);
    } else {
      const T *p = (const T *)part + r * chunks;
      if (op == 1) {
        out = row_fold<T, T>(1, p, chunks, true, (T)1);
      } else if (((T)0.5) != 0) {
        out = row_extremum<T>(op == 2, p, chunks, true).v;
      } else {
        out = row_fold<T, T>(op, p, chunks, true, p[0]);
      }
    }
    if (threadIdx.x == 0) dst[r] = out;
  }
}

// argreduce_part and argreduce_final: ArgReduce (inner == 1) of few long
// rows in two passes; partials are (value, global index) pairs.
template <typename T>
__device__ void argreduce_part(T *pv, long long *pi, const T *src, long long outer, long long n, long long chunks,
                               long long chunk, int max) {
  for (long long j = blockIdx.x; j < outer * chunks; j += gridDim.x) {
    long long r = j / chunks, c = j - r * chunks;
    long long len = min(chunk, n - c * chunk);
    Ext<T> e = row_extremum<T>(max != 0, src + r * n + c * chunk, len, true);
    if (threadIdx.x == 0) {
      pv[j] = e.v;
      pi[j] = e.i + c * chunk;
    }
  }
}

template <typename T>
__device__ void argreduce_final(long long *dst, const T *pv, const long long *pi, long long outer, long long chunks,
                                int max) {
  for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
    Ext<T> e = row_extremum<T>(max != 0, pv + r * chunks, chunks, true, pi + r * chunks);
    if (threadIdx.x == 0) dst[r] = e.i;
  }
}

// argreduce_rows: ArgReduce with inner == 1, one block per row.
template <typename T>
__device__ void argreduce_rows(long long *dst, const T *src, long long outer, long long n, int max) {
  for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
    Ext<T> e = row_extremum<T>(max != 0, src + r * n, n, true);
    if (threadIdx.x == 0) dst[r] = e.i;
  }
}

// argreduce_lanes: ArgReduce with one thread per (outer, inner) lane,
// walking the middle axis exactly as cpu.ArgReduce does.
template <typename T>
__device__ void argreduce_lanes(long long *dst, const T *src, long long outer, long long n, long long inner,
                                int max) {
  EMBER_FOR(j, outer * inner) {
    long long o = j / inner, in = j - o * inner;
    const T *p = src + o * n * inner + in;
    T best = p[0];
    long long bi = 0;
    for (long long k = 1; k < n; ++k) {
      T v = p[k * inner];
      if (best != best) break;
      if (v != v || (max && v > best) || (!max && v < best)) {
        best = v;
        bi = k;
      }
    }
    dst[j] = bi;
  }
}

// scan_lanes: running sum or product along the middle axis of [outer, n,
// inner], one thread per lane, in the element type and order of cpu.Scan.
template <typename T>
__device__ void scan_lanes(T *dst, const T *src, long long outer, long long n, long long inner, int prod) {
  EMBER_FOR(j, outer * inner) {
    long long o = j / inner, in = j - o * inner;
    long long base = o * n * inner + in;
    T acc = prod ? (T)1 : (T)0;
    for (long long k = 0; k < n; ++k) {
      acc = bin_num(prod ? kMul : kAdd, acc, src[base + k * inner]);
      dst[base + k * inner] = acc;
    }
  }
}

// scan_rows: Scan with inner == 1 and long rows, one block per row. The
// row is processed in tiles of blockDim.x*8 elements: each thread scans 8
// consecutive elements, the thread totals are scanned with warp shuffles
// and a shared-memory pass over the warp totals, and a running carry joins
// the tiles. Integer results equal the sequential scan; float sums and
// products are grouped differently, so they may differ in rounding.
template <typename T>
__device__ void scan_rows(T *dst, const T *src, long long outer, long long n, int prod) {
  const int K = 8;
  __shared__ T wtot[32];
  int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, nw = blockDim.x >> 5;
  int op = prod ? kMul : kAdd;
  T ident = prod ? (T)1 : (T)0;
  for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
    const T *s = src + r * n;
    T *d = dst + r * n;
    T carry = ident;
    for (long long base = 0; base < n; base += (long long)blockDim.x * K) {
      long long i0 = base + (long long)tid * K;
      T v[K];
      T acc = ident;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        T x = i0 + k < n ? s[i0 + k] : ident;
        acc = bin_num(op, acc, x);
        v[k] = acc;
      }
      T t = acc;  // inclusive scan of the thread totals within the warp
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        T y = __shfl_up_sync(0xffffffffu, t, o);
        if (lane >= o) t = bin_num(op, y, t);
      }
      if (lane == 31) wtot[w] = t;
      __syncthreads();
      if (w == 0) {
        T x = lane < nw ? wtot[lane] : ident;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          T y = __shfl_up_sync(0xffffffffu, x, o);
          if (lane >= o) x = bin_num(op, y, x);
        }
        if (lane < nw) wtot[lane] = x;
      }
      __syncthreads();
      T prev = __shfl_up_sync(0xffffffffu, t, 1);
      if (lane == 0) prev = ident;
      T pre = bin_num(op, carry, w > 0 ? bin_num(op, wtot[w - 1], prev) : prev);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (i0 + k < n) d[i0 + k] = bin_num(op, pre, v[k]);
      }
      carry = bin_num(op, carry, wtot[nw - 1]);
      __syncthreads();  // wtot is rewritten by the next tile
    }
  }
}

}  // namespace ew

using namespace ew;

// ---- extern "C" entries ---------------------------------------------------

#define COPY(DN, DT, SN, ST)                                                                          \
  extern "C" __global__ void copy_##DN##_##SN(DT::S *dst, const ST::S *src, Strided l, long long n, \
                                              int contig) {                                         \
    copy_convert<DT, ST>(dst, src, l, n, contig);                                                   \
  }
#define COPY_FROM(SN, ST)                                               \
  COPY(f32, F32, SN, ST) COPY(f64, F64, SN, ST) COPY(i64, I64, SN, ST) \
  COPY(i32, I32, SN, ST) COPY(b8, B8, SN, ST) COPY(f16, F16, SN, ST) COPY(bf16, BF16, SN, ST)
// Same-dtype copies use gather_uN (bit moves); these pairs are never
// launched but cost little.
COPY_FROM(f32, F32)
COPY_FROM(f64, F64)
COPY_FROM(i64, I64)
COPY_FROM(i32, I32)
COPY_FROM(b8, B8)
COPY_FROM(f16, F16)
COPY_FROM(bf16, BF16)

#define BITS(N, T)                                                                                             \
  extern "C" __global__ void gather_##N(T *dst, const T *src, Strided l, long long n, int contig) {            \
    gather<T>(dst, src, l, n, contig);                                                                         \
  }                                                                                                            \
  extern "C" __global__ void assign_##N(T *dst, Strided dl, const T *src, Strided sl, long long n, int contig) { \
    assign<T>(dst, dl, src, sl, n, contig);                                                                    \
  }                                                                                                            \
  extern "C" __global__ void fill_##N(T *dst, u64 bits, long long n) { fill<T>(dst, bits, n); }                \
  extern "C" __global__ void where_##N(T *dst, const u8 *cond, Strided lc, const T *a, Strided la, const T *b,  \
                                       Strided lb, long long n) {                                              \
    EMBER_FOR(i, n) {                                                                                          \
      dst[i] = cond[at(lc, i, false, n)] ? a[at(la, i, false, n)] : b[at(lb, i, false, n)];              \
    }                                                                                                          \
  }
BITS(u8, u8)
BITS(u16, u16)
BITS(u32, u32)
BITS(u64, u64)

// unary_<t>(dst, src, l, n, contig, kind, a, b, ia, ib): a and b are the
// float operands of UnaryOp; ia and ib their integer forms (see
// backend_elementwise.go).
extern "C" __global__ void unary_f32(float *dst, const float *src, Strided l, long long n, int contig, int kind,
                                     double a, double b, long long ia, long long ib) {
  EMBER_FOR(i, n) { dst[i] = unary_f32_op(kind, src[at(l, i, contig, n)], a, b); }
}
extern "C" __global__ void unary_f64(double *dst, const double *src, Strided l, long long n, int contig, int kind,
                                     double a, double b, long long ia, long long ib) {
  EMBER_FOR(i, n) { dst[i] = unary_f64_op(kind, src[at(l, i, contig, n)], a, b); }
}
extern "C" __global__ void unary_i64(long long *dst, const long long *src, Strided l, long long n, int contig,
                                     int kind, double a, double b, long long ia, long long ib) {
  EMBER_FOR(i, n) { dst[i] = unary_int_op<long long>(kind, src[at(l, i, contig, n)], ia, ib); }
}
extern "C" __global__ void unary_i32(int *dst, const int *src, Strided l, long long n, int contig, int kind,
                                     double a, double b, long long ia, long long ib) {
  EMBER_FOR(i, n) { dst[i] = unary_int_op<int>(kind, src[at(l, i, contig, n)], (int)ia, (int)ib); }
}
extern "C" __global__ void unary_b8(u8 *dst, const u8 *src, Strided l, long long n, int contig, int kind, double a,
                                    double b, long long ia, long long ib) {
  EMBER_FOR(i, n) { dst[i] = src[at(l, i, contig, n)] ? 0 : 1; }  // LogicalNot, the only bool unary
}

// binary_<t>(dst, a, la, b, lb, n, contig, op): arithmetic into the operand
// dtype; compare_<t>: comparisons and logical ops into Bool. contig bit 0:
// a is contiguous, bit 1: b is.
#define BINARY(N, T)                                                                                        \
  extern "C" __global__ void binary_##N(T *dst, const T *a, Strided la, const T *b, Strided lb, long long n, \
                                        int contig, int op) {                                               \
    EMBER_FOR(i, n) { dst[i] = bin_num<T>(op, a[at(la, i, contig & 1, n)], b[at(lb, i, contig & 2, n)]); }         \
  }                                                                                                         \
  extern "C" __global__ void compare_##N(u8 *dst, const T *a, Strided la, const T *b, Strided lb, long long n, \
                                         int contig, int op) {                                              \
    EMBER_FOR(i, n) { dst[i] = cmp<T>(op, a[at(la, i, contig & 1, n)], b[at(lb, i, contig & 2, n)]); }             \
  }
BINARY(f32, float)
BINARY(f64, double)
BINARY(i64, long long)
BINARY(i32, int)

extern "C" __global__ void binary_b8(u8 *dst, const u8 *a, Strided la, const u8 *b, Strided lb, long long n,
                                     int contig, int op) {
  EMBER_FOR(i, n) { dst[i] = bool_op(op, a[at(la, i, contig & 1, n)] != 0, b[at(lb, i, contig & 2, n)] != 0); }
}

// reduce_<t>(dst, src, outer, n, op, block), reduce_part_<t>(part, src,
// outer, n, op, chunks, chunk) then reduce_final_<t>(dst, part, outer,
// chunks, op), argreduce_rows_<t>(dst, src, outer, n, max),
// argreduce_part_<t>(pv, pi, src, outer, n, chunks, chunk, max) then
// argreduce_final_<t>(dst, pv, pi, outer, chunks, max), argreduce_lanes_<t>(dst, src, outer, n, inner, max),
// scan_<t>(dst, src, outer, n, inner, prod), scan_rows_<t>(dst, src, outer,
// n, prod) for inner == 1.
#define ROWS(N, T)                                                                                             \
  extern "C" __global__ void reduce_##N(T *dst, const T *src, long long outer, long long n, int op, int block) { \
    reduce<T>(dst, src, outer, n, op, block);                                                                  \
  }                                                                                                            \
  extern "C" __global__ void reduce_part_##N(void *part, const T *src, long long outer, long long n, int op,      \
                                             long long chunks, long long chunk) {                              \
    reduce_part<T>(part, src, outer, n, op, chunks, chunk);                                                    \
  }                                                                                                            \
  extern "C" __global__ void reduce_final_##N(T *dst, const void *part, long long outer, long long chunks,       \
                                              int op) {                                                        \
    reduce_final<T>(dst, part, outer, chunks, op);                                                             \
  }                                                                                                            \
  extern "C" __global__ void argreduce_part_##N(T *pv, long long *pi, const T *src, long long outer,             \
                                                long long n, long long chunks, long long chunk, int max) {     \
    argreduce_part<T>(pv, pi, src, outer, n, chunks, chunk, max);                                              \
  }                                                                                                            \
  extern "C" __global__ void argreduce_final_##N(long long *dst, const T *pv, const long long *pi,               \
                                                 long long outer, long long chunks, int max) {                 \
    argreduce_final<T>(dst, pv, pi, outer, chunks, max);                                                       \
  }                                                                                                            \
  extern "C" __global__ void argreduce_rows_##N(long long *dst, const T *src, long long outer, long long n,      \
                                                int max) {                                                     \
    argreduce_rows<T>(dst, src, outer, n, max);                                                                \
  }                                                                                                            \
  extern "C" __global__ void argreduce_lanes_##N(long long *dst, const T *src, long long outer, long long n,     \
                                                 long long inner, int max) {                                   \
    argreduce_lanes<T>(dst, src, outer, n, inner, max);                                                        \
  }                                                                                                            \
  extern "C" __global__ void scan_##N(T *dst, const T *src, long long outer, long long n, long long inner,      \
                                      int prod) {                                                              \
    scan_lanes<T>(dst, src, outer, n, inner, prod);                                                            \
  }                                                                                                            \
  extern "C" __global__ void scan_rows_##N(T *dst, const T *src, long long outer, long long n, int prod) {      \
    scan_rows<T>(dst, src, outer, n, prod);                                                                    \
  }
ROWS(f32, float)
ROWS(f64, double)
ROWS(i64, long long)
ROWS(i32, int)
