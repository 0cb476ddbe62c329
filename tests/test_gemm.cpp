// The float matrix product against a double-precision reference, over every
// transposition, the edges of its tiles and blocks, bias and accumulation.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck.hpp"
#include "product_check.hpp"
#include "zibert/base/error.hpp"
#include "zibert/nn/gemm.hpp"

using namespace zibert;
using MF = MatR<float>;
using MD = MatR<double>;

namespace {

MF random_float(Index rows, Index cols, std::uint64_t seed) { return test::uniform_matrix<float>(rows, cols, seed); }

// Largest |got − want| relative to the size of the terms summed.
double relative_error(const MF& got, const MD& want, Index k) {
  return (got.cast<double>() - want).cwiseAbs().maxCoeff() / static_cast<double>(std::max<Index>(k, 1));
}

}  // namespace

TEST_CASE("gemm matches a double reference for every transposition and edge size", "[gemm]") {
  // Around the 14-row tile, the 32-column panel (and its 16-column half), the
  // 98-row block and the 256-deep block.
  const double worst = test::worst_product_error(
      {1, 13, 14, 15, 99, 200}, {1, 15, 16, 17, 32, 33, 70}, {1, 5, 255, 256, 257, 600}, 1,
      [](Index m, Index n, Index k, GemmOperand a, GemmOperand b, MF& c, bool acc, const float* bias, int threads) {
        gemm(m, n, k, a, b, c.data(), c.cols(), acc, bias, threads);
      },
      [](float x) { return x; });
  INFO("gemm native: " << gemm_is_native());
  CHECK(worst < 1e-6);
}

TEST_CASE("gemm writes only the requested block of a strided output", "[gemm]") {
  // c is a 20 x 45 window into a larger matrix; nothing outside may change.
  MF big = random_float(40, 80, 7);
  const MF before = big;
  MF a = random_float(20, 33, 8), b = random_float(33, 45, 9);
  Ref<float> window(big.block(5, 17, 20, 45));
  gemm(a, false, b, false, window, false);
  MD want = a.cast<double>() * b.cast<double>();
  CHECK(relative_error(big.block(5, 17, 20, 45), want, 33) < 1e-6);
  MF outside = big;
  outside.block(5, 17, 20, 45) = before.block(5, 17, 20, 45);
  CHECK(outside == before);
}

TEST_CASE("gemm gives bit-identical rows whatever the threads or the rows around them", "[gemm]") {
  // The data-parallel trainer and resumed runs rely on each element being
  // summed in one fixed order.
  MF a = random_float(700, 300, 11), b = random_float(300, 130, 12);
  MF one(700, 130), two(700, 130), part(123, 130);
  gemm(a, false, b, false, one, false, nullptr, 1);
  gemm(a, false, b, false, two, false, nullptr, 2);
  CHECK(one == two);
  // Eigen's product (the fallback without AVX-512 or AVX2) blocks by the matrix's size,
  // so there only the thread count is irrelevant (it runs on one).
  if (!gemm_is_native()) return;
  gemm(a.middleRows(301, 123), false, b, false, part, false, nullptr, 1);
  CHECK(part == one.middleRows(301, 123));
}

TEST_CASE("gemm's kernel sums each element in one order, the same bits on AVX-512 and AVX2", "[gemm]") {
  // Element (i, j): blocks of 256 deep; in each, 0 + a0 b0 + a1 b1 + … by fused
  // multiply-adds, then added to what is there (the bias, C when accumulating
  // or after the first block). A scalar sum in that order is the reference:
  // both instruction sets' kernels must equal it bit for bit.
  if (!gemm_is_native()) return;
  std::uint64_t seed = 500;
  for (Index m : {1, 5, 6, 7, 14, 97, 99})
    for (Index n : {1, 7, 8, 9, 16, 17, 33})
      for (Index k : {3, 256, 300})
        for (int variant = 0; variant < 8; ++variant) {
          const bool tb = variant & 1, acc = variant & 2, ta = variant & 4;
          const MF a = ta ? random_float(k, m, seed++) : random_float(m, k, seed++);
          const MF b = tb ? random_float(n, k, seed++) : random_float(k, n, seed++);
          MF c = random_float(m, n, seed++), want = c;
          const Eigen::RowVectorXf bias = random_float(1, n, seed++);
          for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j) {
              for (Index p0 = 0; p0 < k; p0 += 256) {
                float sum = 0;
                for (Index p = p0; p < std::min<Index>(k, p0 + 256); ++p)
                  sum = std::fma(ta ? a(p, i) : a(i, p), tb ? b(j, p) : b(p, j), sum);
                want(i, j) = (acc || p0 > 0) ? want(i, j) + sum : bias(j) + sum;
              }
            }
          gemm(a, ta, b, tb, c, acc, acc ? nullptr : bias.data());
          INFO(m << " x " << n << " x " << k << (ta ? ", A transposed" : "") << (tb ? ", B transposed" : "")
                 << (acc ? ", accumulating" : ""));
          REQUIRE(c == want);
        }
}

TEST_CASE("matmul in double is Eigen's product with bias and accumulation", "[gemm]") {
  MD a = random_float(9, 7, 21).cast<double>(), b = random_float(5, 7, 22).cast<double>();
  MD c = MD::Constant(9, 5, 2.0);
  std::vector<double> bias{1, 2, 3, 4, 5};
  matmul<double>(a, false, b, true, c, false, bias.data());
  MD want = a * b.transpose();
  want.rowwise() += Eigen::Map<Eigen::RowVectorXd>(bias.data(), 5);
  CHECK((c - want).cwiseAbs().maxCoeff() < 1e-12);
  matmul<double>(a, false, b, true, c, true);
  CHECK((c - want - a * b.transpose()).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("gemm is exact for a row-major A of every row stride it reads in place", "[gemm]") {
  // Strides 64 .. 512 have kernels that read A where it is; others are packed.
  std::uint64_t seed = 100;
  for (Index stride : {64, 100, 128, 192, 256, 384, 512}) {
    INFO("row stride " << stride);
    const Index m = 2 * 14 + 5, k = std::min<Index>(stride, 300), n = 40;
    MF wide = random_float(m, stride, seed++), b = random_float(k, n, seed++), c(m, n);
    auto a = wide.leftCols(k);  // rows `stride` floats apart
    gemm(a, false, b, false, c, false);
    MD want = a.cast<double>() * b.cast<double>();
    CHECK(relative_error(c, want, k) < 1e-6);
  }
  // The stride offered for scratch matrices is one of those, or the width.
  for (Index cols : {1, 64, 69, 128, 129, 300, 512, 513}) {
    const Index ld = gemm_in_place_ld(cols);
    CHECK(ld >= cols);
    if (!gemm_is_native() || cols > 512) CHECK(ld == cols);
  }
  if (gemm_is_native()) CHECK(gemm_in_place_ld(69) == 128);
}

TEST_CASE("a packed float32 weight gives gemm_f32's bits", "[gemm]") {
  // Around the tile, the panel and the 256-deep block, with and without a bias,
  // on one thread and on two (which split the rows of a product of >= 196).
  std::uint64_t seed = 900;
  for (Index m : {1, 15, 200, 450})
    for (Index n : {1, 17, 40, 70})
      for (Index k : {1, 130, 256, 600}) {
        const MF x = random_float(m, k, seed++), w = random_float(n, k, seed++);
        const Eigen::RowVectorXf bias = random_float(1, n, seed++);
        const F32Matrix packed(w.data(), n, k);
        for (int threads : {1, 2})
          for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
            MF want(m, n), got(m, n);
            gemm_f32(m, n, k, {x.data(), k}, {w.data(), k, true}, want.data(), n, false, b, threads);
            packed.multiply(x, got, b, threads);
            INFO(m << " x " << n << " x " << k << ", " << threads << " threads" << (b ? ", bias" : ""));
            REQUIRE(got == want);
          }
      }
  const MF w = random_float(40, 130, 1);
  MF wrong(40, 41);  // 41 outputs for a weight of 40 rows
  CHECK_THROWS_AS(F32Matrix(w.data(), 40, 130).multiply(w, wrong, nullptr), Error);
}
