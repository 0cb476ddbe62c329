// The bfloat16 product: rounding to bfloat16, every path against a double
// reference over the rounded operands, rows that do not depend on the thread
// count or their neighbours, and the process-wide precision that routes gemm.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "gradcheck.hpp"
#include "helpers.hpp"
#include "product_check.hpp"
#include "zibert/base/error.hpp"
#include "zibert/nn/gemm_bf16.hpp"

using namespace zibert;
using MF = MatR<float>;

namespace {

MF bf16_test_matrix(Index rows, Index cols, std::uint64_t seed) { return test::uniform_matrix<float>(rows, cols, seed); }

std::vector<Bf16Isa> bf16_paths() {
  std::vector<Bf16Isa> paths;
  for (Bf16Isa isa : kBf16Isas)
    if (bf16_isa_available(isa)) paths.push_back(isa);
  return paths;
}

}  // namespace

TEST_CASE("round_to_bf16 keeps 8 bits of mantissa, to nearest with ties to even", "[gemm_bf16]") {
  CHECK(round_to_bf16(1.0f) == 1.0f);
  CHECK(round_to_bf16(-3.5f) == -3.5f);
  CHECK(round_to_bf16(1.0f + 1.0f / 256) == 1.0f);                       // a tie: to the even 1
  CHECK(round_to_bf16(1.0f + 3.0f / 256) == 1.0f + 4.0f / 256);          // a tie: to the even 1 + 4/256
  CHECK(round_to_bf16(1.0f + 1.0f / 256 + 1.0f / 4096) == 1.0f + 2.0f / 256);  // past the tie: up
  CHECK(round_to_bf16(1.9999999f) == 2.0f);                               // the carry reaches the exponent
  CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));   // above bfloat16's largest
}

TEST_CASE("every bfloat16 path matches a double product of the rounded operands", "[gemm_bf16]") {
  const std::vector<Bf16Isa> paths = bf16_paths();
  REQUIRE(!paths.empty());
  for (Bf16Isa isa : paths) {
    // Around the 16-row tile and its 32-row block (AMX), the 8-row tile
    // (AVX-512 BF16), the 16-column panel and the 32- and 48-column groups,
    // the 32-deep tile row and the 256-deep block; 300 rows reach two threads.
    const double worst = test::worst_product_error(
        {1, 9, 15, 16, 17, 33, 70, 300}, {1, 15, 16, 17, 32, 33, 50}, {1, 31, 32, 33, 100, 300}, 11,
        [isa](Index m, Index n, Index k, GemmOperand a, GemmOperand b, MF& c, bool acc, const float* bias,
              int threads) { gemm_bf16(m, n, k, a, b, c.data(), c.cols(), acc, bias, threads, isa); },
        round_to_bf16);
    INFO("path " << bf16_isa_name(isa));
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("a bfloat16 product's rows do not depend on the threads or the other rows", "[gemm_bf16]") {
  const MF a = bf16_test_matrix(260, 200, 3), w = bf16_test_matrix(70, 200, 4);
  for (Bf16Isa isa : bf16_paths()) {
    INFO("path " << bf16_isa_name(isa));
    MF one(260, 70), two(260, 70), part(9, 70);
    gemm_bf16(260, 70, 200, {a.data(), 200}, {w.data(), 200, true}, one.data(), 70, false, nullptr, 1, isa);
    gemm_bf16(260, 70, 200, {a.data(), 200}, {w.data(), 200, true}, two.data(), 70, false, nullptr, 2, isa);
    gemm_bf16(9, 70, 200, {a.data() + 101 * 200, 200}, {w.data(), 200, true}, part.data(), 70, false, nullptr, 1, isa);
    CHECK(one == two);
    CHECK(part == one.middleRows(101, 9));
  }
}

TEST_CASE("the process's matmul precision routes gemm to the bfloat16 product", "[gemm_bf16]") {
  const MF a = bf16_test_matrix(40, 90, 5), b = bf16_test_matrix(90, 30, 6);
  MF f32(40, 30), routed(40, 30), direct(40, 30);
  REQUIRE(matmul_precision() == MatmulPrecision::float32);
  gemm(a, false, b, false, f32, false);
  set_matmul_precision(MatmulPrecision::bfloat16);
  gemm(a, false, b, false, routed, false);
  set_matmul_precision(MatmulPrecision::float32);
  gemm_bf16(40, 30, 90, {a.data(), 90}, {b.data(), 30}, direct.data(), 30, false, nullptr, 1, bf16_isa());
  CHECK(routed == direct);
  CHECK(routed != f32);  // random operands are not bfloat16 values: the rounding shows
  CHECK((routed - f32).cwiseAbs().maxCoeff() < 0.1f);
}

TEST_CASE("a packed bfloat16 weight gives gemm_bf16's bits", "[gemm_bf16]") {
  const MF x = bf16_test_matrix(75, 130, 21), w = bf16_test_matrix(40, 130, 22);
  const Eigen::RowVectorXf bias = bf16_test_matrix(1, 40, 23);
  for (Bf16Isa isa : bf16_paths()) {
    INFO("path " << bf16_isa_name(isa));
    MF want(75, 40), got(75, 40);
    gemm_bf16(75, 40, 130, {x.data(), 130}, {w.data(), 130, true}, want.data(), 40, false, bias.data(), 2, isa);
    const Bf16Matrix packed(w.data(), 40, 130, isa);
    packed.multiply(x, got, bias.data(), 2);
    CHECK(got == want);
  }
  MF wrong(40, 41);  // 41 outputs for a weight of 40 rows
  CHECK_THROWS_AS(Bf16Matrix(w.data(), 40, 130, Bf16Isa::emulated).multiply(w, wrong, nullptr), Error);
}

TEST_CASE("the commands that run a model take --bf16", "[gemm_bf16][cli][release-only]") {
  const std::string dir = test::temp_dir(), model = std::string(ZIBERT_SOURCE_DIR) + "/models/fotiaoqiang.safetensors";
  const std::string texts = test::write_demo_texts(dir);
  // classify's labels on the demo texts are float32's
  test::classify_same_labels(model, model + " --bf16", texts);
  test::RunResult e = test::run_zibert("eval --bf16 -m " + model + " --data " ZIBERT_SOURCE_DIR "/data/demo.tsv --json");
  REQUIRE(e.status == 0);
  CHECK(nlohmann::json::parse(e.out)["accuracy"].get<double>() == 1.0);
  test::RunResult t = test::run_zibert("train --bf16 -q --data " ZIBERT_SOURCE_DIR "/data/demo.tsv --layers 1 --dim 32 --heads 2 "
                                 "--ffn 64 --epochs 1 --out " + dir + "/m.safetensors");
  CHECK(t.status == 0);
  test::RunResult b = test::run_zibert("bench --bf16 --infer-only --layers 1 --dim 32 --heads 2 --ffn 64 --seconds 0.05 --json");
  REQUIRE(b.status == 0);
  CHECK_THAT(nlohmann::json::parse(b.out)["products"].get<std::string>(), Catch::StartsWith("bfloat16 on "));
  test::RunResult bad = test::run_shell("ZIBERT_BF16_ISA=sse9 " ZIBERT_BIN " classify --bf16 -m " + model + " " + texts);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("choose amx-bf16, avx512-bf16 or emulated"));
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}
