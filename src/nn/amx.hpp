// Whether this process may run AMX tile instructions (Sapphire Rapids and
// later): the CPU has AMX-TILE and the product's instructions, the OS saves
// the tile state, and (Linux) it grants this process the tile data when asked
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked here). Shared by the int8 (tdpbusd)
// and bfloat16 (tdpbf16ps) products.
#pragma once
#include <cstdint>

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

}  // namespace zibert::amx
