// IEEE 754 binary16 ("half", safetensors' F16): a float model's weights are
// stored in it to halve the file (zibert quantize --to float16). Written out
// rather than left to _Float16 or F16C, so that every compiler and CPU the
// build allows gives the same bits.
#pragma once
#include <cstdint>

namespace zibert {

inline constexpr float kHalfMax = 65504.0f;  // the largest finite half

// The nearest half, ties to even, as IEEE 754 rounds: values from 65520 up
// become infinity (callers that must stay finite check |x| ≤ kHalfMax
// first); NaN stays NaN (quiet), and the sign of zero is kept.
std::uint16_t half_from_float(float x);
// Exact: every half is a float.
float float_from_half(std::uint16_t h);

}  // namespace zibert
