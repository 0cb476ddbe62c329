#include "zibert/nn/qgemm.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "zibert/base/error.hpp"
#include "zibert/nn/quantize_rows.hpp"
#include "amx.hpp"
#include "qgemm_kernels.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define ZIBERT_X86 1
#endif

namespace zibert {

using namespace qgemm_detail;

namespace {

// Rows of x per block (a thread's unit, k bytes each in L2): a multiple of
// the 14-row tile; AMX's, of its 32-row blocks (and each block configures the tiles once).
constexpr Index kRowBlock = 98, kAmxRowBlock = 128;

void scalar_rows(const Product& p, const std::int8_t* w, Index i0, Index i1) {
  for (Index i = i0; i < i1; ++i) {
    const std::uint8_t* a = p.x.values.data() + i * p.x.ld;
    for (Index j = 0; j < p.n; ++j) {
      const std::int8_t* b = w + j * p.k;
      std::int32_t acc = 0;
      for (Index q = 0; q < p.k; ++q) acc += static_cast<std::int32_t>(a[q]) * static_cast<std::int32_t>(b[q]);
      p.y[i * p.ldy + j] = store_value(acc, p.x.zeros[i], p.neg_sums[j], p.x.scales[i], p.scales[j],
                                       p.bias ? p.bias[j] : 0.0f);
    }
  }
}

#if defined(ZIBERT_X86)


// --- AVX-512 VNNI: tiles of 14 rows x 32 columns, 28 int32 accumulators ---

constexpr Index kVnniMr = 14, kVnniNr = 32;  // the panels: pack_groups(..., 32)

template <int kVecs>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void vnni_tile(
    const Product& p, const std::uint8_t* a, const std::int8_t* panel, Index groups, Index row0, Index rows,
    Index col0, Index cols) {
  __m512i acc[kVnniMr][kVecs];
#pragma GCC unroll 28
  for (int r = 0; r < kVnniMr; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_si512();
  const Index lda = p.x.ld;
  for (Index g = 0; g < groups; ++g) {
    __m512i b[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) b[v] = _mm512_loadu_si512(panel + g * 4 * kVnniNr + 64 * v);
#pragma GCC unroll 14
    for (int r = 0; r < kVnniMr; ++r) {
      const __m512i av = _mm512_set1_epi32(load32(a + r * lda + 4 * g));
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, b[v]);
    }
  }
  vnni_store<kVnniMr, kVecs>(p, acc, rows, row0, col0, cols);
}

void vnni_rows(const Product& p, const std::int8_t* packed, Index i0, Index i1) {
  const Index groups = (p.k + 3) / 4;
  for (Index j0 = 0; j0 < p.n; j0 += kVnniNr) {
    const std::int8_t* panel = packed + j0 * groups * 4;
    const Index cols = std::min(kVnniNr, p.n - j0);
    for (Index i = i0; i < i1; i += kVnniMr) {
      const std::uint8_t* a = p.x.values.data() + i * p.x.ld;
      const Index rows = std::min(kVnniMr, i1 - i);
      (cols > 16 ? vnni_tile<2> : vnni_tile<1>)(p, a, panel, groups, i, rows, j0, cols);
    }
  }
}

// --- AVX2: int16 pairs by vpmaddwd, tiles of 6 rows x 16 columns ---

constexpr Index kAvx2Mr = 6, kAvx2Nr = 16;

// The 8-lane store of a 6-row tile's int32 sums (the AVX2 and AVX-VNNI
// kernels'): the same float operations as store_value.
template <int kVecs>
__attribute__((target("avx2,fma"))) inline void avx2_store(const Product& p, const __m256i (&acc)[kAvx2Mr][kVecs],
                                                           Index rows, Index row0, Index col0, Index cols) {
  __m256i mask[kVecs];
  __m256 wsum[kVecs], wscale[kVecs], bias[kVecs];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int v = 0; v < kVecs; ++v) {
    mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols - 8 * v)), lane);
    wsum[v] = _mm256_maskload_ps(p.neg_sums + col0 + 8 * v, mask[v]);
    wscale[v] = _mm256_maskload_ps(p.scales + col0 + 8 * v, mask[v]);
    bias[v] = p.bias ? _mm256_maskload_ps(p.bias + col0 + 8 * v, mask[v]) : _mm256_setzero_ps();
  }
#pragma GCC unroll 6
  for (int r = 0; r < kAvx2Mr; ++r) {
    if (r >= rows) break;
    const __m256 zero = _mm256_set1_ps(static_cast<float>(p.x.zeros[row0 + r]));
    const __m256 xscale = _mm256_set1_ps(p.x.scales[row0 + r]);
    float* out = p.y + (row0 + r) * p.ldy + col0;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __m256 s = _mm256_fmadd_ps(zero, wsum[v], _mm256_cvtepi32_ps(acc[r][v]));
      const __m256 f = _mm256_fmadd_ps(s, _mm256_mul_ps(xscale, wscale[v]), bias[v]);
      if (cols == 8 * kVecs)  // a whole tile: a plain store (masked ones are microcoded on AMD's CPUs)
        _mm256_storeu_ps(out + 8 * v, f);
      else
        _mm256_maskstore_ps(out + 8 * v, mask[v], f);
    }
  }
}

template <int kVecs>
__attribute__((target("avx2,fma"))) void avx2_tile(const Product& p, const std::int16_t* a, Index lda,
                                                   const std::int16_t* panel, Index pairs, Index row0, Index rows,
                                                   Index col0, Index cols) {
  __m256i acc[kAvx2Mr][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kAvx2Mr; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_si256();
  for (Index g = 0; g < pairs; ++g) {
    __m256i b[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v)
      b[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * 2 * kAvx2Nr + 16 * v));
#pragma GCC unroll 6
    for (int r = 0; r < kAvx2Mr; ++r) {
      const __m256i av = _mm256_set1_epi32(load32(a + r * lda + 2 * g));
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(av, b[v]));
    }
  }
  avx2_store<kVecs>(p, acc, rows, row0, col0, cols);
}

void avx2_rows(const Product& p, const std::int16_t* wide, Index i0, Index i1) {
  // x's rows widened to int16 (the u8 values are below 256, so exact).
  static thread_local AlignedVector<std::int16_t> a16;
  const Index lda = p.x.ld, rows = i1 - i0;
  const std::size_t need = static_cast<std::size_t>((rows + kQuantizedPadRows) * lda);
  if (a16.size() < need) a16.resize(need);
  const std::uint8_t* src = p.x.values.data() + i0 * lda;
  for (std::size_t e = 0; e < need; ++e) a16[e] = src[e];
  const Index pairs = (p.k + 1) / 2;
  for (Index j0 = 0; j0 < p.n; j0 += kAvx2Nr) {
    const std::int16_t* panel = wide + j0 * pairs * 2;
    const Index cols = std::min(kAvx2Nr, p.n - j0);
    for (Index i = 0; i < rows; i += kAvx2Mr)
      (cols > 8 ? avx2_tile<2> : avx2_tile<1>)(p, a16.data() + i * lda, lda, panel, pairs, i0 + i,
                                               std::min(kAvx2Mr, rows - i), j0, cols);
  }
}

// --- AVX-VNNI: vpdpbusd on 256 bits (CPUs with it but without AVX-512),
// tiles of 6 rows x 16 columns, the weights packed as for AVX-512 VNNI in
// panels of 16 columns ---

constexpr Index kAvxVnniNr = 16;

template <int kVecs>
__attribute__((target("avx2,fma,avxvnni"))) void avx_vnni_tile(const Product& p, const std::uint8_t* a,
                                                               const std::int8_t* panel, Index groups, Index row0,
                                                               Index rows, Index col0, Index cols) {
  __m256i acc[kAvx2Mr][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kAvx2Mr; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_si256();
  const Index lda = p.x.ld;
  for (Index g = 0; g < groups; ++g) {
    __m256i b[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v)
      b[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * 4 * kAvxVnniNr + 32 * v));
#pragma GCC unroll 6
    for (int r = 0; r < kAvx2Mr; ++r) {
      const __m256i av = _mm256_set1_epi32(load32(a + r * lda + 4 * g));
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_dpbusd_avx_epi32(acc[r][v], av, b[v]);
    }
  }
  avx2_store<kVecs>(p, acc, rows, row0, col0, cols);
}

void avx_vnni_rows(const Product& p, const std::int8_t* packed, Index i0, Index i1) {
  const Index groups = (p.k + 3) / 4;
  for (Index j0 = 0; j0 < p.n; j0 += kAvxVnniNr) {
    const std::int8_t* panel = packed + j0 * groups * 4;
    const Index cols = std::min(kAvxVnniNr, p.n - j0);
    for (Index i = i0; i < i1; i += kAvx2Mr)
      (cols > 8 ? avx_vnni_tile<2> : avx_vnni_tile<1>)(p, p.x.values.data() + i * p.x.ld, panel, groups, i,
                                                       std::min(kAvx2Mr, i1 - i), j0, cols);
  }
}

// AVX-VNNI is CPUID leaf 7, subleaf 1, EAX bit 4 (GCC 12's
// __builtin_cpu_supports does not know it); AVX2 implies the OS saves ymm.
bool cpu_has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax >> 4) & 1u;
}

#endif  // ZIBERT_X86

}  // namespace

void qgemm_detail::pack_groups(const std::int8_t* values, Index n, Index k, Index panel, Index group_multiple,
                               AlignedVector<std::int8_t>& out) {
  const Index groups = ((k + 3) / 4 + group_multiple - 1) / group_multiple * group_multiple;
  const Index panels = (n + panel - 1) / panel;
  out.assign(static_cast<std::size_t>(panels * groups * 4 * panel), 0);
  for (Index j = 0; j < n; ++j)
    for (Index q = 0; q < k; ++q)
      out[((j / panel) * groups + q / 4) * 4 * panel + (j % panel) * 4 + q % 4] = values[j * k + q];
}

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::amx_int8: return "amx-int8";
    case Int8Isa::avx512_vnni: return "avx512-vnni";
    case Int8Isa::avx_vnni: return "avx-vnni";
    case Int8Isa::avx2: return "avx2";
    default: return "scalar";
  }
}

namespace {

bool detect(Int8Isa isa) {
#if defined(ZIBERT_X86)
  switch (isa) {
    case Int8Isa::avx512_vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    case Int8Isa::amx_int8: return detect(Int8Isa::avx512_vnni) && amx::usable(amx::Product::int8);
    case Int8Isa::avx_vnni:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_avx_vnni();
    case Int8Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return true;
  }
#else
  return isa == Int8Isa::scalar;
#endif
}

}  // namespace

bool int8_isa_available(Int8Isa isa) {
  // Asked once per path and kept: every product checks its path, and CPUID
  // (AVX-VNNI's test) is slow, under a hypervisor a trap.
  static const bool available[] = {detect(Int8Isa::scalar), detect(Int8Isa::avx2), detect(Int8Isa::avx_vnni),
                                   detect(Int8Isa::avx512_vnni), detect(Int8Isa::amx_int8)};
  return available[static_cast<int>(isa)];
}

Int8Isa int8_best_isa() {
  static const Int8Isa best = int8_isa_available(Int8Isa::amx_int8)      ? Int8Isa::amx_int8
                              : int8_isa_available(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni
                              : int8_isa_available(Int8Isa::avx_vnni)  ? Int8Isa::avx_vnni
                              : int8_isa_available(Int8Isa::avx2)      ? Int8Isa::avx2
                                                                       : Int8Isa::scalar;
  return best;
}

Int8Isa int8_isa() {
  const char* env = std::getenv("ZIBERT_INT8_ISA");
  if (!env || !*env) return int8_best_isa();
  for (Int8Isa isa : kInt8Isas) {
    if (std::string(env) != int8_isa_name(isa)) continue;
    if (!int8_isa_available(isa))
      throw Error(std::string("ZIBERT_INT8_ISA=") + env + ": this CPU cannot run that path");
    return isa;
  }
  throw Error(std::string("ZIBERT_INT8_ISA=") + env + ": choose amx-int8, avx512-vnni, avx-vnni, avx2 or scalar");
}

Int8Matrix::Int8Matrix(const std::int8_t* values, const float* scales, Index n, Index k, Int8Isa isa)
    : n_(n), k_(k), isa_(isa), scales_(scales, scales + n), neg_sums_(n, 0.0f) {
  if (k > kInt8MaxDepth)
    throw Error("an int8 product of depth " + std::to_string(k) + " could overflow its int32 sums (at most " +
                std::to_string(kInt8MaxDepth) + ")");
  if (!int8_isa_available(isa)) throw Error(std::string("this CPU cannot run the ") + int8_isa_name(isa) + " kernels");
  for (Index j = 0; j < n; ++j) {
    if (!(std::isfinite(scales[j]) && scales[j] > 0))
      throw Error("an int8 row scale must be finite and positive (row " + std::to_string(j) + ")");
    std::int32_t sum = 0;
    for (Index q = 0; q < k; ++q) sum += values[j * k + q];
    neg_sums_[j] = -static_cast<float>(sum);  // exact: |sum| <= 127 k < 2^24
  }
  if (isa == Int8Isa::scalar) values_.assign(values, values + n * k);  // the other paths keep only their packing
  if (isa == Int8Isa::avx512_vnni) pack_groups(values, n, k, 32, 1, packed_);
  if (isa == Int8Isa::avx_vnni) pack_groups(values, n, k, 16, 1, packed_);
  if (isa == Int8Isa::amx_int8) pack_groups(values, n, k, 16, 16, packed_);
#if defined(ZIBERT_X86)
  if (isa == Int8Isa::avx2) {
    // Panel of 16 columns; per pair of depths, column c's two int16 at c * 2.
    const Index pairs = (k + 1) / 2, panels = (n + kAvx2Nr - 1) / kAvx2Nr;
    wide_.assign(static_cast<std::size_t>(panels * pairs * 2 * kAvx2Nr), 0);
    for (Index j = 0; j < n; ++j)
      for (Index q = 0; q < k; ++q)
        wide_[((j / kAvx2Nr) * pairs + q / 2) * 2 * kAvx2Nr + (j % kAvx2Nr) * 2 + q % 2] = values[j * k + q];
  }
#endif
}

void Int8Matrix::multiply(const CRef<float>& x, float* y, Index ldy, const float* bias, int threads) const {
  if (x.cols() != k_)
    throw Error("int8 product: x has " + std::to_string(x.cols()) + " columns, the weights " + std::to_string(k_));
  const Index m = x.rows();
  if (m == 0 || n_ == 0) return;
  static thread_local QuantizedRows q;
  quantize_rows(x, q, isa_);  // the path's own quantizer (all give the same bytes)
  const Product p{q, scales_.data(), neg_sums_.data(), bias, y, ldy, n_, k_};
  auto rows = [&](Index i0, Index i1) {
#if defined(ZIBERT_X86)
    if (isa_ == Int8Isa::amx_int8) return amx_rows(p, packed_.data(), i0, i1);
    if (isa_ == Int8Isa::avx512_vnni) return vnni_rows(p, packed_.data(), i0, i1);
    if (isa_ == Int8Isa::avx_vnni) return avx_vnni_rows(p, packed_.data(), i0, i1);
    if (isa_ == Int8Isa::avx2) return avx2_rows(p, wide_.data(), i0, i1);
#endif
    scalar_rows(p, values_.data(), i0, i1);
  };
  const Index block = isa_ == Int8Isa::amx_int8 ? kAmxRowBlock : kRowBlock, blocks = (m + block - 1) / block;
  if (threads > 1 && blocks > 1 && !omp_in_parallel()) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (Index b = 0; b < blocks; ++b) rows(b * block, std::min(m, (b + 1) * block));
  } else {
    for (Index b = 0; b < blocks; ++b) rows(b * block, std::min(m, (b + 1) * block));
  }
}

}  // namespace zibert
