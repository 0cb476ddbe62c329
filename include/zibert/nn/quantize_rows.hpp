// The quantization int8 products need: a float matrix's rows to u8 with a
// zero point, per row, at inference (the products' input), and a weight
// matrix's rows to symmetric int8 (zibert quantize). Vector forms for
// AVX-512 and AVX2, chosen like the products' kernels, all giving the same
// bytes as the scalar form.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/nn/qgemm.hpp"

namespace zibert {

// Rows past the last that a product's kernel may read (never stores): its
// tallest tile (AMX's 16 rows); and the bytes past those that an AMX tile's
// 64-byte rows may read when the depth is not a multiple of 64 (they meet
// the weights' zero padding, so their values never count).
inline constexpr Index kQuantizedPadRows = 16, kQuantizedPadBytes = 64;

// x's rows quantized: q = clamp(round(x / scale) + zero, 0, 255) with
// scale = (max(x, 0) − min(x, 0)) / 255 per row (1 for a row of zeros), so
// that 0 is exact. Rows are ld bytes apart (k rounded up to 4, the padding
// zero). Every isa gives the same bytes.
struct QuantizedRows {
  Index rows = 0, cols = 0, ld = 0;
  AlignedVector<std::uint8_t> values;  // (rows + kQuantizedPadRows, ld) + kQuantizedPadBytes: tiles read past the last row
  std::vector<float> scales;           // (rows)
  std::vector<std::int32_t> zeros;     // (rows)
  void set_row(Index i, float scale, float zero) {
    scales[static_cast<std::size_t>(i)] = scale;
    zeros[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(zero);
  }
};
void quantize_rows(const CRef<float>& x, QuantizedRows& out, Int8Isa isa = int8_best_isa());

// Symmetric per-row int8 of a float matrix (n, k): scale[j] = max|w[j]| / 127
// (1 for a row of zeros), q = round(w / scale) in [−127, 127].
void quantize_symmetric(const CRef<float>& w, std::int8_t* values, float* scales);

}  // namespace zibert
