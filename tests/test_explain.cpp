// zibert explain and plot: attention rows, padded keys, SVG, JSON, golden view.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/report/explain.hpp"
#include "zibert/report/plot.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {
const char* kText = "他们点了一坛佛跳墙";

// Counts <g class="heatmap"> elements after checking the file parses as XML.
int heatmaps_in(const std::string& svg_path) {
  RunResult r = run_shell("python3 -c \"import sys, xml.etree.ElementTree as ET; t = ET.parse(sys.argv[1]); "
                          "print(sum(1 for g in t.iter('{http://www.w3.org/2000/svg}g') if g.get('class') == "
                          "'heatmap'))\" " + svg_path);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return std::stoi(r.out);
}
}  // namespace

TEST_CASE("explain: attention rows sum to 1 and occlusion covers the characters", "[explain]") {
  Model model = tiny_classifier(4);
  Explanation e = explain(model, normalize(kText, Normalization{}));
  REQUIRE(e.tokens.size() == 11);
  CHECK(e.tokens.front() == "[CLS]");
  CHECK(e.tokens[7] == "佛");
  REQUIRE(e.attention.size() == 2);
  for (const auto& layer : e.attention) {
    REQUIRE(layer.size() == 2);
    for (const auto& a : layer)
      for (Index r = 0; r < a.rows(); ++r) CHECK(a.row(r).sum() == Approx(1.0).epsilon(1e-5));
  }
  CHECK(e.occlusion.front() == 0.0f);
  CHECK(e.occlusion.back() == 0.0f);
}

TEST_CASE("padded keys get zero attention in the whole model", "[explain]") {
  Model model = tiny_classifier(4);
  std::vector<std::int32_t> a = with_specials(model.tokenizer.encode("佛跳墙是一道福建名菜"), 16, SpecialIds{});
  std::vector<std::int32_t> b = with_specials(model.tokenizer.encode("一坛"), 16, SpecialIds{});
  ModelCache<float> cache;
  model.net.forward(pack_batch({&a, &b}, {}), cache, nullptr, LastRows::all);
  const Index t = static_cast<Index>(a.size()), heads = model.config.heads;
  for (std::size_t l = 0; l < cache.layers.size(); ++l) {
    MatR<float> probs(heads * t, t);
    model.net.layers()[l].attention.weights(cache.layers[l].attn, 2, t, cache.key_valid.data(), 1, probs);
    for (Index row = 0; row < heads * t; ++row) {  // sequence b's rows
      for (Index k = static_cast<Index>(b.size()); k < t; ++k) CHECK(probs(row, k) == 0.0f);
      CHECK(probs.row(row).sum() == Approx(1.0f).epsilon(1e-5));
    }
  }
}

TEST_CASE("explain JSON round-trips and the CLI prints it", "[explain]") {
  Model model = tiny_classifier(4);
  Explanation e = explain(model, normalize(kText, Normalization{}));
  nlohmann::json j = explanation_json(e, model);
  CHECK(nlohmann::json::parse(j.dump()) == j);
  CHECK(j["attention"].size() == 2);
  CHECK(j["attention"][0].size() == 2);
  CHECK(j["attention"][1][0].size() == 11);
  CHECK(j["tokens"].size() == 11);

  std::string dir = temp_dir();
  save_model(dir + "/tiny.safetensors", model);
  RunResult r = run_zibert("explain --json -m " + dir + "/tiny.safetensors " + kText);
  REQUIRE(r.status == 0);
  nlohmann::json cli = nlohmann::json::parse(r.out);
  CHECK(cli["tokens"] == j["tokens"]);
  CHECK(cli["label"] == j["label"]);
}

TEST_CASE("explain SVG is XML with one heatmap per layer and head", "[explain]") {
  std::string dir = temp_dir();
  save_model(dir + "/tiny.safetensors", tiny_classifier(4));
  RunResult r = run_zibert("explain -m " + dir + "/tiny.safetensors --svg " + dir + "/a.svg \"" + kText + " & <b>\"");
  REQUIRE(r.status == 0);
  CHECK(heatmaps_in(dir + "/a.svg") == 4);
  std::string svg = read_text(dir + "/a.svg");
  CHECK_THAT(svg, Catch::Contains("cls-row") && Catch::Contains("colour-bar") && Catch::Contains("Noto Sans CJK SC") &&
                      Catch::Contains("&amp; &lt;b&gt;"));
  // The shipped model: 2 layers × 4 heads.
  RunResult s = run_shell("env -u ZIBERT_MODEL " ZIBERT_BIN " explain --svg " + dir + "/b.svg " + kText);
  REQUIRE(s.status == 0);
  CHECK(heatmaps_in(dir + "/b.svg") == 8);
}

TEST_CASE("explain terminal view without colour matches the golden output", "[explain]") {
  std::string dir = temp_dir();
  Model model = tiny_classifier(4);
  for (float& w : model.net.params()) w *= 25.0f;  // weights with std 0.5: attention that is not uniform
  save_model(dir + "/tiny.safetensors", model);
  RunResult r = run_zibert("explain -m " + dir + "/tiny.safetensors " + kText);
  REQUIRE(r.status == 0);
  // ZIBERT_UPDATE_GOLDEN=1 rewrites the golden file after a deliberate change.
  if (std::getenv("ZIBERT_UPDATE_GOLDEN")) write_text(ZIBERT_TEST_DATA "/explain_golden.txt", r.out);
  CHECK(r.out == read_text(ZIBERT_TEST_DATA "/explain_golden.txt"));
  CHECK(r.out.find('\033') == std::string::npos);  // no colour when stdout is not a terminal
}

TEST_CASE("train --log writes one record per epoch and zibert plot draws them", "[explain][plot]") {
  std::string dir = temp_dir();
  std::string data;
  for (int i = 0; i < 40; ++i) data += std::string(i % 2 ? "1\t他们点了佛跳墙" : "0\t狗急跳墙") + std::to_string(i) + "\n";
  write_text(dir + "/d.tsv", data);
  RunResult t = run_zibert("train -q --data " + dir + "/d.tsv --out " + dir + "/m.safetensors --epochs 3 --dim 16 "
                           "--heads 2 --ffn 32 --max-len 32 --log " + dir + "/log.jsonl");
  REQUIRE(t.status == 0);
  std::vector<std::string> lines = lines_of(read_text(dir + "/log.jsonl"));
  REQUIRE(lines.size() == 3);
  for (const auto& line : lines) {
    nlohmann::json rec = nlohmann::json::parse(line);
    for (const char* key : {"epoch", "step", "train_loss", "dev_loss", "dev_accuracy", "dev_macro_f1", "lr",
                            "examples_per_s"})
      CHECK(rec.contains(key));
  }
  RunResult p = run_zibert("plot " + dir + "/log.jsonl --svg " + dir + "/curves.svg");
  REQUIRE(p.status == 0);
  RunResult x = run_shell("python3 -c \"import sys, xml.etree.ElementTree as ET; t = ET.parse(sys.argv[1]); "
                          "ns='{http://www.w3.org/2000/svg}'; print(sum(1 for e in t.iter(ns+'polyline')), "
                          "sum(1 for e in t.iter(ns+'g') if e.get('class') == 'legend'))\" " + dir + "/curves.svg");
  CHECK(x.out == "4 4\n");
  write_text(dir + "/bad.jsonl", "{\"step\": 1}\nnot json\n");
  RunResult bad = run_zibert("plot " + dir + "/bad.jsonl --svg " + dir + "/c.svg");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::StartsWith("zibert: error: " + dir + "/bad.jsonl:2: not a JSON record"));
}

TEST_CASE("plot ticks are round numbers covering the range", "[plot]") {
  std::vector<double> unit = nice_ticks(0, 1, 5);
  REQUIRE(unit.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(unit[i] == Approx(0.2 * i).margin(1e-12));
  std::vector<double> t = nice_ticks(0, 15980, 6);
  CHECK(t.front() == 0);
  CHECK(t.back() <= 15980);
  CHECK(t.size() >= 4);
}

TEST_CASE("a long text is explained on the window that decided it", "[explain]") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "今天的午饭是番茄炒蛋";
  text += "年夜饭的压轴菜是佛跳墙";
  for (int i = 0; i < 30; ++i) text += "今天的午饭是番茄炒蛋";
  RunResult r = run_shell("env -u ZIBERT_MODEL " ZIBERT_BIN " explain --json \"" + text + "\"");
  REQUIRE(r.status == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["label"] == "1");
  std::int64_t offset = j["window_offset"];
  CHECK(offset > 0);
  CHECK(offset <= 1008);  // the window holds 佛 (character 1008)
  std::vector<std::string> tokens = j["tokens"];
  CHECK(std::find(tokens.begin(), tokens.end(), "佛") != tokens.end());
}
