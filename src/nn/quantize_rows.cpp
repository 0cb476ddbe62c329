#include "zibert/nn/quantize_rows.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "zibert/base/error.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define ZIBERT_X86 1
#endif

namespace zibert {

namespace {

// One row's range: lo = min(x, 0), hi = max(x, 0) (min and max are exact,
// so every path finds the same).
struct Range {
  float lo = 0.0f, hi = 0.0f;
};

// A row's scale, its inverse and its zero point from its range, the same on
// every path: scale = (hi − lo) / 255 (1 for a row of zeros, and for a range
// so tiny that 1 / scale overflows or so wide that it is not finite), zero =
// round(−lo / scale), so that 0 is exact.
struct RowParams {
  float scale, inv, zero;
};
inline RowParams row_params(Range r) {
  float scale = (r.hi - r.lo) / 255.0f;
  if (!(scale > 0.0f) || !std::isfinite(scale) || !std::isfinite(1.0f / scale)) scale = 1.0f, r.lo = 0.0f;
  const float inv = 1.0f / scale;
  return {scale, inv, std::clamp(std::nearbyint(-r.lo * inv), 0.0f, 255.0f)};
}

// q = clamp(round_half_even(x · inv) + zero, 0, 255) for p in [from, k): the
// scalar form of what the vector forms compute with the same operations. The
// clamp is max then min as AVX2's instructions take them, so that a NaN (in a
// row a hostile model's weights overflowed) becomes 0 as there, never an
// undefined conversion to an integer.
void quantize_tail(const float* row, Index from, Index k, float inv, float zero, std::uint8_t* dst) {
  for (Index p = from; p < k; ++p) {
    const float v = std::nearbyint(row[p] * inv) + zero;
    const float at_least_0 = v > 0.0f ? v : 0.0f;
    dst[p] = static_cast<std::uint8_t>(at_least_0 < 255.0f ? at_least_0 : 255.0f);
  }
}

Range range_scalar(const float* row, Index k) {
  Range r;
  for (Index p = 0; p < k; ++p) {
    r.lo = std::min(r.lo, row[p]);
    r.hi = std::max(r.hi, row[p]);
  }
  return r;
}

#if defined(ZIBERT_X86)
__attribute__((target("avx512f,avx512bw"))) Range range_avx512(const float* row, Index k) {
  // Two accumulators each, so that the min/max chains do not wait on each other.
  __m512 lo0 = _mm512_setzero_ps(), hi0 = _mm512_setzero_ps(), lo1 = lo0, hi1 = hi0;
  Index p = 0;
  for (; p + 32 <= k; p += 32) {
    const __m512 a = _mm512_loadu_ps(row + p), b = _mm512_loadu_ps(row + p + 16);
    lo0 = _mm512_min_ps(lo0, a);
    hi0 = _mm512_max_ps(hi0, a);
    lo1 = _mm512_min_ps(lo1, b);
    hi1 = _mm512_max_ps(hi1, b);
  }
  for (; p + 16 <= k; p += 16) {
    const __m512 v = _mm512_loadu_ps(row + p);
    lo0 = _mm512_min_ps(lo0, v);
    hi0 = _mm512_max_ps(hi0, v);
  }
  Range r{_mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1)), _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1))};
  const Range tail = range_scalar(row + p, k - p);
  return {std::min(r.lo, tail.lo), std::max(r.hi, tail.hi)};
}

// round(x · inv) + zero for 16 floats, as int32.
__attribute__((target("avx512f,avx512bw"))) inline __m512i quantize16_avx512(const float* src, __m512 vinv,
                                                                            __m512i vzero) {
  return _mm512_add_epi32(
      _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(src), vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
      vzero);
}

__attribute__((target("avx512f,avx512bw"))) void quantize_avx512(const float* row, Index k, float inv, float zero,
                                                                 std::uint8_t* dst) {
  // The rounding is the conversion's own (to nearest, ties to even, as
  // nearbyint); the clamp to [0, 255] is the saturation of the packs to
  // int16 and then u8: the same values as quantize_tail.
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512i vzero = _mm512_set1_epi32(static_cast<int>(zero));
  // The packs interleave per 128-bit lane: lane L of the u8 result holds
  // elements 4L..4L+3 of each of the four vectors; this puts them in order.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  Index p = 0;
  for (; p + 64 <= k; p += 64) {
    const __m512i w01 = _mm512_packs_epi32(quantize16_avx512(row + p, vinv, vzero), quantize16_avx512(row + p + 16, vinv, vzero));
    const __m512i w23 = _mm512_packs_epi32(quantize16_avx512(row + p + 32, vinv, vzero), quantize16_avx512(row + p + 48, vinv, vzero));
    _mm512_storeu_si512(dst + p, _mm512_permutexvar_epi32(order, _mm512_packus_epi16(w01, w23)));
  }
  for (; p + 16 <= k; p += 16) {
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(quantize16_avx512(row + p, vinv, vzero), _mm512_setzero_si512()),
                                       _mm512_set1_epi32(255));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + p), _mm512_cvtepi32_epi8(q));
  }
  quantize_tail(row, p, k, inv, zero, dst);
}

__attribute__((target("avx2,fma"))) Range range_avx2(const float* row, Index k) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  Index p = 0;
  for (; p + 8 <= k; p += 8) {
    const __m256 v = _mm256_loadu_ps(row + p);
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, lo);
  _mm256_store_ps(h, hi);
  Range r = range_scalar(row + p, k - p);
  for (int i = 0; i < 8; ++i) r = {std::min(r.lo, l[i]), std::max(r.hi, h[i])};
  return r;
}

__attribute__((target("avx2,fma"))) void quantize_avx2(const float* row, Index k, float inv, float zero,
                                                       std::uint8_t* dst) {
  const __m256 vinv = _mm256_set1_ps(inv), vzero = _mm256_set1_ps(zero), top = _mm256_set1_ps(255.0f);
  Index p = 0;
  for (; p + 8 <= k; p += 8) {
    __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(row + p), vinv),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vzero), _mm256_setzero_ps()), top);
    const __m256i i32 = _mm256_cvtps_epi32(v);
    const __m128i i16 = _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + p), _mm_packus_epi16(i16, i16));
  }
  quantize_tail(row, p, k, inv, zero, dst);
}

// Every row, the range, parameters and values inlined into one loop per path.
__attribute__((target("avx512f,avx512bw"))) void quantize_rows_avx512(const CRef<float>& x, QuantizedRows& out) {
  for (Index i = 0; i < x.rows(); ++i) {
    const float* row = x.data() + i * x.outerStride();
    const RowParams rp = row_params(range_avx512(row, x.cols()));
    quantize_avx512(row, x.cols(), rp.inv, rp.zero, out.values.data() + i * out.ld);
    out.set_row(i, rp.scale, rp.zero);
  }
}

__attribute__((target("avx2,fma"))) void quantize_rows_avx2(const CRef<float>& x, QuantizedRows& out) {
  for (Index i = 0; i < x.rows(); ++i) {
    const float* row = x.data() + i * x.outerStride();
    const RowParams rp = row_params(range_avx2(row, x.cols()));
    quantize_avx2(row, x.cols(), rp.inv, rp.zero, out.values.data() + i * out.ld);
    out.set_row(i, rp.scale, rp.zero);
  }
}
#endif

}  // namespace

void quantize_rows(const CRef<float>& x, QuantizedRows& out, Int8Isa isa) {
  if (!int8_isa_available(isa)) throw Error(std::string("this CPU cannot run the ") + int8_isa_name(isa) + " kernels");
  const Index m = x.rows(), k = x.cols(), ld = (k + 3) / 4 * 4;
  out.rows = m;
  out.cols = k;
  out.ld = ld;
  const std::size_t need = static_cast<std::size_t>((m + kQuantizedPadRows) * ld + kQuantizedPadBytes);
  if (out.values.size() < need) out.values.resize(need);
  out.scales.resize(static_cast<std::size_t>(m));
  out.zeros.resize(static_cast<std::size_t>(m));
  // The padding past k stays zero: it is written only here.
  for (Index i = 0; i < m + kQuantizedPadRows; ++i) std::fill(out.values.data() + i * ld + k, out.values.data() + (i + 1) * ld, 0);
#if defined(ZIBERT_X86)
  if (isa == Int8Isa::avx512_vnni || isa == Int8Isa::amx_int8) return quantize_rows_avx512(x, out);
  if (isa == Int8Isa::avx2 || isa == Int8Isa::avx_vnni) return quantize_rows_avx2(x, out);
#endif
  for (Index i = 0; i < m; ++i) {
    const float* row = x.data() + i * x.outerStride();
    const RowParams rp = row_params(range_scalar(row, k));
    quantize_tail(row, 0, k, rp.inv, rp.zero, out.values.data() + i * ld);
    out.set_row(i, rp.scale, rp.zero);
  }
}

void quantize_symmetric(const CRef<float>& w, std::int8_t* values, float* scales) {
  for (Index j = 0; j < w.rows(); ++j) {
    const float top = w.row(j).cwiseAbs().maxCoeff();
    const float scale = top > 0.0f && std::isfinite(top) ? top / 127.0f : 1.0f;
    for (Index q = 0; q < w.cols(); ++q)
      values[j * w.cols() + q] =
          static_cast<std::int8_t>(std::clamp(std::nearbyint(w(j, q) / scale), -127.0f, 127.0f));
    scales[j] = scale;
  }
}

}  // namespace zibert
