// The 16 x 16 transpose of 32-bit lanes in AVX-512 registers, shared by the
// float product's packing (gemm.cpp) and the bfloat16 product's (gemm_bf16.cpp).
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

namespace zibert {

// GCC 12 reports its own _mm512_undefined_ps (`__Y = __Y`, inlined into
// _mm512_shuffle_f32x4) as uninitialized: bug 105593, fixed in GCC 13.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// r[i] becomes column i of the 16 x 16 block whose rows were r[0..15]:
// pairs of rows interleaved, then groups of four, then 128-bit lanes.
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4k + j], lane L: column 4L + j of rows 4k .. 4k + 3
  for (int k = 0; k < 4; ++k) {
    u[4 * k + 0] = _mm512_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + j] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[12 + j] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}
#pragma GCC diagnostic pop

}  // namespace zibert

#endif
