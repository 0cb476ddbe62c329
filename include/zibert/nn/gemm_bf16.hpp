// The float product in bfloat16: both operands rounded to bfloat16 (8 bits
// of mantissa, to nearest even), their products (exact in float32) summed in
// float32. What gemm runs when the process's matmul precision is bfloat16
// (gemm.hpp).
//
// Paths, chosen at run time from CPUID (one binary runs everywhere):
//  - amx_bf16: AMX tiles (tdpbf16ps, 16 x 16 x 32 per instruction), blocks
//    of 32 x 32 outputs summed over the whole depth in the tiles (Intel
//    Sapphire Rapids and later);
//  - avx512_bf16: AVX-512 BF16's vdpbf16ps (16 columns x 2 depths per
//    instruction) on the same packed panels, tiles of 8 x 48 outputs summed
//    per depth block of 256 (AMD Zen 4 and later, Intel Cooper Lake);
//  - emulated: the operands rounded to bfloat16 in float32 copies and
//    multiplied by the float32 product. The same numbers up to the order of
//    the sums; no faster than float32. The reference the tests hold AMX to.
// Either way every element of C is summed in one fixed order whatever the
// thread count or the other rows, so rows split across threads or batches
// give the same bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/nn/gemm.hpp"

namespace zibert {

enum class Bf16Isa { emulated, avx512_bf16, amx_bf16 };
inline constexpr Bf16Isa kBf16Isas[] = {Bf16Isa::amx_bf16, Bf16Isa::avx512_bf16, Bf16Isa::emulated};  // fastest first
const char* bf16_isa_name(Bf16Isa isa);  // "amx-bf16", "avx512-bf16" or "emulated"
bool bf16_isa_available(Bf16Isa isa);    // this CPU (and OS) runs it
// The path bfloat16 products take: $ZIBERT_BF16_ISA (amx-bf16, avx512-bf16
// or emulated) when set, else the fastest available. Throws Error on an unknown or
// unavailable name.
Bf16Isa bf16_isa();

// The float products this process runs: "float32 on avx512", "bfloat16 on
// amx-bf16", "bfloat16 on emulated", … (what bench reports).
std::string matmul_products_name();

// x rounded to the nearest bfloat16 (ties to even), as a float; NaN stays NaN.
float round_to_bf16(float x);

// gemm's product (same operands and semantics) at bfloat16 precision, on the
// given path.
void gemm_bf16(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
               const float* bias, int threads, Bf16Isa isa);

// A weight matrix W (n, k) rounded and packed once for y = x Wᵀ + b at
// bfloat16 precision: what gemm_bf16 computes with B = Wᵀ, the same bits,
// without packing W at every product (the inference path of --bf16). The
// values are copied in.
class Bf16Matrix {
 public:
  Bf16Matrix(const float* w, Index n, Index k, Bf16Isa isa);
  Index rows() const { return n_; }
  Index cols() const { return k_; }
  // y (m, n) = x (m, k) Wᵀ + bias (n floats, or nullptr). threads > 1 splits
  // the rows (only outside a parallel region).
  void multiply(const CRef<float>& x, Ref<float> y, const float* bias, int threads = 1) const;

 private:
  Index n_ = 0, k_ = 0;
  Bf16Isa isa_ = Bf16Isa::emulated;
  AlignedVector<std::uint16_t> packed_;  // amx_bf16, avx512_bf16: W's panels in tdpbf16ps's layout
  std::vector<float> values_;            // emulated: W as given, (n, k)
};

}  // namespace zibert
