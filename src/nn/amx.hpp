// Whether this process may run AMX tile instructions (Sapphire Rapids and
// later): the CPU has AMX-TILE and the product's instructions, the OS saves
// the tile state, and (Linux) it grants this process the tile data when asked
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked here). Shared by the int8 (tdpbusd)
// and bfloat16 (tdpbf16ps) products.
#pragma once
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace zibert::amx {

enum class Product { int8, bf16 };
bool usable(Product product);

// ldtilecfg's 64-byte operand (palette 1): tiles 0-7 of 16 rows x 64 bytes,
// the shape every zibert kernel uses.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

#if defined(__x86_64__)
// One block of up to 32 x 32 outputs summed over `blocks` depth blocks by the
// product's tile instruction (int8: tdpbusd, u8 x s8 into int32; bf16:
// tdpbf16ps, bfloat16 pairs into float32). Either way a depth block is a
// 64-byte tile row of A (rows lda bytes apart) against 1,024 bytes of a
// 16-column panel (panels panel_bytes apart). Tiles 0-3 sum it (0 top left,
// 1 top right, 2 bottom left, 3 bottom right), 4-5 hold A's two row tiles,
// 6-7 the panels' two column tiles; the sums, four bytes each, go to a 32 x 32
// array (rows 128 bytes apart). A TileConfig must be loaded.
template <Product kProduct, bool kTwoRows, bool kTwoCols>
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) inline void sum_block(const std::uint8_t* a, long lda,
                                                                             const std::uint8_t* panel,
                                                                             long panel_bytes, long blocks,
                                                                             void* sums) {
  constexpr long kRowBytes = 64, kPanelBlockBytes = 1024;
  _tile_zero(0);
  if constexpr (kTwoCols) _tile_zero(1);
  if constexpr (kTwoRows) _tile_zero(2);
  if constexpr (kTwoRows && kTwoCols) _tile_zero(3);
  for (long b = 0; b < blocks; ++b) {
    _tile_loadd(4, a + b * kRowBytes, lda);
    _tile_loadd(6, panel + b * kPanelBlockBytes, 64);
    if constexpr (kProduct == Product::int8) _tile_dpbusd(0, 4, 6); else _tile_dpbf16ps(0, 4, 6);
    if constexpr (kTwoCols) {
      _tile_loadd(7, panel + panel_bytes + b * kPanelBlockBytes, 64);
      if constexpr (kProduct == Product::int8) _tile_dpbusd(1, 4, 7); else _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (kTwoRows) {
      _tile_loadd(5, a + 16 * lda + b * kRowBytes, lda);
      if constexpr (kProduct == Product::int8) _tile_dpbusd(2, 5, 6); else _tile_dpbf16ps(2, 5, 6);
      if constexpr (kTwoCols) {
        if constexpr (kProduct == Product::int8) _tile_dpbusd(3, 5, 7); else _tile_dpbf16ps(3, 5, 7);
      }
    }
  }
  constexpr long kLd = 128;
  auto* out = static_cast<std::uint8_t*>(sums);
  _tile_stored(0, out, kLd);
  if constexpr (kTwoCols) _tile_stored(1, out + 64, kLd);
  if constexpr (kTwoRows) _tile_stored(2, out + 16 * kLd, kLd);
  if constexpr (kTwoRows && kTwoCols) _tile_stored(3, out + 16 * kLd + 64, kLd);
}
#endif

}  // namespace zibert::amx
