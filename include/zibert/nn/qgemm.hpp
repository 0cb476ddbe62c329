// Int8 matrix products for quantized inference: y = x Wᵀ + b with W int8
// (symmetric, one float scale per output row) and x quantized per row on the
// fly to u8 with a zero point (quantize_rows.hpp). The sums run in int32 and
// are exact, so every path gives the same int32 sums as the scalar
// reference; the scales, the zero point's correction and the bias are folded
// into the store with the same float operations on every path, so the
// outputs agree bit for bit.
//
// Paths, chosen at run time from CPUID (one binary runs everywhere):
//  - amx_int8: AMX tiles (tdpbusd, 16 x 16 x 64 per instruction), blocks of
//    32 x 32, the store AVX-512's (CPUs with AMX-INT8, where the OS allows);
//  - avx512_vnni: vpdpbusd, 4 u8·s8 products per int32 lane, tiles of 14 x 32;
//  - avx_vnni: the same instruction on 256 bits (CPUs with AVX-VNNI but not
//    AVX-512), tiles of 6 x 16;
//  - avx2: u8 and s8 widened to int16 and summed in pairs by vpmaddwd (exact,
//    where vpmaddubsw's int16 pair sums would saturate), tiles of 6 x 16;
//  - scalar: the reference the tests hold the others to.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/nn/tensor.hpp"

namespace zibert {

enum class Int8Isa { scalar, avx2, avx_vnni, avx512_vnni, amx_int8 };
inline constexpr Int8Isa kInt8Isas[] = {Int8Isa::amx_int8, Int8Isa::avx512_vnni, Int8Isa::avx_vnni, Int8Isa::avx2, Int8Isa::scalar};
const char* int8_isa_name(Int8Isa isa);
bool int8_isa_available(Int8Isa isa);  // this CPU (and OS) runs it
Int8Isa int8_best_isa();               // the fastest available
// The path int8 inference takes: $ZIBERT_INT8_ISA (amx-int8, avx512-vnni,
// avx-vnni, avx2 or scalar: for comparing paths, or a CPU whose fastest path is suspect) when
// set, else int8_best_isa(). Throws Error on an unknown or unavailable name.
Int8Isa int8_isa();

// Depths past this would let 255·127·k overflow the int32 sums.
inline constexpr Index kInt8MaxDepth = 32768;

// A weight matrix W (n, k), int8 with scale[j] per row j (w ≈ q·scale),
// packed for one path's kernel. The values are copied in.
class Int8Matrix {
 public:
  Int8Matrix() = default;
  // Throws when k exceeds kInt8MaxDepth or a scale is not finite and > 0.
  Int8Matrix(const std::int8_t* values, const float* scales, Index n, Index k, Int8Isa isa);
  Index rows() const { return n_; }
  Index cols() const { return k_; }
  Int8Isa isa() const { return isa_; }

  // y (m, n, leading dimension ldy) = dequantize(x (m, k) quantized per row) Wᵀ + bias (n floats, or
  // nullptr). threads > 1 splits the rows (only outside a parallel region).
  void multiply(const CRef<float>& x, float* y, Index ldy, const float* bias, int threads = 1) const;
  void multiply(const CRef<float>& x, Ref<float> y, const float* bias, int threads = 1) const {
    multiply(x, y.data(), y.outerStride(), bias, threads);
  }

 private:
  Index n_ = 0, k_ = 0;
  Int8Isa isa_ = Int8Isa::scalar;
  std::vector<std::int8_t> values_;   // scalar: (n, k) as given
  AlignedVector<std::int8_t> packed_; // (avx)512_vnni: panels of 32 (16) columns, per 4 depths 4 bytes each;
                                      // amx_int8: panels of 16, depths padded to 64
  AlignedVector<std::int16_t> wide_;  // avx2: panels of 16 columns, per 2 depths 16 x 2 int16
  std::vector<float> scales_;         // (n)
  std::vector<float> neg_sums_;       // (n) −Σ_p q[j, p] (exact in float), for the zero point's correction
};

}  // namespace zibert
