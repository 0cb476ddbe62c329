#include "zibert/nn/softmax.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

namespace zibert {
namespace {

#if defined(__AVX512F__)
// exp(scale · x − scale · max x) normalised, over [0, len) of kRows rows
// (`stride` apart), in place (left unnormalised, and each row's sum written
// to sums[r], when sums is given), with Eigen's vectorised exp and masked loads
// for the last partial vector (Eigen's own loop would take libm's scalar expf
// for up to 15 of them; nothing past len is touched). The rows go through
// interleaved, so one row's reductions overlap the others' instead of waiting
// on their own latency; each row gets the same operations in the same order
// whatever kRows is.
template <int kRows>
void softmax_prefix_rows(float* first, Index stride, Index len, float scale, float* sums) {
  using Eigen::internal::pexp;
  auto mask_at = [len](Index j) { return static_cast<__mmask16>(len - j >= 16 ? 0xFFFF : (1u << (len - j)) - 1); };
  __m512 top[kRows], shift[kRows], total[kRows], sum[kRows];
  const __m512 factor = _mm512_set1_ps(scale);
  for (int r = 0; r < kRows; ++r) top[r] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (Index j = 0; j < len; j += 16)
    for (int r = 0; r < kRows; ++r)
      top[r] = _mm512_mask_max_ps(top[r], mask_at(j), top[r],
                                  _mm512_maskz_loadu_ps(mask_at(j), first + r * stride + j));
  for (int r = 0; r < kRows; ++r) {
    shift[r] = _mm512_set1_ps(_mm512_reduce_max_ps(top[r]) * scale);
    total[r] = _mm512_setzero_ps();
  }
  for (Index j = 0; j < len; j += 16) {
    const __mmask16 m = mask_at(j);
    for (int r = 0; r < kRows; ++r) {
      float* row = first + r * stride;
      const __m512 e = pexp(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(m, row + j), factor, shift[r]));
      total[r] = _mm512_mask_add_ps(total[r], m, total[r], e);
      _mm512_mask_storeu_ps(row + j, m, e);
    }
  }
  if (sums) {
    for (int r = 0; r < kRows; ++r) sums[r] = _mm512_reduce_add_ps(total[r]);
    return;
  }
  for (int r = 0; r < kRows; ++r) sum[r] = _mm512_set1_ps(_mm512_reduce_add_ps(total[r]));
  for (Index j = 0; j < len; j += 16)
    for (int r = 0; r < kRows; ++r) {
      float* row = first + r * stride;
      _mm512_mask_storeu_ps(row + j, mask_at(j), _mm512_div_ps(_mm512_maskz_loadu_ps(mask_at(j), row + j), sum[r]));
    }
}
#endif

// The same over [0, len) of each row of p, in place; with `sums`, row i is
// left unnormalised and its sum written to sums[i].
template <class T>
void softmax_prefix(Ref<T> p, Index len, T scale, T* sums) {
  Index i = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= p.rows(); i += 4)
      softmax_prefix_rows<4>(&p(i, 0), p.outerStride(), len, scale, sums ? sums + i : nullptr);
    for (; i < p.rows(); ++i) softmax_prefix_rows<1>(&p(i, 0), p.outerStride(), len, scale, sums ? sums + i : nullptr);
  }
#endif
  for (; i < p.rows(); ++i) {
    auto r = p.row(i).head(len).array();
    r = (r * scale - r.maxCoeff() * scale).exp();
    if (sums)
      sums[i] = r.sum();
    else
      r /= r.sum();
  }
}

}  // namespace

template <class T>
Index masked_softmax(Ref<T> p, const std::uint8_t* valid, T scale, T* sums) {
  const Index seq = p.cols();
  Index len = 0;
  while (len < seq && valid[len]) ++len;
  Index rest = len;
  while (rest < seq && !valid[rest]) ++rest;
  if (len > 0 && rest == seq) {
    softmax_prefix<T>(p, len, scale, sums);
    p.rightCols(seq - len).setZero();
    return len;
  }
  for (Index i = 0; i < p.rows(); ++i) {
    p.row(i) *= scale;
    T m = -std::numeric_limits<T>::infinity();
    for (Index j = 0; j < seq; ++j)
      if (valid[j]) m = std::max(m, p(i, j));
    T sum = 0;
    for (Index j = 0; j < seq; ++j) {
      T e = valid[j] ? std::exp(p(i, j) - m) : T(0);
      p(i, j) = e;
      sum += e;
    }
    if (sums)
      sums[i] = sum;
    else
      p.row(i) /= sum;
  }
  return seq;
}

template Index masked_softmax<ZIBERT_REAL>(Ref<ZIBERT_REAL>, const std::uint8_t*, ZIBERT_REAL, ZIBERT_REAL*);

}  // namespace zibert
