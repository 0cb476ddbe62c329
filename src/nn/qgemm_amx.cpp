// The int8 product on AMX (Sapphire Rapids and later): tdpbusd multiplies a
// 16 x 64 tile of u8 by a 64 x 16 tile of s8 into 16 x 16 int32 sums, 16,384
// multiply-adds an instruction. Blocks of 32 x 32 outputs keep four
// accumulator tiles, two of x and two of the weights; the sums go through
// memory to the same store as the AVX-512 VNNI path, so the outputs are the
// same bits.
#include "amx.hpp"
#include "qgemm_kernels.hpp"

#if defined(__x86_64__)
#include <algorithm>

namespace zibert::qgemm_detail {

namespace {

constexpr Index kDepthBlock = 64;                  // bytes of a tile row: 16 groups of 4 depths
constexpr Index kPanelBlock = kDepthBlock * 16;    // one depth block of a 16-column panel

// One block of up to 32 rows x 32 columns: summed in the tiles
// (amx::sum_block), then stored as the AVX-512 VNNI path stores. Rows past
// `rows` are summed from the buffer's padding and never stored.
template <bool kTwoRows, bool kTwoCols>
__attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl"))) void amx_block(
    const Product& p, const std::int8_t* panel, Index panel_bytes, Index blocks, Index row0, Index rows, Index col0,
    Index cols) {
  const Index lda = p.x.ld;
  alignas(64) std::int32_t sums[32][32];  // (rows, columns) of the block
  amx::sum_block<amx::Product::int8, kTwoRows, kTwoCols>(p.x.values.data() + row0 * lda, static_cast<long>(lda),
                                                         reinterpret_cast<const std::uint8_t*>(panel),
                                                         static_cast<long>(panel_bytes), static_cast<long>(blocks),
                                                         sums);
  constexpr int kVecs = kTwoCols ? 2 : 1;
  for (Index half = 0; half < (kTwoRows ? 2 : 1); ++half) {
    __m512i acc[16][kVecs];
    for (int r = 0; r < 16; ++r)
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_load_si512(&sums[16 * half + r][16 * v]);
    vnni_store<16, kVecs>(p, acc, std::min<Index>(16, rows - 16 * half), row0 + 16 * half, col0, cols);
  }
}

}  // namespace


__attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl"))) void amx_rows(const Product& p,
                                                                                 const std::int8_t* packed,
                                                                                 Index i0, Index i1) {
  const amx::TileConfig config;
  _tile_loadconfig(&config);
  const Index blocks = (p.k + kDepthBlock - 1) / kDepthBlock, panel_bytes = blocks * kPanelBlock;
  for (Index i = i0; i < i1; i += 32) {
    const Index rows = std::min<Index>(32, i1 - i);
    for (Index j0 = 0; j0 < p.n; j0 += 32) {
      const std::int8_t* panel = packed + (j0 / 16) * panel_bytes;
      const Index cols = std::min<Index>(32, p.n - j0);
      if (rows > 16 && cols > 16) amx_block<true, true>(p, panel, panel_bytes, blocks, i, rows, j0, cols);
      else if (rows > 16) amx_block<true, false>(p, panel, panel_bytes, blocks, i, rows, j0, cols);
      else if (cols > 16) amx_block<false, true>(p, panel, panel_bytes, blocks, i, rows, j0, cols);
      else amx_block<false, false>(p, panel, panel_bytes, blocks, i, rows, j0, cols);
    }
  }
  _tile_release();
}

}  // namespace zibert::qgemm_detail

#endif  // __x86_64__
