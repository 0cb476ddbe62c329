// What the int8 product's kernels share (qgemm.cpp and qgemm_amx.cpp), kept
// out of the public header: the product's operands and the store, the same
// float operations on every path.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "zibert/nn/quantize_rows.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace zibert::qgemm_detail {

struct Product {
  const QuantizedRows& x;
  const float* scales;    // (n) the weights'
  const float* neg_sums;  // (n) −Σ_p q[j, p]
  const float* bias;      // (n) or nullptr
  float* y;
  Index ldy, n, k;
};

// One output element from its exact int32 sum, by the float operations every
// path uses: the zero point's correction as one fused multiply-add (exact
// while |sum| < 2^24, as for depths up to 516: then it is sum − zero·wsum
// rounded once), then the product of the scales and the bias as another.
// neg_wsum is −Σ_p q[j, p] as a float (exact).
inline float store_value(std::int32_t sum, std::int32_t zero, float neg_wsum, float xscale, float wscale,
                         float bias) {
  const float s = std::fma(static_cast<float>(zero), neg_wsum, static_cast<float>(sum));
  return std::fma(s, xscale * wscale, bias);
}

// The weights in groups of 4 depths per column, in panels of `panel` columns,
// with groups rounded up to a multiple of group_multiple (the padding zero):
// element (j, q) at ((j / panel) * groups + q / 4) * 4 * panel + (j % panel) * 4 + q % 4.
void pack_groups(const std::int8_t* values, Index n, Index k, Index panel, Index group_multiple,
                 AlignedVector<std::int8_t>& out);

#if defined(__x86_64__)

inline std::int32_t load32(const void* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 16-lane store of a tile's int32 sums (rows 0..rows of kRows, columns
// col0..col0+cols of 16 kVecs): store_value's operations, vectorised.
template <int kRows, int kVecs>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void vnni_store(const Product& p,
                                                                           const __m512i (&acc)[kRows][kVecs],
                                                                           Index rows, Index row0, Index col0,
                                                                           Index cols) {
  __mmask16 mask[kVecs];
  __m512 wsum[kVecs], wscale[kVecs], bias[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    const Index left = cols - 16 * v;
    mask[v] = static_cast<__mmask16>(left >= 16 ? 0xFFFF : left <= 0 ? 0 : (1u << left) - 1);
    wsum[v] = _mm512_maskz_loadu_ps(mask[v], p.neg_sums + col0 + 16 * v);
    wscale[v] = _mm512_maskz_loadu_ps(mask[v], p.scales + col0 + 16 * v);
    bias[v] = p.bias ? _mm512_maskz_loadu_ps(mask[v], p.bias + col0 + 16 * v) : _mm512_setzero_ps();
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    const __m512 zero = _mm512_set1_ps(static_cast<float>(p.x.zeros[row0 + r]));
    const __m512 xscale = _mm512_set1_ps(p.x.scales[row0 + r]);
    float* out = p.y + (row0 + r) * p.ldy + col0;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __m512 s = _mm512_fmadd_ps(zero, wsum[v], _mm512_cvtepi32_ps(acc[r][v]));
      const __m512 f = _mm512_fmadd_ps(s, _mm512_mul_ps(xscale, wscale[v]), bias[v]);
      _mm512_mask_storeu_ps(out + 16 * v, mask[v], f);
    }
  }
}

// Rows [i0, i1) of the product by AMX tiles; packed = pack_groups(..., 16, 16).
void amx_rows(const Product& p, const std::int8_t* packed, Index i0, Index i1);

#endif

}  // namespace zibert::qgemm_detail
