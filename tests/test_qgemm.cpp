// The int8 products: every kernel against the scalar reference, bit for bit
// (int32 sums are exact and the store's float operations are the same), over
// the edges of both kernels' tiles; and the scalar reference against the
// float product it approximates.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck.hpp"
#include "zibert/base/error.hpp"
#include "zibert/nn/qgemm.hpp"
#include "zibert/nn/quantize_rows.hpp"

using namespace zibert;
using MF = MatR<float>;

namespace {

MF shifted_floats(Index rows, Index cols, std::uint64_t seed, double shift = 0.0) {
  return (test::uniform_matrix(rows, cols, seed).array() + shift).matrix().cast<float>();
}

struct Weights {
  std::vector<std::int8_t> q;
  std::vector<float> scale;
};

Weights quantized(const MF& w) {
  Weights out{std::vector<std::int8_t>(static_cast<std::size_t>(w.size())),
              std::vector<float>(static_cast<std::size_t>(w.rows()))};
  quantize_symmetric(w, out.q.data(), out.scale.data());
  return out;
}

}  // namespace

TEST_CASE("every int8 kernel equals the scalar reference bit for bit at every tile edge", "[qgemm]") {
  std::vector<Int8Isa> paths;
  for (Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx_vnni, Int8Isa::avx512_vnni, Int8Isa::amx_int8})
    if (int8_isa_available(isa)) paths.push_back(isa);
    else WARN("this CPU has no " << int8_isa_name(isa) << ": its kernel is not tested here");
  REQUIRE(int8_isa_available(Int8Isa::scalar));
  std::uint64_t seed = 1;
  int cases = 0;
  // Around the 14- and 6-row tiles, AMX's 16-row tiles and 32-row blocks, the
  // 32- and 16-column panels (and their halves), the 98- and 128-row blocks,
  // depths that are not multiples of 4 or 2, AMX's 64-depth blocks.
  for (Index m : {1, 5, 6, 7, 13, 14, 15, 16, 17, 31, 32, 33, 97, 99, 129, 200})
    for (Index n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 70})
      for (Index k : {1, 2, 3, 4, 5, 63, 64, 65, 130}) {
        const MF x = shifted_floats(m, k, seed++, (m + k) % 3 == 0 ? 0.3 : 0.0);  // skewed rows too
        const Weights w = quantized(shifted_floats(n, k, seed++));
        const MF bias = shifted_floats(1, n, seed++);
        const float* b = (m + n) % 2 ? bias.data() : nullptr;
        MF want(m, n);
        Int8Matrix(w.q.data(), w.scale.data(), n, k, Int8Isa::scalar).multiply(x, want, b);
        for (Int8Isa isa : paths) {
          MF got = MF::Constant(m, n, 7.0f);
          Int8Matrix(w.q.data(), w.scale.data(), n, k, isa).multiply(x, got, b, m > 100 ? 2 : 1);
          INFO(int8_isa_name(isa) << " m=" << m << " n=" << n << " k=" << k);
          REQUIRE(std::memcmp(got.data(), want.data(), sizeof(float) * static_cast<std::size_t>(m * n)) == 0);
          ++cases;
        }
      }
  INFO(cases << " products");
  CHECK((paths.empty() || cases > 0));
}

TEST_CASE("an int8 kernel writes only its block of a strided output", "[qgemm]") {
  const MF x = shifted_floats(20, 33, 3);
  const Weights w = quantized(shifted_floats(45, 33, 4));
  for (Int8Isa isa : kInt8Isas) {
    if (!int8_isa_available(isa)) continue;
    MF big = shifted_floats(40, 80, 5);
    const MF before = big;
    Ref<float> window(big.block(5, 17, 20, 45));
    Int8Matrix(w.q.data(), w.scale.data(), 45, 33, isa).multiply(x, window, nullptr);
    MF outside = big;
    outside.block(5, 17, 20, 45) = before.block(5, 17, 20, 45);
    CHECK(outside == before);
  }
}

TEST_CASE("the int8 product approximates the float product it quantizes", "[qgemm]") {
  const Index m = 40, n = 50, k = 128;
  const MF x = shifted_floats(m, k, 21, 0.2), wf = shifted_floats(n, k, 22), bias = shifted_floats(1, n, 23);
  const Weights w = quantized(wf);
  MF got(m, n);
  Int8Matrix(w.q.data(), w.scale.data(), n, k, int8_best_isa()).multiply(x, got, bias.data());
  MatR<double> want = x.cast<double>() * wf.cast<double>().transpose();
  want.rowwise() += bias.cast<double>().row(0);
  // Each of k terms off by at most half a step of x (range/255) times |w|
  // plus half a step of w (max|w|/127) times |x|: about 1 % of a term.
  const double err = (got.cast<double>() - want).cwiseAbs().maxCoeff();
  const double typical = want.cwiseAbs().mean();
  INFO("max error " << err << ", mean |y| " << typical);
  CHECK(err < 0.05 * typical + 1e-3);
  CHECK(err > 0.0);  // it is an approximation: the test would catch a float path
}

TEST_CASE("quantize_rows keeps zero exact and spans each row's range", "[qgemm]") {
  MF x(3, 5);
  x << -1.0f, 0.0f, 0.5f, 2.0f, 1.0f,  //
      0.0f, 0.0f, 0.0f, 0.0f, 0.0f,    //
      0.25f, 0.5f, 1.0f, 0.75f, 0.3f;
  QuantizedRows q;
  quantize_rows(x, q);
  CHECK(q.ld == 8);
  CHECK(q.scales[0] == Approx(3.0 / 255.0));
  CHECK(q.values[1] == q.zeros[0]);  // x = 0 is the zero point
  CHECK(q.values[0] == 0);
  CHECK(q.values[3] == 255);
  CHECK(q.scales[1] == 1.0f);  // a row of zeros
  CHECK(q.zeros[1] == 0);
  CHECK(q.zeros[2] == 0);       // a positive row starts at 0
  CHECK(q.values[2 * 8 + 2] == 255);
  for (Index i = 0; i < 3; ++i)
    for (Index p = 0; p < 5; ++p)
      CHECK(std::abs((q.values[i * 8 + p] - q.zeros[i]) * q.scales[i] - x(i, p)) <= q.scales[i] / 2 + 1e-6);
}

TEST_CASE("quantize_rows gives the same bytes on every path", "[qgemm]") {
  for (Index k : {1, 7, 8, 15, 16, 17, 100}) {
    const MF x = shifted_floats(9, k, 40 + k, k % 2 ? 0.4 : -0.4);
    QuantizedRows want, got;
    quantize_rows(x, want, Int8Isa::scalar);
    for (Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx_vnni, Int8Isa::avx512_vnni, Int8Isa::amx_int8}) {
      if (!int8_isa_available(isa)) continue;
      quantize_rows(x, got, isa);
      INFO(int8_isa_name(isa) << " k=" << k);
      CHECK(std::equal(want.values.begin(), want.values.begin() + 9 * want.ld, got.values.begin()));
      CHECK(want.scales == got.scales);
      CHECK(want.zeros == got.zeros);
    }
  }
}

TEST_CASE("int8 weights refuse bad scales and depths that could overflow", "[qgemm]") {
  std::vector<std::int8_t> q(8, 1);
  for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
    std::vector<float> s{1.0f, bad};
    CHECK_THROWS_AS(Int8Matrix(q.data(), s.data(), 2, 4, Int8Isa::scalar), Error);
  }
  std::vector<std::int8_t> deep(static_cast<std::size_t>(kInt8MaxDepth + 1), 1);
  float one = 1.0f;
  CHECK_THROWS_AS(Int8Matrix(deep.data(), &one, 1, kInt8MaxDepth + 1, Int8Isa::scalar), Error);
}
