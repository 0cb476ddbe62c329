#include "zibert/nn/gemm_bf16.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "amx.hpp"
#include "transpose16.hpp"
#include "zibert/base/error.hpp"

namespace zibert {

float round_to_bf16(float x) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return x;  // NaN
  bits += 0x7FFFu + ((bits >> 16) & 1u);             // to nearest, ties to even
  return std::bit_cast<float>(bits & 0xFFFF0000u);
}

namespace {

// The emulation: each logical operand copied row-major with its values
// rounded, then the float32 product, whose sums of exact products are what
// bfloat16 products summed in float32 are, up to order.
void emulated_gemm(Index m, Index n, Index k, const GemmOperand& a, const GemmOperand& b, float* c, Index ldc,
                   bool accumulate, const float* bias, int threads) {
  auto rounded = [](const GemmOperand& x, Index rows, Index cols) {
    std::vector<float> out(static_cast<std::size_t>(rows * cols));
    for (Index i = 0; i < rows; ++i)
      for (Index j = 0; j < cols; ++j)
        out[i * cols + j] = round_to_bf16(x.transposed ? x.data[j * x.ld + i] : x.data[i * x.ld + j]);
    return out;
  };
  const std::vector<float> ra = rounded(a, m, k), rb = rounded(b, k, n);
  gemm_f32(m, n, k, {ra.data(), k, false}, {rb.data(), n, false}, c, ldc, accumulate, bias, threads);
}

#if defined(__x86_64__)

// Packing and the vdpbf16ps kernel need AVX-512 BF16; the tile kernel AMX as well.
#define ZIBERT_AVX512_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define ZIBERT_BF16_TARGET \
  __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

using Bf16 = std::uint16_t;
constexpr Index kDepth = 32;                    // depths of a tile row: 32 bfloat16, 64 bytes
constexpr Index kPanel = 16;                    // columns of a packed panel of B: one tile's
constexpr Index kPanelBlock = kDepth * kPanel;  // bfloat16 of one depth block of a panel
constexpr Index kTileRows = 16;

ZIBERT_AVX512_BF16_TARGET inline __mmask16 first16(Index n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}

// 32 bfloat16: lo's 16 values, then hi's.
ZIBERT_AVX512_BF16_TARGET inline __m512i to_bf16(__m512 lo, __m512 hi) {
  return std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// One panel of B (columns [j0, j0 + 16), zero past n) over the whole depth,
// in tdpbf16ps's layout: per depth block of 32, 16 rows of 16 column pairs,
// element (p, j) at (p / 32) * 512 + ((p % 32) / 2) * 32 + j * 2 + p % 2.
ZIBERT_AVX512_BF16_TARGET void pack_b_panel(const GemmOperand& b, Index k, Index n, Index j0, Index blocks, Bf16* out) {
  const Index cols = std::min(kPanel, n - j0);
  alignas(64) static constexpr Bf16 kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  const __mmask16 col_mask = first16(cols);
  for (Index blk = 0; blk < blocks; ++blk) {
    const Index p0 = blk * kDepth;
    Bf16* dst = out + blk * kPanelBlock;
    if (b.transposed) {
      // Column j is row j0 + j of the source, its depths contiguous: 32 of
      // them as bfloat16 are 16 depth pairs in 32-bit lanes, and a 16 x 16
      // transpose of those lanes gives the pair rows.
      const __mmask16 lo = first16(k - p0), hi = first16(k - p0 - 16);
      __m512 lanes[16];
      for (Index j = 0; j < 16; ++j) {
        if (j >= cols) {
          lanes[j] = _mm512_setzero_ps();
          continue;
        }
        const float* src = b.data + (j0 + j) * b.ld + p0;
        lanes[j] = _mm512_castsi512_ps(to_bf16(_mm512_maskz_loadu_ps(lo, src), _mm512_maskz_loadu_ps(hi, src + 16)));
      }
      transpose16(lanes);
      for (Index r = 0; r < 16; ++r) _mm512_storeu_ps(dst + r * 2 * kPanel, lanes[r]);
    } else {
      // Depths p and p + 1 are rows of the source: 16 columns of each,
      // converted, then interleaved into pairs.
      for (Index r = 0; r < 16; ++r) {
        const Index p = p0 + 2 * r;
        const __m512 x0 = p < k ? _mm512_maskz_loadu_ps(col_mask, b.data + p * b.ld + j0) : _mm512_setzero_ps();
        const __m512 x1 = p + 1 < k ? _mm512_maskz_loadu_ps(col_mask, b.data + (p + 1) * b.ld + j0) : _mm512_setzero_ps();
        _mm512_storeu_si512(dst + r * 2 * kPanel, _mm512_permutexvar_epi16(interleave, to_bf16(x0, x1)));
      }
    }
  }
}

// Rows [i0, i0 + rows) of A over the depth padded to kpad (zeros past k),
// row-major with rows kpad apart, and zero rows up to the next multiple of 16.
ZIBERT_AVX512_BF16_TARGET void pack_a_rows(const GemmOperand& a, Index k, Index kpad, Index i0, Index rows, Bf16* out) {
  const Index padded = (rows + kTileRows - 1) / kTileRows * kTileRows;
  if (!a.transposed) {
    for (Index r = 0; r < rows; ++r) {
      const float* src = a.data + (i0 + r) * a.ld;
      for (Index p0 = 0; p0 < kpad; p0 += kDepth)
        _mm512_storeu_si512(out + r * kpad + p0, to_bf16(_mm512_maskz_loadu_ps(first16(k - p0), src + p0),
                                                         _mm512_maskz_loadu_ps(first16(k - p0 - 16), src + p0 + 16)));
    }
    std::fill(out + rows * kpad, out + padded * kpad, Bf16{0});
    return;
  }
  // A(i, p) at data[p * ld + i]: 16 depths of 16 rows loaded, transposed
  // into the rows' 16 depths, twice for a tile row of 32.
  for (Index r0 = 0; r0 < padded; r0 += kTileRows) {
    const __mmask16 row_mask = first16(rows - r0);
    for (Index p0 = 0; p0 < kpad; p0 += kDepth) {
      __m512 half[2][16];
      for (int h = 0; h < 2; ++h) {
        for (Index q = 0; q < 16; ++q) {
          const Index p = p0 + 16 * h + q;
          half[h][q] = p < k ? _mm512_maskz_loadu_ps(row_mask, a.data + p * a.ld + i0 + r0) : _mm512_setzero_ps();
        }
        transpose16(half[h]);
      }
      for (Index t = 0; t < 16; ++t) _mm512_storeu_si512(out + (r0 + t) * kpad + p0, to_bf16(half[0][t], half[1][t]));
    }
  }
}

// One block of up to 32 x 32 outputs over every depth block, summed in the
// tiles (amx::sum_block): C = base + sums, where row r of base is at
// base + r * base_ld (C itself to accumulate, a bias row with base_ld 0, or
// nullptr). Rows past `rows` are summed from the padding and never stored.
template <bool kTwoRows, bool kTwoCols>
ZIBERT_BF16_TARGET void bf16_block(const Bf16* a, Index kpad, const Bf16* panel, Index panel_elems, Index blocks,
                                  float* c, Index ldc, Index rows, Index cols, const float* base, Index base_ld) {
  alignas(64) float sums[32][32];
  amx::sum_block<amx::Product::bf16, kTwoRows, kTwoCols>(
      reinterpret_cast<const std::uint8_t*>(a), static_cast<long>(kpad * sizeof(Bf16)),
      reinterpret_cast<const std::uint8_t*>(panel), static_cast<long>(panel_elems * sizeof(Bf16)),
      static_cast<long>(blocks), sums);
  const __mmask16 mask[2] = {first16(cols), first16(cols - 16)};
  for (Index r = 0; r < rows; ++r)
    for (int v = 0; v < (kTwoCols ? 2 : 1); ++v) {
      __m512 out = _mm512_load_ps(&sums[r][16 * v]);
      if (base) out = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], base + r * base_ld + 16 * v), out);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], out);
    }
}

struct Bf16Buffers {
  AlignedVector<Bf16> a, b;
};
Bf16Buffers& bf16_buffers() {
  static thread_local Bf16Buffers buffers;
  return buffers;
}

// Rows [i0, i1) of C against every packed panel of B. A is packed in
// macro-blocks of about 1 MiB of bfloat16 (32 to 256 rows), kept in L2 while
// B's panels stream past them.
ZIBERT_BF16_TARGET void bf16_rows(const GemmOperand& a, Index i0, Index i1, Index n, Index k, const Bf16* pb,
                                 float* c, Index ldc, bool accumulate, const float* bias) {
  if (i0 >= i1) return;
  const Index blocks = (k + kDepth - 1) / kDepth, kpad = blocks * kDepth, panel_elems = blocks * kPanelBlock;
  const Index macro = std::clamp<Index>((Index{1} << 19) / kpad / 32 * 32, 32, 256);
  AlignedVector<Bf16>& buf = bf16_buffers().a;
  if (buf.size() < static_cast<std::size_t>(macro * kpad)) buf.resize(static_cast<std::size_t>(macro * kpad));
  const amx::TileConfig config;
  _tile_loadconfig(&config);
  for (Index r0 = i0; r0 < i1; r0 += macro) {
    const Index mr = std::min(macro, i1 - r0);
    pack_a_rows(a, k, kpad, r0, mr, buf.data());
    for (Index j0 = 0; j0 < n; j0 += 2 * kPanel) {
      const Bf16* panel = pb + (j0 / kPanel) * panel_elems;
      const Index cols = std::min(2 * kPanel, n - j0);
      for (Index rb = 0; rb < mr; rb += 2 * kTileRows) {
        const Index rows = std::min(2 * kTileRows, mr - rb);
        float* dst = c + (r0 + rb) * ldc + j0;
        const float* base = accumulate ? dst : bias ? bias + j0 : nullptr;
        const Index base_ld = accumulate ? ldc : 0;
        const Bf16* tile = buf.data() + rb * kpad;
        if (rows > kTileRows && cols > kPanel)
          bf16_block<true, true>(tile, kpad, panel, panel_elems, blocks, dst, ldc, rows, cols, base, base_ld);
        else if (rows > kTileRows)
          bf16_block<true, false>(tile, kpad, panel, panel_elems, blocks, dst, ldc, rows, cols, base, base_ld);
        else if (cols > kPanel)
          bf16_block<false, true>(tile, kpad, panel, panel_elems, blocks, dst, ldc, rows, cols, base, base_ld);
        else
          bf16_block<false, false>(tile, kpad, panel, panel_elems, blocks, dst, ldc, rows, cols, base, base_ld);
      }
    }
  }
  _tile_release();
}

// The vdpbf16ps path reads the same packed panels: a pair row of a panel
// (depths 2q and 2q + 1 of its 16 columns, interleaved) is one vector, and a
// pair of A's row r is one 32-bit broadcast, so each instruction adds 16
// columns' two products. A tile is kDotRows rows x up to kDotPanels panels
// (24 of the 32 registers summing); the depth goes in blocks of kDotDepth,
// the tile's panels (kDotDepth x 48 bfloat16, 24 KiB) staying in L1 while
// the block's row tiles pass.
constexpr Index kDotRows = 8, kDotPanels = 3, kDotDepth = 256;

// C[0:rows, 0:cols] = base + the tile's sums over `pairs` pair rows, where a
// (row-major, rows kpad apart) and panel are at the block's first depth.
template <int kPanels>
ZIBERT_AVX512_BF16_TARGET void dot_tile(const Bf16* a, Index kpad, const Bf16* panel, Index panel_elems,
                                        Index pairs, float* c, Index ldc, Index rows, Index cols, const float* base,
                                        Index base_ld) {
  __m512 acc[kDotRows][kPanels];
#pragma GCC unroll 8
  for (int r = 0; r < kDotRows; ++r)
    for (int v = 0; v < kPanels; ++v) acc[r][v] = _mm512_setzero_ps();
  for (Index q = 0; q < pairs; ++q) {
    __m512bh bv[kPanels];
#pragma GCC unroll 3
    for (int v = 0; v < kPanels; ++v)
      bv[v] = std::bit_cast<__m512bh>(_mm512_load_si512(panel + v * panel_elems + q * 2 * kPanel));
#pragma GCC unroll 8
    for (int r = 0; r < kDotRows; ++r) {
      std::int32_t pair;
      std::memcpy(&pair, a + r * kpad + 2 * q, sizeof pair);
      const __m512bh av = std::bit_cast<__m512bh>(_mm512_set1_epi32(pair));
#pragma GCC unroll 3
      for (int v = 0; v < kPanels; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  // Whole panels with plain loads and stores, a partial one masked (masked
  // stores are microcoded on AMD's CPUs).
  __mmask16 mask[kPanels];
  for (int v = 0; v < kPanels; ++v) mask[v] = first16(cols - 16 * v);
  const bool whole = cols == 16 * kPanels;
#pragma GCC unroll 8
  for (int r = 0; r < kDotRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 3
    for (int v = 0; v < kPanels; ++v) {
      __m512 out = acc[r][v];
      float* dst = c + r * ldc + 16 * v;
      const float* from = base ? base + r * base_ld + 16 * v : nullptr;
      if (whole) {
        if (from) out = _mm512_add_ps(_mm512_loadu_ps(from), out);
        _mm512_storeu_ps(dst, out);
      } else {
        if (from) out = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], from), out);
        _mm512_mask_storeu_ps(dst, mask[v], out);
      }
    }
  }
}

// Rows [i0, i1) of C against every packed panel of B by vdpbf16ps: A packed
// in macro-blocks of up to 256 rows; per depth block, each group of panels
// meets every row tile of the macro-block. Each element is the sum of its
// depth blocks' sums, in depth order, onto base: one order whatever the rows.
ZIBERT_AVX512_BF16_TARGET void dot_rows(const GemmOperand& a, Index i0, Index i1, Index n, Index k, const Bf16* pb,
                                        float* c, Index ldc, bool accumulate, const float* bias) {
  if (i0 >= i1) return;
  const Index blocks = (k + kDepth - 1) / kDepth, kpad = blocks * kDepth, panel_elems = blocks * kPanelBlock;
  const Index panels = (n + kPanel - 1) / kPanel;
  constexpr Index kMacro = 256;
  AlignedVector<Bf16>& buf = bf16_buffers().a;
  if (buf.size() < static_cast<std::size_t>(kMacro * kpad)) buf.resize(static_cast<std::size_t>(kMacro * kpad));
  for (Index r0 = i0; r0 < i1; r0 += kMacro) {
    const Index mr = std::min(kMacro, i1 - r0);
    pack_a_rows(a, k, kpad, r0, mr, buf.data());  // rows padded to 16: a tile of 8 never reads past
    for (Index d0 = 0; d0 < kpad; d0 += kDotDepth) {
      const Index pairs = std::min(kDotDepth, kpad - d0) / 2;
      for (Index p0 = 0; p0 < panels; p0 += kDotPanels) {
        const Bf16* panel = pb + p0 * panel_elems + d0 * kPanel;
        const Index j0 = p0 * kPanel, cols = std::min(kDotPanels * kPanel, n - j0);
        for (Index rb = 0; rb < mr; rb += kDotRows) {
          const Index rows = std::min(kDotRows, mr - rb);
          float* dst = c + (r0 + rb) * ldc + j0;
          const bool onto_c = accumulate || d0 > 0;
          const float* base = onto_c ? dst : bias ? bias + j0 : nullptr;
          const Index base_ld = onto_c ? ldc : 0;
          const Bf16* tile = buf.data() + rb * kpad + d0;
          if (cols > 2 * kPanel)
            dot_tile<3>(tile, kpad, panel, panel_elems, pairs, dst, ldc, rows, cols, base, base_ld);
          else if (cols > kPanel)
            dot_tile<2>(tile, kpad, panel, panel_elems, pairs, dst, ldc, rows, cols, base, base_ld);
          else
            dot_tile<1>(tile, kpad, panel, panel_elems, pairs, dst, ldc, rows, cols, base, base_ld);
        }
      }
    }
  }
}

// Every panel of B (k x n) packed, split over the threads when called outside a parallel region.
void pack_b_panels(const GemmOperand& b, Index k, Index n, Bf16* packed, int threads) {
  const Index blocks = (k + kDepth - 1) / kDepth, panels = (n + kPanel - 1) / kPanel;
  const bool parallel = threads > 1 && !omp_in_parallel() && panels > 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
  for (Index panel = 0; panel < panels; ++panel)
    pack_b_panel(b, k, n, panel * kPanel, blocks, packed + panel * blocks * kPanelBlock);
}

// C = A B by packed B (AMX or vdpbf16ps), C's rows split over the threads
// in whole blocks of 32, so every element is one thread's sum in one order.
void bf16_packed(Bf16Isa isa, Index m, Index n, Index k, const GemmOperand& a, const Bf16* packed, float* c,
                 Index ldc, bool accumulate, const float* bias, int threads) {
  const auto rows = isa == Bf16Isa::amx_bf16 ? bf16_rows : dot_rows;
  if (threads <= 1 || omp_in_parallel() || m < 4 * kTileRows)
    return rows(a, 0, m, n, k, packed, c, ldc, accumulate, bias);
  const Index row_blocks = (m + 2 * kTileRows - 1) / (2 * kTileRows);
#pragma omp parallel num_threads(threads)
  {
    const Index t = omp_get_thread_num(), count = omp_get_num_threads();
    const Index first = row_blocks * t / count * 2 * kTileRows, last = row_blocks * (t + 1) / count * 2 * kTileRows;
    rows(a, first, std::min(last, m), n, k, packed, c, ldc, accumulate, bias);
  }
}

std::size_t packed_b_size(Index k, Index n) {
  return static_cast<std::size_t>((n + kPanel - 1) / kPanel * ((k + kDepth - 1) / kDepth) * kPanelBlock);
}

#endif  // __x86_64__

bool detect_bf16(Bf16Isa isa) {
#if defined(__x86_64__)
  const bool avx512_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                           __builtin_cpu_supports("avx512bf16");
  if (isa == Bf16Isa::amx_bf16) return avx512_bf16 && amx::usable(amx::Product::bf16);
  if (isa == Bf16Isa::avx512_bf16) return avx512_bf16;
#endif
  return isa == Bf16Isa::emulated;
}

}  // namespace

std::string matmul_products_name() {
  return matmul_precision() == MatmulPrecision::bfloat16 ? std::string("bfloat16 on ") + bf16_isa_name(bf16_isa())
                                                         : std::string("float32 on ") + gemm_isa_name();
}

const char* bf16_isa_name(Bf16Isa isa) {
  switch (isa) {
    case Bf16Isa::amx_bf16: return "amx-bf16";
    case Bf16Isa::avx512_bf16: return "avx512-bf16";
    case Bf16Isa::emulated: break;
  }
  return "emulated";
}

bool bf16_isa_available(Bf16Isa isa) {
  static const bool available[] = {detect_bf16(Bf16Isa::emulated), detect_bf16(Bf16Isa::avx512_bf16),
                                   detect_bf16(Bf16Isa::amx_bf16)};
  return available[static_cast<int>(isa)];
}

Bf16Isa bf16_isa() {
  static const Bf16Isa chosen = [] {
    const char* env = std::getenv("ZIBERT_BF16_ISA");
    if (!env || !*env) {
      for (Bf16Isa isa : kBf16Isas)  // fastest first; the emulation always runs
        if (bf16_isa_available(isa)) return isa;
      return Bf16Isa::emulated;
    }
    for (Bf16Isa isa : kBf16Isas)
      if (std::string(env) == bf16_isa_name(isa)) {
        if (!bf16_isa_available(isa)) throw Error(std::string("ZIBERT_BF16_ISA=") + env + ": this CPU does not have it");
        return isa;
      }
    throw Error(std::string("ZIBERT_BF16_ISA=") + env + ": choose amx-bf16, avx512-bf16 or emulated");
  }();
  return chosen;
}

void gemm_bf16(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
               const float* bias, int threads, Bf16Isa isa) {
  if (m == 0 || n == 0 || k == 0) return gemm_f32(m, n, k, a, b, c, ldc, accumulate, bias, threads);
  if (!bf16_isa_available(isa)) throw Error(std::string("bfloat16 products: this CPU has no ") + bf16_isa_name(isa));
#if defined(__x86_64__)
  if (isa != Bf16Isa::emulated) {
    AlignedVector<Bf16>& pb = bf16_buffers().b;
    if (pb.size() < packed_b_size(k, n)) pb.resize(packed_b_size(k, n));
    pack_b_panels(b, k, n, pb.data(), threads);
    return bf16_packed(isa, m, n, k, a, pb.data(), c, ldc, accumulate, accumulate ? nullptr : bias, threads);
  }
#endif
  emulated_gemm(m, n, k, a, b, c, ldc, accumulate, bias, threads);
}

Bf16Matrix::Bf16Matrix(const float* w, Index n, Index k, Bf16Isa isa) : n_(n), k_(k), isa_(isa) {
  if (!bf16_isa_available(isa)) throw Error(std::string("bfloat16 products: this CPU has no ") + bf16_isa_name(isa));
#if defined(__x86_64__)
  if (isa != Bf16Isa::emulated) {
    packed_.resize(packed_b_size(k, n));
    pack_b_panels({w, k, true}, k, n, packed_.data(), omp_get_max_threads());
    return;
  }
#endif
  values_.assign(w, w + n * k);  // the emulation rounds its operands itself
}

void Bf16Matrix::multiply(const CRef<float>& x, Ref<float> y, const float* bias, int threads) const {
  if (x.cols() != k_ || y.cols() != n_ || y.rows() != x.rows()) throw Error("Bf16Matrix: the shapes do not match");
  const Index m = x.rows();
  if (m == 0) return;
#if defined(__x86_64__)
  if (isa_ != Bf16Isa::emulated)
    return bf16_packed(isa_, m, n_, k_, {x.data(), x.outerStride()}, packed_.data(), y.data(), y.outerStride(), false,
                           bias, threads);
#endif
  emulated_gemm(m, n_, k_, {x.data(), x.outerStride()}, {values_.data(), k_, true}, y.data(), y.outerStride(), false,
                bias, threads);
}

}  // namespace zibert
