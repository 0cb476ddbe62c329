// zibert bench: the FLOP count, and the command's report.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/report/bench.hpp"

using namespace zibert;
using namespace zibert::test;

TEST_CASE("bench counts the products of a forward pass by hand", "[bench]") {
  ModelConfig c = model_shape(0, 128, 4, 2, 8, 2, 2, 0.1);
  // per token: q,k,v,out 4·(2·4·4) = 128, up and down 2·(2·4·8) = 128; attention 4·n²·C
  const double layer = 5 * 256 + 4 * 25 * 4, head = 2 * 16 + 2 * 4 * 2;
  CHECK(forward_flops(c, 5, LastLayer::all_rows) == Approx(2 * layer + head));
  // [CLS]-only last layer: k,v for 5 tokens, q and out for one, its attention row, its FFN
  const double last = 5 * (2 * 2 * 4 * 4) + 2 * 16 + 4 * 5 * 4 + 2 * 16 + 2 * (2 * 4 * 8);
  CHECK(forward_flops(c, 5, LastLayer::cls) == Approx(layer + last + head));
  // folded: q, q through the key rows (C² in all), 2 heads' scores and weighted
  // inputs over 5 tokens (2·2·5·4 each), their values, out, FFN
  const double folded = 2 * 16 + 2 * 16 + 2 * (2 * 2 * 5 * 4) + 2 * 16 + 2 * 16 + 2 * (2 * 4 * 8);
  CHECK(forward_flops(c, 5, LastLayer::cls_folded) == Approx(layer + folded + head));
  // Tabulated: the first layer's q,k,v rows (3·(2·4·4) per token) are gathered, not computed...
  CHECK(forward_flops(c, 5, LastLayer::cls_folded, true) == Approx(layer - 5 * 96 + folded + head));
  CHECK(forward_flops(c, 5, LastLayer::all_rows, true) == Approx(2 * layer - 5 * 96 + head));
  // ...unless the first layer is the [CLS]-only last one.
  c.layers = 1;
  CHECK(forward_flops(c, 5, LastLayer::cls_folded, true) == Approx(folded + head));
  c.layers = 2;
  c.tie_qk = true;  // tied models run every row
  CHECK(forward_flops(c, 5, LastLayer::cls) == Approx(forward_flops(c, 5, LastLayer::all_rows)));
  CHECK(forward_flops(c, 5, LastLayer::cls_folded) == Approx(forward_flops(c, 5, LastLayer::all_rows)));
}

TEST_CASE("zibert bench reports throughput and the ceiling as JSON and as a table", "[bench][cli]") {
  const std::string shape = " --layers 1 --heads 2 --dim 16 --ffn 32 --max-len 32 --batch 8 --texts 64"
                            " --seconds 0.2 --ceiling-size 128 --threads 2";
  RunResult r = run_zibert("bench --json" + shape);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["model"]["dim"] == 16);
  CHECK(j["threads"] == 2);
  const double ceiling = j["ceiling"]["gflops"];
  CHECK(ceiling > 0);
  // The ceiling is the faster of zibert's gemm (when native) and Eigen's product.
  CHECK(j["ceiling"]["eigen_gflops"].get<double>() > 0);
  CHECK(ceiling == std::max(j["ceiling"]["eigen_gflops"].get<double>(), j["ceiling"]["gemm_gflops"].get<double>()));
  CHECK((j["ceiling"]["gemm_gflops"].get<double>() > 0) == zibert::gemm_is_native());
  for (const char* phase : {"train", "inference"}) {
    INFO(phase);
    const auto& p = j[phase];
    CHECK(p["steps"].get<int>() >= 3);
    CHECK(p["examples_per_s"].get<double>() > 0);
    CHECK(p["tokens_per_s"].get<double>() > p["examples_per_s"].get<double>());
    CHECK(p["ceiling_fraction"].get<double>() == Approx(p["gflops"].get<double>() / ceiling));
    CHECK(p["peak_rss_mb"].get<double>() > 0);
    CHECK(p["padding"].get<double>() >= 0);
    CHECK(p["padding"].get<double>() < 1);
  }
  r = run_zibert("bench --train-only" + shape);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("training") != std::string::npos);
  CHECK(r.out.find("inference") == std::string::npos);
  CHECK(r.out.find("ceiling") != std::string::npos);
}

TEST_CASE("zibert bench takes texts from a file and rejects bad options", "[bench][cli]") {
  std::string dir = temp_dir();
  write_text(dir + "/d.tsv", "1\t佛跳墙好吃\n0\t今天天气很好\n1\t一坛佛跳墙\n");
  const std::string shape = " --layers 1 --heads 2 --dim 8 --ffn 16 --max-len 16 --seconds 0.1 --ceiling-size 64";
  RunResult r = run_zibert("bench --json --data " + dir + "/d.tsv" + shape);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["model"]["vocab_size"] == 5 + 11);  // the specials and the 11 distinct characters
  CHECK(j["data"].get<std::string>().find("3 texts") != std::string::npos);
  for (const char* bad : {" --lengths 9-3", " --lengths x", " --lengths 1-200", " --heads 3", " --seconds 0",
                          " --train-only --infer-only", " --data /nonexistent.tsv", " --layers 0", " --texts 0",
                          " --dim 99999", " --batch 0", " --seed -1", " --vocab 3"}) {
    INFO(bad);
    r = run_zibert("bench" + shape + bad);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("zibert: error: ", 0) == 0);
  }
}

TEST_CASE("bench counts a masked-LM pass: the last layer and the head on the chosen rows", "[bench][mlm]") {
  ModelConfig c = model_shape(100, 128, 4, 2, 8, 2, 0, 0.1);
  c.task = Task::mlm;
  // every row of the first layer (as above); of the last, keys and values
  // 5·2·2·16 and for 3 chosen rows the query 2·16, attention 4·5·4, output
  // 2·16 and FFN 4·4·8; then the transform 2·4·4 and the decoder 2·4·100
  const double layer = 5 * 256 + 4 * 25 * 4;
  const double last = 5 * 64 + 3 * (32 + 80 + 32 + 128);
  CHECK(mlm_forward_flops(c, 5, 3) == Approx(layer + last + 3 * (2 * 16 + 2 * 4 * 100)));
  CHECK(mlm_forward_flops(c, 5, 0) == Approx(2 * layer));  // nothing chosen: every row
  c.tie_qk = true;  // tied: every row of every layer (Q/V only: 2 projections)
  const double tied_layer = 5 * (2 * 16 * 3 + 4 * 4 * 8) + 4 * 25 * 4;
  CHECK(mlm_forward_flops(c, 5, 3) == Approx(2 * tied_layer + 3 * (2 * 16 + 2 * 4 * 100)));
}

TEST_CASE("zibert bench --mlm reports pretraining throughput", "[bench][cli][mlm]") {
  const std::string shape = " --layers 1 --heads 2 --dim 16 --ffn 32 --max-len 32 --batch 8 --texts 64"
                            " --seconds 0.2 --ceiling-size 128 --threads 2";
  RunResult r = run_zibert("bench --mlm --json" + shape);
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["model"]["task"] == "mlm");
  CHECK(j["batch"] == 8);
  CHECK_FALSE(j.contains("train"));
  REQUIRE(j.contains("pretrain"));
  CHECK(j["pretrain"]["steps"].get<int>() >= 3);
  CHECK(j["pretrain"]["examples_per_s"].get<double>() > 0);
  CHECK(j["pretrain"]["gflops"].get<double>() > 0);
  CHECK(j["pretrain"]["padding"].get<double>() < 0.2);  // packed sequences are nearly full
  r = run_zibert("bench --mlm" + shape);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("pretrain "));
  CHECK(run_zibert("bench --mlm --train-only" + shape).status == 2);
  // Without --batch, pretrain's default batch (train's is 32).
  const std::string unbatched = " --layers 1 --heads 2 --dim 16 --ffn 32 --max-len 32 --texts 64 --seconds 0.2"
                                " --ceiling-size 128 --threads 2 --json";
  r = run_zibert("bench --mlm" + unbatched);
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["batch"] == 64);
  r = run_zibert("bench --train-only" + unbatched);
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["batch"] == 32);
}
