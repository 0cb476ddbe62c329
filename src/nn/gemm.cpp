#include "zibert/nn/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#define ZIBERT_NATIVE_GEMM 1
#include <immintrin.h>
#endif

#include "zibert/base/error.hpp"
#include "zibert/nn/gemm_bf16.hpp"
#include "transpose16.hpp"

namespace zibert {

namespace {

#if defined(ZIBERT_NATIVE_GEMM)

// Row strides at which a row-major A is read in place (the widths C, 3C and F
// of the shipped and common shapes).
constexpr Index kInPlaceLd[] = {64, 128, 192, 256, 384, 512};

// The kernel for AVX-512 (16 floats a vector, 14 x 32 tiles in 28 of the 32
// registers), compiled for that set whatever the build's -march, and chosen
// only on a CPU that has it. Masks select a vector's first n lanes;
// masked-off lanes are neither read nor written.
namespace avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps (`__Y = __Y`, inlined into
// _mm512_shuffle_f32x4) as uninitialized: bug 105593, fixed in GCC 13.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// A build below AVX-512 (-march=x86-64-v3) warns that the kernel's lambdas
// pass __m512 by value; they are inlined inside this file, so no ABI is crossed.
#pragma GCC diagnostic ignored "-Wpsabi"
struct Simd {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr Index kW = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static Mask first(Index n) { return static_cast<Mask>(n >= kW ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static void transpose(V (&r)[16]) { transpose16(r); }
};
constexpr Index kMr = 14;  // rows of a tile: 14 x 2 accumulators of the 32 registers
constexpr Index kMc = 98;  // rows of a packed A block (kMc x kKc) that stays in L2: 7 tiles
#include "gemm_kernel.inc"
#pragma GCC diagnostic pop
#pragma GCC pop_options
}  // namespace avx512

// The same kernel for AVX2 with FMA (8 floats a vector, 6 x 16 tiles in 12
// of the 16 registers).
namespace avx2 {
#pragma GCC push_options
#pragma GCC target("avx2,fma")
struct Simd {
  using V = __m256;
  using Mask = __m256i;
  static constexpr Index kW = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static Mask first(Index n) {
    const int lanes = static_cast<int>(std::clamp<Index>(n, 0, kW));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  // r[i] becomes column i of the 8 x 8 block whose rows were r[0..7].
  static void transpose(V (&r)[8]) {
    V t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int k = 0; k < 2; ++k) {
      u[4 * k + 0] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0x44);
      u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0xEE);
      u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
      u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
      r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
  }
};
constexpr Index kMr = 6;   // rows of a tile: 6 x 2 accumulators of the 16 registers
constexpr Index kMc = 96;  // rows of a packed A block (kMc x kKc) that stays in L2: 16 tiles
#include "gemm_kernel.inc"
#pragma GCC pop_options
}  // namespace avx2

#endif  // ZIBERT_NATIVE_GEMM

// Which product gemm runs, chosen once from the CPU (ZIBERT_FLOAT_ISA=
// avx512|avx2|eigen chooses by hand, for the tests and benchmarks). Every
// one sums each element in the same order, so all give the same bits.
enum class FloatIsa { avx512, avx2, eigen };

FloatIsa detect_float_isa() {
#if defined(ZIBERT_NATIVE_GEMM)
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const FloatIsa best = has512 ? FloatIsa::avx512 : has2 ? FloatIsa::avx2 : FloatIsa::eigen;
  const char* asked = std::getenv("ZIBERT_FLOAT_ISA");
  if (!asked || !*asked) return best;
  const std::string name = asked;
  if (name == "eigen") return FloatIsa::eigen;
  if (name != "avx512" && name != "avx2") throw Error("ZIBERT_FLOAT_ISA=" + name + ": expected avx512, avx2 or eigen");
  if (!(name == "avx512" ? has512 : has2)) throw Error("ZIBERT_FLOAT_ISA=" + name + ": this CPU does not have it");
  return name == "avx512" ? FloatIsa::avx512 : FloatIsa::avx2;
#else
  return FloatIsa::eigen;
#endif
}

FloatIsa float_isa() {
  static const FloatIsa isa = detect_float_isa();
  return isa;
}

}  // namespace

Index gemm_in_place_ld(Index cols) {
#if defined(ZIBERT_NATIVE_GEMM)
  if (float_isa() != FloatIsa::eigen)
    for (Index ld : kInPlaceLd)
      if (ld >= cols) return ld;
#endif
  return cols;
}

bool gemm_is_native() { return float_isa() != FloatIsa::eigen; }

const char* gemm_isa_name() {
  switch (float_isa()) {
    case FloatIsa::avx512: return "avx512";
    case FloatIsa::avx2: return "avx2";
    default: return "eigen";
  }
}

namespace {
std::atomic<MatmulPrecision> process_precision{MatmulPrecision::float32};
}  // namespace

void set_matmul_precision(MatmulPrecision precision) { process_precision = precision; }
MatmulPrecision matmul_precision() { return process_precision.load(std::memory_order_relaxed); }

void gemm(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
          const float* bias, int threads) {
  if (matmul_precision() == MatmulPrecision::bfloat16)
    return gemm_bf16(m, n, k, a, b, c, ldc, accumulate, bias, threads, bf16_isa());
  gemm_f32(m, n, k, a, b, c, ldc, accumulate, bias, threads);
}

void gemm_f32(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
              const float* bias, int threads) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
#if defined(ZIBERT_NATIVE_GEMM)
  if (float_isa() == FloatIsa::avx512)
    return avx512::native_gemm(m, n, k, a, b, c, ldc, accumulate, accumulate ? nullptr : bias, threads);
  if (float_isa() == FloatIsa::avx2)
    return avx2::native_gemm(m, n, k, a, b, c, ldc, accumulate, accumulate ? nullptr : bias, threads);
#endif
  (void)threads;
  using Stride = Eigen::OuterStride<>;
  auto stored = [](const GemmOperand& x, Index rows, Index cols) {  // the matrix as it sits in memory
    return Eigen::Map<const MatR<float>, 0, Stride>(x.data, x.transposed ? cols : rows, x.transposed ? rows : cols,
                                                    Stride(x.ld));
  };
  eigen_matmul<float>(stored(a, m, k), a.transposed, stored(b, k, n), b.transposed,
                      Eigen::Map<MatR<float>, 0, Stride>(c, m, n, Stride(ldc)), accumulate, bias);
}

F32Matrix::F32Matrix(const float* w, Index n, Index k) : n_(n), k_(k), isa_(static_cast<int>(float_isa())) {
  const GemmOperand wt{w, k, true};  // Wᵀ, (k, n)
#if defined(ZIBERT_NATIVE_GEMM)
  if (float_isa() == FloatIsa::avx512) {
    packed_.resize(avx512::packed_b_floats(k, n));
    avx512::pack_b_whole(wt, k, n, packed_.data());
    return;
  }
  if (float_isa() == FloatIsa::avx2) {
    packed_.resize(avx2::packed_b_floats(k, n));
    avx2::pack_b_whole(wt, k, n, packed_.data());
    return;
  }
#endif
  values_.assign(w, w + n * k);
}

void F32Matrix::multiply(const CRef<float>& x, Ref<float> y, const float* bias, int threads) const {
  if (x.cols() != k_ || y.cols() != n_ || y.rows() != x.rows()) throw Error("F32Matrix: the shapes do not match");
  const Index m = x.rows();
  if (m == 0) return;
  const GemmOperand a{x.data(), x.outerStride()};
#if defined(ZIBERT_NATIVE_GEMM)
  if (k_ > 0 && isa_ == static_cast<int>(FloatIsa::avx512))
    return avx512::native_gemm(m, n_, k_, a, {nullptr, k_, true}, y.data(), y.outerStride(), false, bias, threads,
                               packed_.data());
  if (k_ > 0 && isa_ == static_cast<int>(FloatIsa::avx2))
    return avx2::native_gemm(m, n_, k_, a, {nullptr, k_, true}, y.data(), y.outerStride(), false, bias, threads,
                             packed_.data());
#endif
  gemm_f32(m, n_, k_, a, {values_.data(), k_, true}, y.data(), y.outerStride(), false, bias, threads);
}

void gemm(const CRef<float>& a, bool ta, const CRef<float>& b, bool tb, Ref<float> c, bool accumulate,
          const float* bias, int threads) {
  const Index m = ta ? a.cols() : a.rows();
  const Index k = ta ? a.rows() : a.cols();
  const Index n = tb ? b.rows() : b.cols();
  gemm(m, n, k, {a.data(), a.outerStride(), ta}, {b.data(), b.outerStride(), tb}, c.data(), c.outerStride(),
       accumulate, bias, threads);
}

}  // namespace zibert
