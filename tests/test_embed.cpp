// zibert embed: one vector per line, equal to the training pass's states.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/infer/embedder.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/nn/gemm.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// The training pass's last-layer rows (T, C) of one window, every row computed.
MatR<float> last_layer(const Model& model, const std::vector<std::int32_t>& ids) {
  const std::vector<std::int32_t> window = with_specials(ids, model.config.max_len, SpecialIds{});
  ModelCache<float> cache;
  model.net.forward(pack_batch({&window}, {}), cache, nullptr, LastRows::all);
  const Index t = static_cast<Index>(window.size()), c = model.config.dim;
  return CMatMap<float>(cache.hidden.data.data() + model.config.layers * t * c, t, c);
}

}  // namespace

TEST_CASE("embed's vectors are the mean or [CLS] of the training pass's last layer", "[embed]") {
  Model model = tiny_classifier(5);
  for (float& w : model.net.params()) w *= 10.0f;
  const std::vector<std::int32_t> ids = model.tokenizer.encode("他们点了一坛佛跳墙");
  const MatR<float> rows = last_layer(model, ids);
  Embedder mean(model, Pool::mean), cls(model, Pool::cls);
  const std::vector<float> m = mean.embed_ids({ids}), c = cls.embed_ids({ids});
  REQUIRE(static_cast<Index>(m.size()) == model.config.dim);
  const Eigen::RowVectorXf expected = rows.colwise().mean();
  for (Index j = 0; j < model.config.dim; ++j) {
    CHECK(m[j] == Approx(expected(j)).margin(1e-5));
    CHECK(c[j] == Approx(rows(0, j)).margin(1e-5));
  }
}

TEST_CASE("a text's vector does not depend on the texts embedded with it", "[embed]") {
  // The shipped model (64 wide): Eigen's colwise().sum() / n of a row block
  // once grouped the additions by the size of the whole pass.
  for (Model model : {tiny_classifier(5), load_model(ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors")}) {
    const std::vector<std::int32_t> ids = model.tokenizer.encode("他们点了一坛佛跳墙，味道不错");
    Embedder mean(model, Pool::mean);
    const std::vector<float> m = mean.embed_ids({ids});
    // With others of its length in one pass (more rows), or after a shorter one.
    for (const std::vector<std::vector<std::int32_t>>& texts :
         {std::vector<std::vector<std::int32_t>>{model.tokenizer.encode("一坛"), ids, {}},
          std::vector<std::vector<std::int32_t>>{ids, ids, ids},
          std::vector<std::vector<std::int32_t>>{ids, ids, model.tokenizer.encode("他们点了一坛佛跳墙，味道不"), ids}}) {
      const std::vector<float> together = mean.embed_ids(texts);
      const auto dim = static_cast<std::size_t>(model.config.dim);
      for (std::size_t t = 0; t < texts.size(); ++t) {
        if (texts[t] != ids) continue;
        for (std::size_t j = 0; j < dim; ++j) {
          if (gemm_is_native())
            CHECK(together[t * dim + j] == m[j]);
          else
            CHECK(together[t * dim + j] == Approx(m[j]).margin(1e-6));
        }
      }
    }
  }
}

TEST_CASE("a long text's vector averages its windows, weighted by their tokens", "[embed]") {
  Model model = tiny_classifier(6);
  const std::int64_t width = model.config.max_len - 2;
  const std::vector<std::int32_t> ids = model.tokenizer.encode("他们点了一坛佛跳墙，说是镇店之宝。狗急跳墙，他终于说出了实话。");
  const std::vector<std::int64_t> starts = window_starts(static_cast<std::int64_t>(ids.size()), width);
  REQUIRE(starts.size() >= 2);
  Embedder mean(model, Pool::mean);
  const Index dim = model.config.dim;
  Eigen::RowVectorXd expected = Eigen::RowVectorXd::Zero(dim);
  double tokens = 0;
  for (std::int64_t s : starts) {
    const std::int64_t end = std::min<std::int64_t>(s + width, static_cast<std::int64_t>(ids.size()));
    const std::vector<float> v = mean.embed_ids({std::vector<std::int32_t>(ids.begin() + s, ids.begin() + end)});
    const double rows = double(end - s + 2);
    for (Index j = 0; j < dim; ++j) expected(j) += rows * v[j];
    tokens += rows;
  }
  const std::vector<float> whole = mean.embed_ids({ids});
  for (Index j = 0; j < dim; ++j) CHECK(whole[j] == Approx(expected(j) / tokens).margin(1e-5));
}

TEST_CASE("zibert embed: one record per input line in TSV, JSONL or raw float32", "[embed][cli]") {
  const std::string dir = temp_dir(), model = dir + "/m.safetensors";
  save_model(model, tiny_classifier(3));
  write_text(dir + "/in.txt", "他们点了一坛佛跳墙\n\n狗急跳墙\r\nlast line without newline");
  RunResult tsv = run_zibert("embed -m " + model + " " + dir + "/in.txt");
  REQUIRE(tsv.status == 0);
  const std::vector<std::string> lines = lines_of(tsv.out);
  REQUIRE(lines.size() == 4);
  for (const std::string& l : lines) CHECK(std::count(l.begin(), l.end(), '\t') == 7);  // dim 8
  RunResult cls = run_zibert("embed --pool cls -m " + model + " " + dir + "/in.txt");
  REQUIRE(cls.status == 0);
  CHECK(cls.out != tsv.out);
  RunResult jsonl = run_zibert("embed --format jsonl -m " + model + " " + dir + "/in.txt " + dir + "/in.txt");
  REQUIRE(jsonl.status == 0);
  const std::vector<std::string> records = lines_of(jsonl.out);
  REQUIRE(records.size() == 8);
  const nlohmann::json third = nlohmann::json::parse(records[2]);
  CHECK(third["line"] == 3);
  CHECK(third["file"] == dir + "/in.txt");
  CHECK(third["vector"].size() == 8);
  CHECK(std::stod(lines[2].substr(0, lines[2].find('\t'))) == Approx(third["vector"][0].get<double>()).margin(1e-5));
  RunResult f32 = run_zibert("embed --format f32 -m " + model + " " + dir + "/in.txt");
  REQUIRE(f32.status == 0);
  CHECK(f32.out.size() == 4 * 8 * sizeof(float));
  SECTION("bad input is an error naming file, line and byte, after the lines before it") {
    write_text(dir + "/bad.txt", "佛跳墙\n好\xFF吃\n");
    RunResult bad = run_zibert("embed -m " + model + " " + dir + "/bad.txt");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains(dir + "/bad.txt:2:4: invalid UTF-8"));
    CHECK(lines_of(bad.out).size() == 1);
    CHECK(run_zibert("embed --pool max -m " + model + " " + dir + "/in.txt").status == 2);
    CHECK(run_zibert("embed --invalid replace -m " + model + " " + dir + "/bad.txt").status == 0);
  }
}
