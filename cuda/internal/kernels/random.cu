// Counter-based random numbers: Philox4x32-10, the same function as
// tensor.Philox4x32 / tensor.PhiloxUniform in Go, so a mask drawn here is
// reproducible from its seed and checkable on the host.
#include "common.cuh"

__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
  const unsigned int M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const unsigned int W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    unsigned int hi0 = __umulhi(M0, c.x), lo0 = M0 * c.x;
    unsigned int hi1 = __umulhi(M1, c.z), lo1 = M1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += W0;
    k.y += W1;
  }
  return c;
}

// dropout_mask: dst[i] = scale where uniform(seed, i) < keep, else 0, with
// uniform(seed, i) = (word i%4 of philox(counter i/4, key seed) >> 8) / 2^24.
// Each thread draws one Philox block and writes its (up to) 4 elements.
template <typename T>
__device__ void dropout_mask(T *dst, long long n, double keep, T scale, unsigned long long seed) {
  long long groups = (n + 3) / 4;
  uint2 key = make_uint2((unsigned int)seed, (unsigned int)(seed >> 32));
  EMBER_FOR(g, groups) {
    uint4 w = philox4x32_10(make_uint4((unsigned int)g, (unsigned int)((unsigned long long)g >> 32), 0u, 0u), key);
    unsigned int words[4] = {w.x, w.y, w.z, w.w};
    long long base = g * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      long long i = base + j;
      if (i < n) {
        double u = (double)(words[j] >> 8) * (1.0 / 16777216.0);
        dst[i] = u < keep ? scale : (T)0;
      }
    }
  }
}

extern "C" __global__ void dropout_mask_f32(float *dst, long long n, double keep, float scale,
                                            unsigned long long seed) {
  dropout_mask<float>(dst, n, keep, scale, seed);
}

extern "C" __global__ void dropout_mask_f64(double *dst, long long n, double keep, double scale,
                                            unsigned long long seed) {
  dropout_mask<double>(dst, n, keep, scale, seed);
}
