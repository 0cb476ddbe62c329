#include "zibert/base/half.hpp"

#include <cstring>

namespace zibert {

std::uint16_t half_from_float(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, 4);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t a = bits & 0x7FFFFFFFu;  // |x|
  if (a > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // ≥ 65520 (65504 and a half step): infinity
  if (a >= 0x38800000u) {                       // ≥ 2^-14: a normal half
    // Exponent rebiased from 127 to 15, mantissa cut from 23 to 10 bits,
    // rounded to nearest even; a carry may step into the exponent, as it should.
    std::uint32_t h = (a - 0x38000000u) >> 13;
    const std::uint32_t rest = a & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // Below 2^-14: a subnormal half, |x| / 2^-24 rounded to nearest even.
  const std::uint32_t exponent = a >> 23;   // biased; |x| < 2^-25 rounds to zero
  if (exponent < 102) return sign;          // 102: 2^-25, the half step of the smallest subnormal
  const std::uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;  // |x| = mantissa · 2^(exponent - 150)
  const std::uint32_t shift = 126 - exponent;                  // 14..24
  std::uint32_t h = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1u << shift) - 1), half_step = 1u << (shift - 1);
  if (rest > half_step || (rest == half_step && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float float_from_half(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {  // zero or subnormal: mantissa · 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&bits, &magnitude, 4);
    bits |= sign;
  }
  float out = 0;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace zibert
